"""The model of ``gpt2_train_step.py`` fed a token its vocabulary does not
have, as a tokenizer one entry larger than the model's would: a real
device-side assert, which loses the CUDA context.

Step 0 trains on a good batch and reads its loss back.  Step 1's batch holds
the token id ``VOCAB``: the embedding's index kernel asserts on the GPU.
CUDA reports the error to the host asynchronously, at some later call, and
from then on every call fails.  The program catches the error, then tries
to save its weights to the host (``weight.cpu()``), which fails with the
same error.

Recorded (``tools/record_torch.py``), the first call that raises writes a
``device_fault`` (kind ``device``) and its own launch with a failed outcome;
every later call that raises is a failed launch too, and the host's attempt
to copy the weights is a ``read``, so the replay answers it with the fault.
Step 0's loss read, before the fault, is clean.

Runs on CUDA when available.  On the CPU (for testing the recorder) the bad
token raises an ``IndexError`` in the embedding at once, a failed launch
and no device fault.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_train_step as train  # noqa: E402  (the model, not its training)


def main():
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    model, opt = train.seeded_model_and_optimizer(dev)
    print(f"gpt2_device_assert: vocabulary {train.VOCAB}, step 1 feeds token {train.VOCAB}; "
          f"device {dev}")
    for step in range(2):
        data = torch.randint(0, train.VOCAB, (train.BATCH, train.SEQ + 1), device=dev)
        if step == 1:
            data[0, 5] = train.VOCAB  # one past the end of the embedding
        try:
            loss = model(data[:, :-1], data[:, 1:])
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            print(f"gpt2_device_assert: step {step} loss {loss.item():.4f}")
        except (RuntimeError, IndexError) as e:
            print(f"gpt2_device_assert: step {step} failed: {str(e).splitlines()[0]}")
            break
    try:
        saved = model.wte.weight.detach().cpu()
        print(f"gpt2_device_assert: saved the embedding, {saved.numel()} values")
    except RuntimeError as e:
        print(f"gpt2_device_assert: could not save the embedding: {str(e).splitlines()[0]}")


if __name__ == "__main__":
    main()
