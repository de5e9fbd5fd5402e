# Measurement-only probe (not kept): host time of a launch, eager and in a graph.
import statistics, time, torch
dev = torch.device("cuda")
print(torch.__version__, torch.cuda.get_device_name(0))
x = torch.zeros(1, device=dev)

def batches(launch, n=400, rounds=50):
    """Per-launch host time (enqueue only) and wall time (to completion)."""
    host, wall = [], []
    for r in range(rounds + 5):
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(n):
            launch()
        h = time.perf_counter() - t
        torch.cuda.synchronize()
        w = time.perf_counter() - t
        if r >= 5:
            host.append(h / n * 1e6); wall.append(w / n * 1e6)
    return statistics.median(host), min(host), max(host), statistics.median(wall)

for name, fn in [("eager add_ (dispatcher + launch)", lambda: x.add_(1)),
                 ("torch.cuda._sleep(0) (pybind + launch, no dispatcher)", lambda: torch.cuda._sleep(0))]:
    m, lo, hi, w = batches(fn)
    print(f"{name}: host {m:.2f} us/launch (min {lo:.2f}, max {hi:.2f}); to completion {w:.2f} us")

# A graph of N tiny kernels, replayed: host time of replay() and time to completion, per node.
for nodes in (100, 1000):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3): x.add_(1)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(nodes): x.add_(1)
    host, wall = [], []
    for r in range(60):
        torch.cuda.synchronize()
        t = time.perf_counter(); g.replay(); h = time.perf_counter() - t
        torch.cuda.synchronize(); w = time.perf_counter() - t
        if r >= 10:
            host.append(h / nodes * 1e6); wall.append(w / nodes * 1e6)
    print(f"graph of {nodes} add_ nodes: replay() host {statistics.median(host):.3f} us/node, "
          f"to completion {statistics.median(wall):.3f} us/node (min {min(wall):.3f})")
