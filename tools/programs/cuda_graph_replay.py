"""A captured CUDA graph replayed five times, then a ``.item()`` read.

An MLP forward pass and a scalar loss are captured once with
``torch.cuda.graph`` (after a warm-up on a side stream, as PyTorch's docs
advise), then replayed five times, each time after copying a fresh batch from
pinned host memory into the static input.  The static loss, written by the
graph, is read back to the host at the end.

In the log: warm-up launches on stream 1, ``capture_begin`` and the captured
launches on the capture stream, ``capture_end`` with graph 1, then five
``host_write`` + ``replay`` pairs and a final ``read`` of the loss.

Without CUDA the program runs the same function eagerly on the CPU (for
testing the recorder only; no capture events then).
"""

import torch
import torch.nn as nn

BATCH, D_IN, HIDDEN, REPLAYS = 64, 256, 1024, 5


def main():
    cuda = torch.cuda.is_available()
    dev = "cuda" if cuda else "cpu"
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(D_IN, HIDDEN), nn.GELU(), nn.Linear(HIDDEN, D_IN)).to(dev)
    model.eval()
    n_params = sum(p.numel() for p in model.parameters())
    print(f"cuda_graph_replay: params {n_params} (MLP {D_IN}-{HIDDEN}-{D_IN}, batch {BATCH}, "
          f"{REPLAYS} replays), device {dev}")
    static_x = torch.zeros(BATCH, D_IN, device=dev)
    host = [torch.randn(BATCH, D_IN) for _ in range(REPLAYS)]

    def step():
        out = model(static_x)
        return out, (out - static_x).square().mean()

    with torch.no_grad():
        if cuda:
            host = [h.pin_memory() for h in host]
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    step()
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_out, static_loss = step()
            for i in range(REPLAYS):
                static_x.copy_(host[i], non_blocking=True)
                graph.replay()
        else:
            for i in range(REPLAYS):
                static_x.copy_(host[i])
                static_out, static_loss = step()
    print(f"cuda_graph_replay: loss after {REPLAYS} replays {static_loss.item():.6f}")


if __name__ == "__main__":
    main()
