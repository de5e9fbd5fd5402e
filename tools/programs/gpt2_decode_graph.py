"""The decoder of ``gpt2_decode.py`` making its tokens by replaying one CUDA
graph, as inference servers do.

The prompt runs eagerly (the prefill, as in ``gpt2_decode.py``); then one
decoding pass is captured once, after a warm-up on a side stream, and
replayed for each later token.  A captured pass cannot know its position
when it is captured, so the position is a tensor the host writes before each
replay (a ``host_write`` from pinned memory), the pass puts its key and value
into the cache at that position with ``index_copy_``, attends over the whole
cache with a mask of the positions written so far, and writes the next token
over the one it read.  Each token is read back (``.item()``) after its
replay, as a server streams it out.

The cache's position is data, so the log binds the cache whole, read and
written, in the captured pass (and so in every replay) and in its warm-up:
where ``gpt2_decode.py`` writes 512 bytes a token, this one's writes cover
the cache.

Without CUDA the program runs the same pass eagerly on the CPU (for testing
the recorder only; no capture events then).
"""

import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_decode as decode  # noqa: E402  (its prefill and sizes)
import gpt2_train_step as train  # noqa: E402  (the model)


def main():
    cuda = torch.cuda.is_available()
    dev = "cuda" if cuda else "cpu"
    torch.manual_seed(0)
    model = train.GPT().to(dev).eval()
    n_params = sum(p.numel() for p in model.parameters())
    print(f"gpt2_decode_graph: params {n_params} (prompt {decode.PROMPT}, new tokens "
          f"{decode.NEW}, one pass captured and replayed), device {dev}")
    prompt = torch.randint(0, train.VOCAB, (1, decode.PROMPT))
    positions = [torch.tensor([decode.PROMPT + i]) for i in range(decode.NEW - 1)]
    tokens = []
    with torch.no_grad():
        shape = (decode.MAX_LEN, train.N_HEAD, decode.HEAD_DIM)
        caches = [(torch.zeros(shape, device=dev), torch.zeros(shape, device=dev))
                  for _ in range(train.N_LAYER)]
        token = torch.zeros(1, 1, dtype=torch.long, device=dev)  # the graph's input and output
        pos = torch.zeros(1, dtype=torch.long, device=dev)
        if cuda:
            positions = [p.pin_memory() for p in positions]

        def one_pass():
            x = model.wte(token) + model.wpe(pos)
            seen = (torch.arange(decode.MAX_LEN, device=dev) <= pos).view(1, 1, 1, -1)
            for blk, (keys, values) in zip(model.blocks, caches):
                q, k, v = blk.qkv(blk.ln1(x)).split(train.D_MODEL, dim=2)
                keys.index_copy_(0, pos, k.view(1, train.N_HEAD, decode.HEAD_DIM))
                values.index_copy_(0, pos, v.view(1, train.N_HEAD, decode.HEAD_DIM))
                k_all = keys.permute(1, 0, 2).unsqueeze(0)
                v_all = values.permute(1, 0, 2).unsqueeze(0)
                q = q.view(1, 1, train.N_HEAD, decode.HEAD_DIM).transpose(1, 2)
                y = F.scaled_dot_product_attention(q, k_all, v_all, attn_mask=seen)
                x = x + blk.proj(y.transpose(1, 2).reshape(1, 1, train.D_MODEL))
                x = x + blk.fc_out(F.gelu(blk.fc(blk.ln2(x)), approximate="tanh"))
            token.copy_(model.head(model.ln_f(x)).argmax(dim=-1))

        first = decode.next_token(model, prompt.to(dev), caches, 0)
        tokens.append(first.item())
        pos.copy_(positions[0], non_blocking=True)
        if cuda:
            # Warm up at the first position, then put the first token back:
            # the warm-up overwrote it, and the first replay writes the
            # position's key and value again.
            token.copy_(first)
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                one_pass()
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                one_pass()
        token.copy_(first)
        for i in range(decode.NEW - 1):
            pos.copy_(positions[i], non_blocking=True)
            if cuda:
                graph.replay()
            else:
                one_pass()
            tokens.append(token.item())  # streamed out as it is made
    print(f"gpt2_decode_graph: generated {tokens}")


if __name__ == "__main__":
    main()
