"""A small GPT-2-style transformer: two AdamW training steps on random data.

Random weights and random tokens; nothing is downloaded.  Each step ends by
reading the loss back to the host (``loss.item()``) *after* the optimizer
step, so the recorded log ends each step with a ``read`` of the loss: that is
the read ``taintworld replay --fail-launch N`` reports as tainted, with the
chain of skipped kernels from launch N to it.

Runs on CUDA when available, else on the CPU (for testing the recorder).
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, D_MODEL, N_HEAD, N_LAYER, SEQ, BATCH, STEPS = 512, 128, 4, 2, 64, 4, 2


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D_MODEL)
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)
        self.proj = nn.Linear(D_MODEL, D_MODEL)
        self.ln2 = nn.LayerNorm(D_MODEL)
        self.fc = nn.Linear(D_MODEL, 4 * D_MODEL)
        self.fc_out = nn.Linear(4 * D_MODEL, D_MODEL)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(D_MODEL, dim=2)
        q = q.view(b, t, N_HEAD, c // N_HEAD).transpose(1, 2)
        k = k.view(b, t, N_HEAD, c // N_HEAD).transpose(1, 2)
        v = v.view(b, t, N_HEAD, c // N_HEAD).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.proj(y)
        x = x + self.fc_out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))
        return x


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, D_MODEL)
        self.wpe = nn.Embedding(SEQ, D_MODEL)
        self.blocks = nn.ModuleList(Block() for _ in range(N_LAYER))
        self.ln_f = nn.LayerNorm(D_MODEL)
        self.head = nn.Linear(D_MODEL, VOCAB, bias=False)
        self.head.weight = self.wte.weight  # tied, as in GPT-2
        # GPT-2's initialisation: N(0, 0.02), residual projections scaled down.
        for name, p in self.named_parameters():
            if name.endswith("proj.weight") or name.endswith("fc_out.weight"):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * N_LAYER))
            elif name.endswith("weight") and p.dim() == 2:
                nn.init.normal_(p, std=0.02)

    def forward(self, idx, targets):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for blk in self.blocks:
            x = blk(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, VOCAB), targets.reshape(-1))


def seeded_model_and_optimizer(dev):
    """The model made from seed 0 on `dev`, and its AdamW: where every
    program that trains this model starts, so their logs begin alike."""
    torch.manual_seed(0)
    model = GPT().to(dev)
    return model, torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)


def main():
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    model, opt = seeded_model_and_optimizer(dev)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"gpt2_train_step: params {n_params} (layers {N_LAYER}, d_model {D_MODEL}, "
          f"heads {N_HEAD}, seq {SEQ}, batch {BATCH}, vocab {VOCAB}, steps {STEPS}, "
          f"AdamW), device {dev}")
    for step in range(STEPS):
        data = torch.randint(0, VOCAB, (BATCH, SEQ + 1), device=dev)
        idx, targets = data[:, :-1], data[:, 1:]
        loss = model(idx, targets)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        print(f"gpt2_train_step: step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
