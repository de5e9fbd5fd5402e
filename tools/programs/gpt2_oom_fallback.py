"""The model of ``gpt2_train_step.py`` in a program that meets a real
out-of-memory error and recovers from it, as programs that search for their
batch size do.

Step 0 trains on a batch of 4 sequences.  Step 1 first tries a batch of
2**24 sequences: its token embedding alone would take 512 GiB, more than
any GPU this runs on has, so the caching allocator raises
``torch.OutOfMemoryError`` inside ``aten::embedding``.  The program catches
it, frees what the failed attempt made, and runs step 1 as gradient
accumulation over 4 micro-batches of 4 sequences instead.  Each step ends
by reading the loss back (``loss.item()``).

Recorded, the failed ``aten::embedding`` is a launch whose outcome failed
with kind ``oom`` (``tools/record_torch.py``): a real failure in the log,
not an injected one.  It was to write only its own output, which was never
made, so it taints nothing, and every later read is clean: the replay
shows that catching this error and going on is sound.

Runs on CUDA when available, else on the CPU (for testing the recorder),
where the 2**24-sequence attempt is skipped: a CPU would try to allocate it
from host memory, which may succeed very slowly.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_train_step as train  # noqa: E402  (the model, not its training)

HUGE_BATCH, MICRO_BATCHES = 2 ** 24, 4


def step_on(model, opt, batch, dev):
    """One AdamW step on `batch` random sequences; returns the loss."""
    data = torch.randint(0, train.VOCAB, (batch, train.SEQ + 1), device=dev)
    loss = model(data[:, :-1], data[:, 1:])
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


def accumulated_step(model, opt, dev):
    """One AdamW step over MICRO_BATCHES micro-batches of BATCH sequences,
    their gradients accumulated; returns the mean loss."""
    total = torch.zeros((), device=dev)
    for _ in range(MICRO_BATCHES):
        data = torch.randint(0, train.VOCAB, (train.BATCH, train.SEQ + 1), device=dev)
        loss = model(data[:, :-1], data[:, 1:]) / MICRO_BATCHES
        loss.backward()
        total += loss.detach()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return total


def main():
    cuda = torch.cuda.is_available()
    dev = "cuda" if cuda else "cpu"
    model, opt = train.seeded_model_and_optimizer(dev)
    print(f"gpt2_oom_fallback: batch {train.BATCH}, then {HUGE_BATCH} (expected to run out "
          f"of memory), then {MICRO_BATCHES} micro-batches of {train.BATCH}; device {dev}")
    loss = step_on(model, opt, train.BATCH, dev)
    print(f"gpt2_oom_fallback: step 0 loss {loss.item():.4f}")
    if cuda:
        try:
            step_on(model, opt, HUGE_BATCH, dev)
            print("gpt2_oom_fallback: the huge batch fit; no error to record")
        except torch.OutOfMemoryError as e:
            first = str(e).splitlines()[0]
            print(f"gpt2_oom_fallback: step 1 ran out of memory ({first[:80]}...); "
                  "falling back to micro-batches")
            opt.zero_grad(set_to_none=True)
            torch.cuda.empty_cache()
    loss = accumulated_step(model, opt, dev)
    print(f"gpt2_oom_fallback: step 1 loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
