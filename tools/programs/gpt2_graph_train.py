"""GPT-2's whole training step captured into one CUDA graph, then replayed.

The model of ``gpt2_train_step.py`` (same sizes, same initialisation), trained
the way a loop that has settled its shapes trains: forward, loss, backward and
the AdamW step are captured once into a CUDA graph, and every later step is a
``host_write`` of a fresh batch of tokens into the static input followed by a
``replay`` of the graph.  AdamW is made ``capturable`` (its step counts live on
the device, so the update can be captured).  Before the capture, three eager
steps on a side stream let the caching allocator and AdamW's lazy state
settle, as PyTorch's notes on whole-network capture advise; the gradients are
then set to ``None`` so that the capture allocates them in the graph's pool.
After the last replay the loss, written only by the graph, is read back.

In the log: the warm-up's launches on stream 1, ``capture_begin`` and the
captured step's launches on the capture stream, ``capture_end`` with graph 1,
then ``REPLAYS`` pairs of ``host_write`` and ``replay``, and the ``read`` of
the loss.  This is the every-step case that ``World::replay`` is made for:
one replay settles every write the step makes.

Without CUDA the program runs the same steps eagerly on the CPU (for testing
the recorder only; no capture events then).
"""

import torch

from gpt2_train_step import BATCH, GPT, SEQ, VOCAB

WARMUP, REPLAYS = 3, 20


def main():
    cuda = torch.cuda.is_available()
    dev = "cuda" if cuda else "cpu"
    torch.manual_seed(0)
    model = GPT().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, capturable=cuda)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"gpt2_graph_train: params {n_params} (batch {BATCH}, seq {SEQ}, vocab {VOCAB}; "
          f"{WARMUP} warm-up steps, {REPLAYS} replays, AdamW capturable), device {dev}")
    static_data = torch.zeros(BATCH, SEQ + 1, dtype=torch.long, device=dev)
    batches = [torch.randint(0, VOCAB, (BATCH, SEQ + 1)) for _ in range(REPLAYS)]

    def step():
        idx, targets = static_data[:, :-1], static_data[:, 1:]
        loss = model(idx, targets)
        loss.backward()
        opt.step()
        return loss

    if not cuda:
        for data in batches:
            static_data.copy_(data)
            loss = step()
            opt.zero_grad(set_to_none=True)
        print(f"gpt2_graph_train: loss after {REPLAYS} steps {loss.item():.4f}")
        return

    batches = [b.pin_memory() for b in batches]
    static_data.copy_(batches[0], non_blocking=True)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(WARMUP):
            step()
            opt.zero_grad(set_to_none=True)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_loss = step()
    for data in batches:
        static_data.copy_(data, non_blocking=True)
        graph.replay()
    print(f"gpt2_graph_train: loss after {REPLAYS} replays {static_loss.item():.4f}")


if __name__ == "__main__":
    main()
