"""The model of ``gpt2_train_step.py`` trained in mixed precision with a
gradient scaler: two AdamW steps under ``torch.autocast`` (float16), the loss
scaled before the backward pass and the gradients unscaled and checked for
infinities before the update, as ``torch.amp.GradScaler`` does.

The scaler reads its check back to the host in the middle of each step (its
``step`` skips the optimizer when some gradient overflowed), so the log has a
``read`` of that 4-byte flag before the update, and then the step's loss read
after it: ``taintworld replay --fail-launch N`` with N in the backward pass
says that the overflow check itself read garbage, before the optimizer ran.

Runs on CUDA when available, else on the CPU (for testing the recorder), where
autocast uses bfloat16 and the scaler is switched off (no check, no read).
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_train_step as train  # noqa: E402  (the model, not its training)


def main():
    cuda = torch.cuda.is_available()
    dev = "cuda" if cuda else "cpu"
    model, opt = train.seeded_model_and_optimizer(dev)
    scaler = torch.amp.GradScaler(dev, enabled=cuda)
    half = torch.float16 if cuda else torch.bfloat16
    n_params = sum(p.numel() for p in model.parameters())
    print(f"gpt2_amp_step: params {n_params} (layers {train.N_LAYER}, d_model {train.D_MODEL}, "
          f"seq {train.SEQ}, batch {train.BATCH}, steps {train.STEPS}, AdamW, autocast "
          f"{half}, gradient scaler {'on' if cuda else 'off'}), device {dev}")
    for step in range(train.STEPS):
        data = torch.randint(0, train.VOCAB, (train.BATCH, train.SEQ + 1), device=dev)
        idx, targets = data[:, :-1], data[:, 1:]
        with torch.autocast(device_type=dev, dtype=half):
            loss = model(idx, targets)
        scaler.scale(loss).backward()
        scaler.step(opt)  # reads the overflow check back first
        scaler.update()
        opt.zero_grad(set_to_none=True)
        print(f"gpt2_amp_step: step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
