"""The model of ``gpt2_train_step.py`` generating tokens with a key/value cache.

Inference only (``torch.no_grad``), batch 1, the training program's model as
it is made (the same sizes and initialisation, random weights): the prompt's
tokens go through the model at once (the prefill), which writes every layer's
keys and values into a cache made once for the whole generation; then each
new token is one pass over a single position, which appends its key and value
at that position of the cache and attends over the cache up to it.  Each token
is read back to the host as soon as it is made (``.item()``), as a server
streams tokens out, so the log has a ``read`` after every step:
``taintworld replay --fail-launch N`` then says which tokens one failure
spoils and which come before it and stay trusted.

The cache is laid out position-major (position, head, channel), so one
position's keys (or values) are one dense run of bytes: a write at one
position is a binding of those bytes alone, and a failed one taints them and
leaves the positions before it clean.

Runs on CUDA when available, else on the CPU (for testing the recorder).
"""

import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_train_step as train  # noqa: E402  (the model, not its training)

PROMPT, NEW = 8, 16
HEAD_DIM = train.D_MODEL // train.N_HEAD
MAX_LEN = PROMPT + NEW


def block_pass(blk, x, cache, start):
    """One of the training model's blocks over positions ``start`` on of
    ``x``, their keys and values put into ``cache`` (two tensors of shape
    (MAX_LEN, N_HEAD, HEAD_DIM)) and attended over with the cache's prefix."""
    t = x.shape[1]
    end = start + t
    q, k, v = blk.qkv(blk.ln1(x)).split(train.D_MODEL, dim=2)
    keys, values = cache
    keys[start:end] = k.view(t, train.N_HEAD, HEAD_DIM)
    values[start:end] = v.view(t, train.N_HEAD, HEAD_DIM)
    # (1, heads, positions, channels), as views of the cache's prefix.
    k_all = keys[:end].permute(1, 0, 2).unsqueeze(0)
    v_all = values[:end].permute(1, 0, 2).unsqueeze(0)
    q = q.view(1, t, train.N_HEAD, HEAD_DIM).transpose(1, 2)
    # The prefill's positions see those before them; a new token sees all.
    y = F.scaled_dot_product_attention(q, k_all, v_all, is_causal=t > 1)
    y = y.transpose(1, 2).reshape(1, t, train.D_MODEL)
    x = x + blk.proj(y)
    return x + blk.fc_out(F.gelu(blk.fc(blk.ln2(x)), approximate="tanh"))


def next_token(model, idx, caches, start):
    """The token after positions ``start`` on of ``idx``, greedily: (1, 1)."""
    pos = torch.arange(start, start + idx.shape[1], device=idx.device)
    x = model.wte(idx) + model.wpe(pos)
    for blk, cache in zip(model.blocks, caches):
        x = block_pass(blk, x, cache, start)
    return model.head(model.ln_f(x[:, -1:])).argmax(dim=-1)


def main():
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    model = train.GPT().to(dev).eval()
    n_params = sum(p.numel() for p in model.parameters())
    print(f"gpt2_decode: params {n_params} (layers {train.N_LAYER}, d_model {train.D_MODEL}, "
          f"heads {train.N_HEAD}, vocab {train.VOCAB}, prompt {PROMPT}, new tokens {NEW}, "
          f"greedy, key/value cache), device {dev}")
    prompt = torch.randint(0, train.VOCAB, (1, PROMPT))
    print(f"gpt2_decode: prompt {prompt.tolist()[0]}")
    tokens = []
    with torch.no_grad():
        shape = (MAX_LEN, train.N_HEAD, HEAD_DIM)
        caches = [(torch.zeros(shape, device=dev), torch.zeros(shape, device=dev))
                  for _ in range(train.N_LAYER)]
        token = next_token(model, prompt.to(dev), caches, 0)
        for i in range(NEW):
            tokens.append(token.item())  # streamed out as it is made
            if i + 1 < NEW:
                token = next_token(model, token, caches, PROMPT + i)
    print(f"gpt2_decode: generated {tokens}")


if __name__ == "__main__":
    main()
