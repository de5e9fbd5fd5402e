"""Two streams: a side stream copies the next batch host->device while the
default stream trains on the current one.

The copy runs under ``torch.cuda.stream(side)`` from pinned host memory, the
default stream waits for it (``wait_stream``) before using the batch, and
``record_stream`` tells the allocator the batch is used on the default stream.
In the log the batches are allocations made on the side stream (stream 1),
filled by ``host_write`` events, and read by launches on stream 0.  The loss
is read back to the host after the last optimizer step.

Without CUDA the program runs on the CPU with no side stream (for testing the
recorder only).
"""

import contextlib

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, D_IN, HIDDEN, CLASSES, STEPS = 32, 256, 512, 10, 3


def main():
    cuda = torch.cuda.is_available()
    dev = "cuda" if cuda else "cpu"
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(D_IN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, CLASSES)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"two_streams: params {n_params} (MLP {D_IN}-{HIDDEN}-{CLASSES}, batch {BATCH}, "
          f"steps {STEPS}, SGD momentum), device {dev}")

    host_x = [torch.randn(BATCH, D_IN) for _ in range(STEPS)]
    host_y = [torch.randint(0, CLASSES, (BATCH,)) for _ in range(STEPS)]
    if cuda:
        host_x = [t.pin_memory() for t in host_x]
        host_y = [t.pin_memory() for t in host_y]
    side = torch.cuda.Stream() if cuda else None
    main_stream = torch.cuda.current_stream() if cuda else None

    def prefetch(i):
        ctx = torch.cuda.stream(side) if cuda else contextlib.nullcontext()
        with ctx:
            return (host_x[i].to(dev, non_blocking=True),
                    host_y[i].to(dev, non_blocking=True))

    nxt = prefetch(0)
    loss = None
    for step in range(STEPS):
        if cuda:
            main_stream.wait_stream(side)
        x, y = nxt
        if cuda:
            x.record_stream(main_stream)
            y.record_stream(main_stream)
        if step + 1 < STEPS:
            nxt = prefetch(step + 1)  # overlaps with the compute below
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    print(f"two_streams: final loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
