#!/usr/bin/env python3
"""Random hostile taintworld log generator.

randlog.py SEED [N_EVENTS] > log.jsonl

Few memory ids and streams so things interact; all ops; failed reservations,
id reuse, partial/overlapping ranges, all access kinds, dry_run, captures,
replays, graph_destroy, profiles, device faults, sync, and bad lines.
"""
import json
import random
import sys


def gen(seed, n=None):
    rng = random.Random(seed)
    n_given = n
    n = n or rng.choice([5, 10, 20, 40, 80, 200])
    nmem = rng.choice([2, 3, 4, 6])
    nstream = rng.choice([1, 2, 3, 5])
    ngraph = rng.choice([1, 2, 3])
    nprof = rng.choice([1, 2])
    kernels = ["k0", "k1", "k2", "fill", "gemm", "ké"]
    msgs = ["m0", "m1", "boom", "ünï"]
    kinds = ["compile", "launch", "injected", "oom"]
    sizes = {}  # believed sizes (mem -> size) for plausible ranges
    home = {}   # believed stream of each memory id
    live = set()
    deep = rng.random() < 0.4   # long skip chains, repeated failures, replays
    sane = deep or rng.random() < 0.6   # mostly-consistent logs
    if deep:
        n = n_given or rng.choice([60, 150, 300])
        nmem = rng.choice([3, 4, 5])
        msgs = msgs[:1]
        kinds = kinds[:1]
    fault_w = rng.choice([0, 0, 0.4])
    lines = []
    windows = set()
    graphs = set()
    next_graph = [0]
    p_fail = rng.choice([0.08, 0.15, 0.4]) if not deep else rng.choice([0.02, 0.05, 0.1])

    def err():
        return {"kind": rng.choice(kinds), "message": rng.choice(msgs)}

    def outcome(dry=False):
        r = rng.random()
        if r < 1 - p_fail:
            return "ok"
        if dry and r < 1 - p_fail + 0.05:
            return "dry_run"
        return {"failed": err()}

    def rng_for(m):
        size = sizes.get(m, rng.randint(0, 16))
        r = rng.random()
        if r < (0.25 if not deep else 0.6):
            return None
        if r < (0.28 if not sane else 0.255):
            return [size, size + rng.randint(0, 2)]  # maybe past end
        a = rng.randint(0, size)
        b = rng.randint(a, size)
        return [a, b]

    def pick_live():
        if live and (sane or rng.random() < 0.7):
            return rng.choice(sorted(live))
        return rng.randrange(nmem)

    def binding(access=True):
        m = pick_live()
        s = home.get(m, 0)
        if not sane or rng.random() < 0.1:
            s = rng.randrange(nstream)
        elif rng.random() < 0.1:
            s = s + nstream * rng.randrange(1, 3)  # folds onto the same slot if max_streams | nstream
        b = {"stream": s, "memory": m}
        r = rng_for(m)
        if r is not None:
            b["range"] = r
        if access:
            b["access"] = rng.choice(["read", "write", "read_write", "dead", "read", "write"])
        elif rng.random() < 0.2:
            b["access"] = rng.choice(["read", "bogus"])
        return b

    def bad_line():
        c = rng.randrange(22)
        if c == 0:
            return '{"op":"launch",'
        if c == 1:
            return '{"op":"teleport"}'
        if c == 2:
            return '{"op":"free"}'
        if c == 3:
            return '{"op":"free","memory":1.0}'
        if c == 4:
            return '{"op":"free","memory":"1"}'
        if c == 5:
            return '{"op":"free","memory":-1}'
        if c == 6:
            return '{"op":"free","memory":18446744073709551616}'
        if c == 7:
            return '{"op":"free","memory":1,"memory":1}'
        if c == 8:
            return '{"op":"header","format":"taintworld-log","version":1}'
        if c == 9:
            return '{"op":"read","binding":{"stream":0,"memory":0,"range":[3,1]}}'
        if c == 10:
            return '{"op":"read","binding":{"stream":0,"memory":0,"range":[1]}}'
        if c == 11:
            return '{"op":"launch","kernel":"x","stream":0,"bindings":[{"stream":0,"memory":0,"access":"peek"}],"outcome":"ok"}'
        if c == 12:
            return '{"op":"launch","kernel":7,"stream":0,"bindings":[],"outcome":"ok"}'
        if c == 13:
            return '{"op":"host_write","binding":{"stream":0,"memory":0},"outcome":"dry_run"}'
        if c == 14:
            return '{"op":"alloc","stream":0,"memory":0,"size":4,"outcome":"dry_run"}'
        if c == 15:
            return '[1,2,3]'
        if c == 16:
            return '{"op":"launch","kernel":"x","stream":0,"bindings":[],"outcome":null}'
        if c == 17:
            return '{"op":"device_fault","error":{"kind":"device"}}'
        if c == 18:
            return '{"op":"sync","extra":true} trailing'
        if c == 19:
            return '{"op":"free","memory":true}'
        if c == 20:
            return '{"op":"launch","kernel":"x","stream":0,"bindings":[],"outcome":{"failed":{"kind":1,"message":"m"}}}'
        return '{"op":"replay","graph":99,"outcome":"ok"}'

    if rng.random() < 0.8:
        h = {"op": "header", "format": "taintworld-log", "version": 1}
        if rng.random() < 0.7:
            h["max_streams"] = rng.choice([1, 2, 3, 4, 8])
        if rng.random() < 0.5:
            h["chain_limit"] = rng.choice([1, 2, 3, 1024])
        lines.append(json.dumps(h))
    bad_rate = rng.choice([0, 0.02, 0.08])
    for m in range(nmem):
        if sane or rng.random() < 0.5:
            size = rng.choice([0, 1, 4, 8, 16, 16, 32])
            s = rng.randrange(nstream)
            sizes[m] = size
            home[m] = s
            live.add(m)
            ev = {"op": "alloc", "stream": s, "memory": m, "size": size}
            if rng.random() < 0.1:
                ev["outcome"] = {"failed": err()}
            lines.append(json.dumps(ev))
    for _ in range(n):
        r = rng.random()
        if r < bad_rate:
            lines.append(bad_line())
            continue
        if rng.random() < 0.03:
            lines.append(rng.choice(["", "   ", "# comment", "\t"]))
        op = rng.choices(
            ["alloc", "free", "launch", "host_write", "read", "capture_begin",
             "capture_end", "replay", "graph_destroy", "profile_begin",
             "profile_end", "device_fault", "sync"],
            weights=[8, 4, 45, 8, 12, 3, 3, 4, 1, 2, 2, fault_w, 2])[0]
        if op == "alloc":
            m = rng.randrange(nmem)
            if sane and m in live:
                free_ = sorted(set(range(nmem)) - live)
                if free_:
                    m = rng.choice(free_)
                else:
                    lines.append(json.dumps({"op": "free", "memory": m}))
                    live.discard(m)
            size = rng.choice([0, 1, 4, 8, 16, 16, 32])
            sizes[m] = size
            s = rng.randrange(nstream)
            home[m] = s
            live.add(m)
            ev = {"op": "alloc", "stream": s, "memory": m, "size": size}
            x = rng.random()
            if x < 0.15:
                ev["outcome"] = {"failed": err()}
            elif x < 0.25:
                ev["outcome"] = "ok"
            elif x < 0.28:
                ev["outcome"] = None
        elif op == "free":
            m = pick_live()
            live.discard(m)
            ev = {"op": "free", "memory": m}
        elif op == "launch":
            if deep and rng.random() < 0.75:
                bs = [binding(), binding()]
                bs[0]["access"] = rng.choice(["read", "read", "read_write"])
                bs[1]["access"] = rng.choice(["write", "write", "read_write"])
                if rng.random() < 0.3:
                    bs.append(binding())
            else:
                bs = [binding() for _ in range(rng.choice([0, 1, 1, 2, 2, 3, 4]))]
            ev = {"op": "launch", "kernel": rng.choice(kernels), "stream": rng.randrange(nstream),
                  "bindings": bs, "outcome": outcome(dry=True)}
        elif op == "host_write":
            ev = {"op": "host_write", "binding": binding(False), "outcome": outcome()}
        elif op == "read":
            ev = {"op": "read", "binding": binding(False)}
        elif op == "capture_begin":
            s = rng.randrange(nstream + (0 if sane else 2))
            if sane and s in windows:
                continue
            windows.add(s)
            ev = {"op": "capture_begin", "stream": s}
        elif op == "capture_end":
            s = rng.randrange(nstream + (0 if sane else 2))
            if sane and not windows:
                continue
            if sane:
                s = rng.choice(sorted(windows))
            windows.discard(s)
            g = rng.randrange(ngraph)
            if sane and rng.random() < 0.8:
                g = next_graph[0]
                next_graph[0] += 1
            graphs.add(g)
            ev = {"op": "capture_end", "stream": s, "graph": g}
        elif op == "replay":
            g = rng.randrange(ngraph)
            if sane and not graphs and rng.random() < 0.9:
                continue
            if sane and graphs and rng.random() < 0.9:
                g = rng.choice(sorted(graphs))
            ev = {"op": "replay", "graph": g, "outcome": outcome()}
            if rng.random() < 0.5:
                ev["stream"] = rng.randrange(nstream)
        elif op == "graph_destroy":
            g = rng.randrange(ngraph)
            if sane and graphs:
                g = rng.choice(sorted(graphs))
            graphs.discard(g)
            ev = {"op": "graph_destroy", "graph": g}
        elif op == "profile_begin":
            ev = {"op": "profile_begin", "profile": rng.randrange(nprof)}
        elif op == "profile_end":
            ev = {"op": "profile_end", "profile": rng.randrange(nprof)}
        elif op == "device_fault":
            ev = {"op": "device_fault", "error": {"kind": "device", "message": rng.choice(msgs)}}
        else:
            ev = {"op": "sync"}
        lines.append(json.dumps(ev, ensure_ascii=False))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    seed = int(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else None
    sys.stdout.write(gen(seed, n))
