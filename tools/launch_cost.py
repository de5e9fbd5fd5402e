#!/usr/bin/env python3
"""What a launch costs the host on this machine's GPU: the figures the docs
set the world's own cost beside (``docs/recording.md``, *Why launch-time
checks must be cheap*).

Needs a CUDA GPU and PyTorch; not run by CI.  Prints, each the median of
50 rounds of 400 launches (after 10 rounds of warm-up), the host's time a
launch until it returns:

* an empty kernel launched through the CUDA driver (``cuLaunchKernel``,
  called through ``ctypes``), and beside it the same call with no kernel,
  which the driver refuses at once: what ``ctypes`` (eleven arguments) and
  the driver's first checks cost of the launch;
* ``torch.cuda._sleep(0)``: a kernel launched from PyTorch's C++ with no
  operator dispatch;
* an eager PyTorch operator on a one-element tensor (``add_``): dispatch
  and launch;

and, for a CUDA graph of 100 and of 1,000 such ``add_`` nodes, the host's
time in ``replay()`` and the time to the graph's end, a node.

Run: ``python3 tools/launch_cost.py``.
"""

import ctypes
import statistics
import time

import torch

ROUNDS, WARM, LAUNCHES = 60, 10, 400


def per_launch(call):
    """Median, lowest and highest host time a call (µs) over the rounds."""
    times = []
    for _ in range(ROUNDS):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(LAUNCHES):
            call()
        times.append((time.perf_counter() - start) / LAUNCHES * 1e6)
    times = times[WARM:]
    return statistics.median(times), min(times), max(times)


def driver_calls():
    """An empty kernel's launch through the driver, and the same call with
    no kernel (refused at once)."""
    cu = ctypes.CDLL("libcuda.so.1")

    def checked(result, what):
        if result != 0:
            raise SystemExit(f"{what} returned CUDA error {result}")

    checked(cu.cuInit(0), "cuInit")
    # The primary context, which PyTorch has made current on device 0.
    ctx = ctypes.c_void_p()
    checked(cu.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
    ptx = b".version 7.0\n.target sm_50\n.address_size 64\n.visible .entry noop()\n{\n ret;\n}\n\0"
    module, kernel = ctypes.c_void_p(), ctypes.c_void_p()
    checked(cu.cuModuleLoadData(ctypes.byref(module), ptx), "cuModuleLoadData")
    checked(cu.cuModuleGetFunction(ctypes.byref(kernel), module, b"noop"), "cuModuleGetFunction")
    launch = cu.cuLaunchKernel
    launch.argtypes = ([ctypes.c_void_p] + [ctypes.c_uint] * 7
                       + [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p])
    checked(launch(kernel, 1, 1, 1, 1, 1, 1, 0, None, None, None), "cuLaunchKernel")
    checked(cu.cuCtxSynchronize(), "cuCtxSynchronize")
    if launch(None, 1, 1, 1, 1, 1, 1, 0, None, None, None) == 0:
        raise SystemExit("cuLaunchKernel of no kernel was not refused")
    return (lambda: launch(kernel, 1, 1, 1, 1, 1, 1, 0, None, None, None),
            lambda: launch(None, 1, 1, 1, 1, 1, 1, 0, None, None, None))


def graph_of(x, nodes):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            x.add_(1)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(nodes):
            x.add_(1)
    return graph


def main():
    x = torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    print(f"PyTorch {torch.__version__}, {torch.cuda.get_device_name(0)}")
    launch, refused = driver_calls()
    for name, fn in (("driver: cuLaunchKernel of an empty kernel, through ctypes", launch),
                     ("driver: the same call with no kernel, refused", refused),
                     ("PyTorch: torch.cuda._sleep(0), no dispatch", lambda: torch.cuda._sleep(0)),
                     ("PyTorch: eager add_ on one element, dispatch and launch", lambda: x.add_(1))):
        median, low, high = per_launch(fn)
        print(f"{name}: {median:.2f} µs a call (lowest {low:.2f}, highest {high:.2f})")
    for nodes in (100, 1000):
        graph = graph_of(x, nodes)
        host, end = [], []
        for _ in range(ROUNDS):
            torch.cuda.synchronize()
            start = time.perf_counter()
            graph.replay()
            host.append((time.perf_counter() - start) / nodes * 1e6)
            torch.cuda.synchronize()
            end.append((time.perf_counter() - start) / nodes * 1e6)
        print(f"graph of {nodes} add_ nodes: replay() {statistics.median(host[WARM:]):.3f} µs "
              f"a node on the host, {statistics.median(end[WARM:]):.3f} µs a node to its end")


if __name__ == "__main__":
    main()
