#!/usr/bin/env python3
"""Independent oracle for taintworld SPEC v1 (sections 1-9 + Appendix A).

Usage: oracle.py [replay] LOG [--keep-going] [--strict]
                 [--fail-launch N]... [--max-streams N] [--chain-limit N]

It prints what `taintworld replay --json` prints, the SPEC §8 report as one
line of JSON, and nothing else; so it takes no --json (the crate's summary
without it is outside the SPEC, and the oracle writes none).

Claims are kept per allocation as a plain list of (start, end, fid, origin)
with origin None for the root or a Record object (compared by identity).
Written from the SPEC only; where the SPEC is silent (JSON nesting depth,
numbers past f64's range, how a .gz log ends, command-line numbers) it
takes the crate's documented choices, marked where they are made.
"""
import json
import re
import sys
import zlib

U64_MAX = 2 ** 64 - 1
MAX_LINE = 1048576


class Bad(Exception):
    pass


class Record:
    __slots__ = ("launch", "kernel", "needed", "cause", "depth", "cut")

    def __init__(self, launch, kernel, needed, cause, depth, cut):
        self.launch = launch
        self.kernel = kernel
        self.needed = needed
        self.cause = cause      # None (root) or Record; None also when cut
        self.depth = depth
        self.cut = cut


class Failure:
    def __init__(self, fid, kind, kernel, message):
        self.id = fid
        self.kind = kind
        self.kernel = kernel
        self.message = message
        self.occurrences = 1

    def error(self):
        return {"kind": self.kind, "kernel": self.kernel, "message": self.message}


class Alloc:
    def __init__(self, slot, size, unbacked_fid):
        self.slot = slot
        self.size = size
        self.unbacked = unbacked_fid is not None
        self.claims = []  # list of [start, end, fid, origin], sorted by start
        if unbacked_fid is not None and size > 0:
            self.claims = [(0, size, unbacked_fid, None)]


class Window:
    def __init__(self):
        self.recorded = []   # (stream, memory, start, end)
        self.doom = None     # (fid, record-or-None)


# ---------------------------------------------------------------- JSON input

def _pairs_hook(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ValueError("duplicate key %r" % k)
        d[k] = v
    return d


def _bad_const(name):
    raise ValueError("bad constant " + name)


def _check(v, depth=0):
    """Lone surrogates are not Unicode text, and arrays and objects nest
    at most MAX_DEPTH deep (below): one walk over the parsed line."""
    if isinstance(v, str):
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("lone surrogate")
        return
    if isinstance(v, (dict, list)) and depth + 1 > MAX_DEPTH:
        raise ValueError("recursion limit exceeded")
    if isinstance(v, dict):
        for k, x in v.items():
            _check(k, depth + 1)
            _check(x, depth + 1)
    elif isinstance(v, list):
        for x in v:
            _check(x, depth + 1)


# Where SPEC.md is silent the oracle takes the crate's documented choices
# (src/log/parse.rs): a number must fit an f64 (RFC 8259 section 6 lets a
# parser limit the range), and arrays and objects nest at most 127 deep,
# the line's own object included.
MAX_DEPTH = 127


def _float(s):
    v = float(s)
    if v in (float("inf"), float("-inf")):
        raise ValueError("number out of range")
    return v


def _int(s):
    v = int(s)
    try:
        float(v)
    except OverflowError:
        raise ValueError("number out of range")
    return v


def parse_json(text):
    try:
        v = json.loads(text, object_pairs_hook=_pairs_hook, parse_constant=_bad_const,
                       parse_float=_float, parse_int=_int)
        _check(v)
    except (ValueError, RecursionError) as e:
        raise Bad("malformed JSON: %s" % e)
    return v


def gunzip(data):
    """Gzip members one after another, as the crate reads a .gz log: an
    empty file, a cut member, or anything after the last member (zero
    padding included) is an error."""
    if not data:
        raise ValueError("unexpected end of file")
    out = []
    while data:
        member = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out.append(member.decompress(data))
        if not member.eof:
            raise ValueError("unexpected end of file")
        data = member.unused_data
    return b"".join(out)


def get(obj, key, required=True):
    v = obj.get(key)
    if v is None:
        if required:
            raise Bad("missing field %s" % key)
        return None
    return v


def get_u64(obj, key, required=True):
    v = get(obj, key, required)
    if v is None:
        return None
    return as_u64(v, key)


def as_u64(v, what):
    if isinstance(v, bool) or not isinstance(v, int):
        raise Bad("%s: not an integer" % what)
    if v < 0 or v > U64_MAX:
        raise Bad("%s: out of range" % what)
    return v


def get_str(obj, key, required=True):
    v = get(obj, key, required)
    if v is None:
        return None
    if not isinstance(v, str):
        raise Bad("%s: not a string" % key)
    return v


def parse_error_obj(v):
    if not isinstance(v, dict):
        raise Bad("error: not an object")
    return (get_str(v, "kind"), get_str(v, "message"))


def parse_outcome(obj, required, allow_dry):
    v = get(obj, "outcome", required)
    if v is None:
        return ("ok",)
    if v == "ok" and isinstance(v, str):
        return ("ok",)
    if v == "dry_run" and isinstance(v, str):
        if not allow_dry:
            raise Bad("dry_run not allowed here")
        return ("dry_run",)
    if isinstance(v, dict):
        f = v.get("failed")
        if f is None:
            raise Bad("outcome: missing failed")
        kind, msg = parse_error_obj(f)
        return ("failed", kind, msg)
    raise Bad("outcome: bad value")


def parse_binding(v, need_access):
    if not isinstance(v, dict):
        raise Bad("binding: not an object")
    stream = get_u64(v, "stream")
    memory = get_u64(v, "memory")
    rng = get(v, "range", False)
    if rng is not None:
        if not isinstance(rng, list) or len(rng) != 2:
            raise Bad("range: not two integers")
        s = as_u64(rng[0], "range")
        e = as_u64(rng[1], "range")
        if e < s:
            raise Bad("range: end < start")
        rng = (s, e)
    access = None
    if need_access:
        access = get_str(v, "access")
        if access not in ("read", "write", "read_write", "dead"):
            raise Bad("access: unknown %r" % access)
    return (stream, memory, rng, access)


# ---------------------------------------------------------------- the world

class World:
    def __init__(self, max_streams, chain_limit, strict, fail_launches):
        self.max_streams = max_streams
        self.chain_limit = chain_limit
        self.strict = strict
        self.fail_launches = fail_launches
        self.slots = set()
        self.allocs = {}          # memory id -> Alloc
        self.failures = {}        # fid -> Failure (live)
        self.by_ident = {}        # (kind, kernel, message) -> fid (live)
        self.carry = {}           # fid -> number of claims carrying it
        self.next_fid = 1
        self.windows = {}         # slot -> Window
        self.graphs = {}          # graph id -> list of (stream, memory, s, e)
        self.profiles = {}        # profile id -> None or (fid, error)
        self.fault = None         # error dict
        self.launches = 0
        self.verdicts = {"ran": 0, "failed": 0, "skipped": 0, "dry_run": 0}
        self.launch_results = []
        self.reads = []
        self.captures = []
        self.profile_results = []
        self.syncs = []
        self.unresolved = 0
        self.candidates = set()

    # -- helpers
    def slot(self, stream):
        return stream % self.max_streams

    def resolve(self, stream, memory):
        """Returns the Alloc or None (unresolved)."""
        sl = self.slot(stream)
        if sl not in self.slots:
            return None
        a = self.allocs.get(memory)
        if a is None or a.slot != sl:
            return None
        return a

    def resolve_bindings(self, bindings):
        """bindings: list of (stream, memory, rng, access). Returns list of
        (alloc-or-None, memory, s, e, access, stream) and unresolved count;
        raises Bad before any change."""
        out = []
        unres = 0
        for (stream, memory, rng, access) in bindings:
            a = self.resolve(stream, memory)
            if a is None:
                unres += 1
                if self.strict:
                    raise Bad("unresolved binding (strict)")
                out.append((None, memory, None, None, access, stream))
                continue
            if rng is None:
                s, e = 0, a.size
            else:
                s, e = rng
                if e > a.size:
                    raise Bad("range past the end of allocation")
            out.append((a, memory, s, e, access, stream))
        return out, unres

    def set_claims(self, a, new):
        for c in a.claims:
            self.carry[c[2]] -= 1
            if self.carry[c[2]] == 0:
                self.candidates.add(c[2])
        new.sort(key=lambda c: c[0])
        a.claims = new
        for c in new:
            self.carry[c[2]] = self.carry.get(c[2], 0) + 1

    def apply_taint(self, a, s, e, fid, origin):
        """Claims [s, e) for (fid, origin): other claims are cut back out
        of the range, and those of the same failure and origin that overlap
        or touch it fuse with it into one claim (SPEC section 1). One pass
        is enough: claims of one failure and origin never touch each other,
        so the one claim fused cannot reach a claim that [s, e) did not."""
        if s == e or a.unbacked:
            return
        keep = []
        ns, ne = s, e
        for c in a.claims:
            cs, ce, cf, co = c
            if cf == fid and co is origin and ce >= s and cs <= e:
                ns = min(ns, cs)
                ne = max(ne, ce)
            elif ce <= s or cs >= e:
                keep.append(c)
            else:
                if cs < s:
                    keep.append((cs, s, cf, co))
                if ce > e:
                    keep.append((e, ce, cf, co))
        keep.append((ns, ne, fid, origin))
        self.set_claims(a, keep)

    def release(self, a, s, e):
        if s == e or a.unbacked:
            return
        keep = []
        for c in a.claims:
            cs, ce, cf, co = c
            if ce <= s or cs >= e:
                keep.append(c)
            else:
                if cs < s:
                    keep.append((cs, s, cf, co))
                if ce > e:
                    keep.append((e, ce, cf, co))
        self.set_claims(a, keep)

    def first_claim(self, a, s, e):
        if s == e:
            return None
        best = None
        for c in a.claims:
            if c[0] < e and c[1] > s:
                if best is None or c[0] < best[0]:
                    best = c
        return best

    def find_or_mint(self, kind, kernel, message):
        key = (kind, kernel, message)
        fid = self.by_ident.get(key)
        if fid is not None:
            self.failures[fid].occurrences += 1
            return fid
        fid = self.next_fid
        self.next_fid += 1
        f = Failure(fid, kind, kernel, message)
        self.failures[fid] = f
        self.by_ident[key] = fid
        self.carry.setdefault(fid, 0)
        self.candidates.add(fid)
        return fid

    def pinned(self):
        p = set()
        for w in self.windows.values():
            if w.doom is not None:
                p.add(w.doom[0])
        return p

    def prune(self):
        if not self.candidates:
            return
        pins = self.pinned()
        for fid in self.candidates:
            f = self.failures.get(fid)
            if f is None:
                continue
            if self.carry.get(fid, 0) == 0 and fid not in pins:
                del self.failures[fid]
                del self.by_ident[(f.kind, f.kernel, f.message)]
                self.carry.pop(fid, None)
        self.candidates = set()

    def chain(self, origin):
        hops = []
        truncated = False
        r = origin
        while r is not None:
            hops.append({"launch": r.launch, "kernel": r.kernel, "needed": r.needed})
            if r.cut:
                truncated = True
                break
            r = r.cause
        return hops, truncated

    def invalidate_profiles(self, fid):
        for pid, st in self.profiles.items():
            if st is None:
                self.profiles[pid] = (fid, self.failures[fid].error())

    # -- events
    def ev_alloc(self, obj, line):
        stream = get_u64(obj, "stream")
        memory = get_u64(obj, "memory")
        size = get_u64(obj, "size")
        outcome = parse_outcome(obj, False, False)
        if memory in self.allocs:
            raise Bad("memory id already live")
        self.slots.add(self.slot(stream))
        fid = None
        if outcome[0] == "failed":
            fid = self.find_or_mint(outcome[1], "alloc", outcome[2])
        a = Alloc(self.slot(stream), size, fid)
        claims = a.claims
        a.claims = []
        self.allocs[memory] = a
        self.set_claims(a, list(claims))

    def ev_free(self, obj, line):
        memory = get_u64(obj, "memory")
        a = self.allocs.get(memory)
        if a is None:
            raise Bad("free of unknown memory id")
        self.set_claims(a, [])
        del self.allocs[memory]

    def ev_launch(self, obj, line):
        kernel = get_str(obj, "kernel")
        stream = get_u64(obj, "stream")
        bl = get(obj, "bindings")
        if not isinstance(bl, list):
            raise Bad("bindings: not an array")
        bindings = [parse_binding(b, True) for b in bl]
        outcome = parse_outcome(obj, True, True)
        res, unres = self.resolve_bindings(bindings)
        # commit
        self.unresolved += unres
        idx = self.launches
        self.launches += 1
        if idx in self.fail_launches:
            outcome = ("failed", "injected", "injected failure")
        if outcome[0] == "dry_run":
            self.verdicts["dry_run"] += 1
            self.launch_results.append({"launch": idx, "line": line, "verdict": "dry_run"})
            return
        sl = self.slot(stream)
        win = self.windows.get(sl)
        writes = [r for r in res if r[0] is not None and r[4] in ("write", "read_write")]
        # check_reads
        decided = None
        for r in res:
            if r[0] is None or r[4] not in ("read", "read_write"):
                continue
            c = self.first_claim(r[0], r[2], r[3])
            if c is not None:
                decided = (c, r[1])
                break
        if decided is not None:
            c, needed = decided
            fid = c[2]
            cause = c[3]
            depth = 1 if cause is None else cause.depth + 1
            cut = False
            if depth > self.chain_limit:
                cause = None
                depth = 1
                cut = True
            rec = Record(idx, kernel, needed, cause, depth, cut)
            for r in writes:
                self.apply_taint(r[0], r[2], r[3], fid, rec)
            self.verdicts["skipped"] += 1
            self.launch_results.append({"launch": idx, "line": line, "verdict": "skipped",
                                        "failure": fid, "needed": needed})
            if win is not None and win.doom is None:
                win.doom = (fid, rec)
            self.invalidate_profiles(fid)
            return
        if outcome[0] == "failed":
            fid = self.find_or_mint(outcome[1], kernel, outcome[2])
            for r in writes:
                self.apply_taint(r[0], r[2], r[3], fid, None)
            self.verdicts["failed"] += 1
            self.launch_results.append({"launch": idx, "line": line, "verdict": "failed",
                                        "failure": fid})
            if win is not None and win.doom is None:
                win.doom = (fid, None)
            self.invalidate_profiles(fid)
            return
        for r in writes:
            self.release(r[0], r[2], r[3])
        self.verdicts["ran"] += 1
        if win is not None:
            for r in writes:
                win.recorded.append((r[5], r[1], r[2], r[3]))

    def ev_host_write(self, obj, line):
        b = parse_binding(get(obj, "binding"), False)
        outcome = parse_outcome(obj, True, False)
        res, unres = self.resolve_bindings([b])
        self.unresolved += unres
        r = res[0]
        if outcome[0] == "ok":
            if r[0] is not None:
                self.release(r[0], r[2], r[3])
            return
        fid = self.find_or_mint(outcome[1], "host_write", outcome[2])
        if r[0] is not None:
            self.apply_taint(r[0], r[2], r[3], fid, None)
        self.launch_results.append({"host_write": True, "line": line, "verdict": "failed",
                                    "failure": fid})
        self.invalidate_profiles(fid)

    def ev_read(self, obj, line):
        b = parse_binding(get(obj, "binding"), False)
        res, unres = self.resolve_bindings([b])
        self.unresolved += unres
        r = res[0]
        if r[0] is None:
            self.reads.append({"line": line, "memory": r[1], "result": "unresolved"})
            return
        if self.fault is not None:
            self.reads.append({"line": line, "memory": r[1], "result": "device_fault",
                               "error": dict(self.fault)})
            return
        c = self.first_claim(r[0], r[2], r[3])
        if c is None:
            self.reads.append({"line": line, "memory": r[1], "result": "clean"})
            return
        f = self.failures[c[2]]
        hops, trunc = self.chain(c[3])
        self.reads.append({"line": line, "memory": r[1], "result": "tainted",
                           "failure": f.id, "error": f.error(),
                           "occurrences": f.occurrences, "chain": hops,
                           "truncated": trunc})

    def ev_capture_begin(self, obj, line):
        stream = get_u64(obj, "stream")
        sl = self.slot(stream)
        if sl in self.windows:
            raise Bad("capture already open on slot")
        self.windows[sl] = Window()

    def ev_capture_end(self, obj, line):
        stream = get_u64(obj, "stream")
        graph = get_u64(obj, "graph")
        sl = self.slot(stream)
        w = self.windows.get(sl)
        if w is None:
            raise Bad("no capture open on slot")
        if graph in self.graphs:
            raise Bad("graph id live")
        del self.windows[sl]
        if w.doom is not None:
            fid, rec = w.doom
            f = self.failures[fid]
            hops, trunc = self.chain(rec)
            self.captures.append({"line": line, "graph": graph, "result": "capture_failed",
                                  "failure": fid, "error": f.error(),
                                  "occurrences": f.occurrences, "chain": hops,
                                  "truncated": trunc})
            self.candidates.add(fid)
        else:
            self.graphs[graph] = list(w.recorded)
            self.captures.append({"line": line, "graph": graph, "result": "ok"})

    def ev_replay(self, obj, line):
        graph = get_u64(obj, "graph")
        get_u64(obj, "stream", False)
        outcome = parse_outcome(obj, True, False)
        g = self.graphs.get(graph)
        if g is None:
            raise Bad("unknown graph")
        res, unres = self.resolve_bindings([(st, m, (s, e), "write") for (st, m, s, e) in g])
        self.unresolved += unres
        targets = [r for r in res if r[0] is not None]
        if outcome[0] == "ok":
            for r in targets:
                self.release(r[0], r[2], r[3])
            return
        fid = self.find_or_mint(outcome[1], "graph:%d" % graph, outcome[2])
        for r in targets:
            self.apply_taint(r[0], r[2], r[3], fid, None)
        self.launch_results.append({"replay": True, "graph": graph, "line": line,
                                    "verdict": "failed", "failure": fid})
        self.invalidate_profiles(fid)

    def ev_graph_destroy(self, obj, line):
        graph = get_u64(obj, "graph")
        if graph not in self.graphs:
            raise Bad("unknown graph")
        del self.graphs[graph]

    def ev_profile_begin(self, obj, line):
        p = get_u64(obj, "profile")
        if p in self.profiles:
            raise Bad("profile already open")
        self.profiles[p] = None

    def ev_profile_end(self, obj, line):
        p = get_u64(obj, "profile")
        if p not in self.profiles:
            raise Bad("profile not open")
        st = self.profiles.pop(p)
        if st is None:
            self.profile_results.append({"line": line, "profile": p, "result": "valid"})
        else:
            self.profile_results.append({"line": line, "profile": p, "result": "invalid",
                                         "failure": st[0], "error": st[1]})

    def ev_device_fault(self, obj, line):
        kind, msg = parse_error_obj(get(obj, "error"))
        if self.fault is None:
            self.fault = {"kind": kind, "kernel": "device", "message": msg}

    def ev_sync(self, obj, line):
        if self.fault is None:
            self.syncs.append({"line": line, "result": "ok"})
        else:
            self.syncs.append({"line": line, "result": "device_fault", "error": dict(self.fault)})

    OPS = ("alloc", "free", "launch", "host_write", "read", "capture_begin",
           "capture_end", "replay", "graph_destroy", "profile_begin",
           "profile_end", "device_fault", "sync")

    def apply(self, obj, line):
        op = get_str(obj, "op")
        if op == "header":
            raise Bad("header not first")
        if op not in self.OPS:
            raise Bad("unknown op %r" % op)
        getattr(self, "ev_" + op)(obj, line)
        self.prune()

    def final(self):
        claims = 0
        tallocs = 0
        tbytes = 0
        for a in self.allocs.values():
            if a.claims:
                tallocs += 1
            claims += len(a.claims)
            for c in a.claims:
                tbytes += c[1] - c[0]
        return {"live_failures": len(self.failures), "tainted_allocations": tallocs,
                "tainted_bytes": tbytes, "claims": claims}


# ---------------------------------------------------------------- driver

def cli_number(text):
    """A command-line number read as the crate's command line reads it,
    with Rust's u64::from_str: one optional leading +, then ASCII digits
    only (str.isdigit would take other scripts' digits, which Rust
    refuses), at most 2^64-1. A ValueError names the text otherwise."""
    if not re.fullmatch(r"\+?[0-9]+", text) or int(text) > U64_MAX:
        raise ValueError(repr(text))
    return int(text)


def log_lines(data):
    """A log's lines as Appendix A reads them: split on \\n alone (a lone
    \\r, or any other separator Python knows, stays inside its line), one
    trailing \\r dropped. What follows a final \\n is no line."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return [line[:-1] if line.endswith(b"\r") else line for line in lines]


def parse_header(obj):
    fmt = get_str(obj, "format")
    if fmt != "taintworld-log":
        raise Bad("header: unknown format")
    ver = get(obj, "version")
    if isinstance(ver, bool) or not isinstance(ver, int) or ver != 1:
        raise Bad("header: unknown version")
    ms = get_u64(obj, "max_streams", False)
    cl = get_u64(obj, "chain_limit", False)
    if ms == 0 or cl == 0:
        raise Bad("header: zero")
    return ms, cl


USAGE = ("usage: oracle.py [replay] LOG [--keep-going] [--strict] "
         "[--fail-launch N]... [--max-streams N] [--chain-limit N]\n")


class Usage(Exception):
    """A command line the crate's `taintworld replay` refuses (exit 2)."""


def parse_args(args):
    """The command line as the crate's takes it: exactly one LOG, no
    unknown option, no option but --fail-launch twice, and every N read
    by cli_number. Returns (path, keep_going, strict, fail_launches,
    max_streams, chain_limit), the last two None when not given."""
    if args and args[0] == "replay":
        args = args[1:]
    paths = []
    flags = {"--keep-going": False, "--strict": False}
    numbers = {"--max-streams": None, "--chain-limit": None}
    fails = set()
    i = 0
    while i < len(args):
        a = args[i]
        # `--chain-limit=2` is `--chain-limit 2`, as clap takes it.
        a, eq, attached = a.partition("=") if a.startswith("--") else (a, "", "")
        if flags.get(a) or numbers.get(a) is not None:
            raise Usage("%s given twice" % a)
        if a in flags and not eq:
            flags[a] = True
        elif a in numbers or a == "--fail-launch":
            if not eq:
                i += 1
                if i == len(args):
                    raise Usage("%s needs a value N" % a)
                attached = args[i]
            try:
                n = cli_number(attached)
            except ValueError as e:
                raise Usage("invalid value %s for %s" % (e, a))
            if a == "--fail-launch":
                fails.add(n)
            elif n == 0:
                raise Usage("%s must be at least 1" % a)
            else:
                numbers[a] = n
        elif a.startswith("-") and a != "-":
            raise Usage("unexpected argument %r" % a)
        else:
            paths.append(a)
        i += 1
    if not paths:
        raise Usage("the log (LOG) is missing")
    if len(paths) > 1:
        raise Usage("unexpected argument %r: one log only" % paths[1])
    return (paths[0], flags["--keep-going"], flags["--strict"], fails,
            numbers["--max-streams"], numbers["--chain-limit"])


def main(argv):
    try:
        path, keep_going, strict, fails, cli_ms, cli_cl = parse_args(list(argv))
    except Usage as e:
        sys.stderr.write("error: %s\n%s" % (e, USAGE))
        return 2
    try:
        with open(path, "rb") as fh:
            data = fh.read()
        # As the crate: gzip by name, or by gzip's magic in the first bytes.
        if path.lower().endswith(".gz") or data[:2] == b"\x1f\x8b":
            data = gunzip(data)
    except Exception as e:  # noqa
        sys.stderr.write("error: %s\n" % e)
        return 2

    events = 0
    rejected = []
    world = None
    header_seen_slot = False   # has the first non-blank, non-comment line passed?
    ms, cl = 8, 1024

    def make_world():
        return World(cli_ms if cli_ms is not None else ms,
                     cli_cl if cli_cl is not None else cl, strict, fails)

    for n, raw in enumerate(log_lines(data), 1):
        try:
            # Appendix A: the length limit is on the line without its
            # newline.  Blank/comment classification is by the bytes (so an
            # over-long or non-UTF-8 comment is still a comment: rejected,
            # but not an event and not the header slot).
            blank_or_comment = raw.strip(b" \t") == b"" or raw.startswith(b"#")
            problem = None
            if len(raw) > MAX_LINE:
                problem = "line longer than 1 MiB"
            else:
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    problem = "line is not UTF-8"
            if blank_or_comment:
                if problem is not None:
                    if world is None:
                        world = make_world()
                    raise Bad(problem)
                continue
            first = not header_seen_slot
            header_seen_slot = True
            events += 1
            try:
                if problem is not None:
                    raise Bad(problem)
                obj = parse_json(text)
                if not isinstance(obj, dict):
                    raise Bad("not an object")
                op = get_str(obj, "op")
                if first and op == "header":
                    hms, hcl = parse_header(obj)
                    if hms is not None:
                        ms = hms
                    if hcl is not None:
                        cl = hcl
                    world = make_world()
                    events -= 1
                    continue
            except Bad:
                if world is None:
                    world = make_world()
                raise
            if world is None:
                world = make_world()
            world.apply(obj, n)
        except Bad as e:
            world.candidates = set()
            if not keep_going:
                sys.stderr.write("error: line %d: %s\n" % (n, e))
                return 2
            rejected.append({"line": n, "error": str(e)})
    if world is None:
        world = make_world()
    report = {
        "format": "taintworld-report", "version": 1,
        "events": events, "launches": world.launches,
        "verdicts": world.verdicts,
        "launch_results": world.launch_results,
        "reads": world.reads,
        "captures": world.captures,
        "profiles": world.profile_results,
        "syncs": world.syncs,
        "unresolved_bindings": world.unresolved,
        "failures_minted": world.next_fid - 1,
        "final": world.final(),
        "rejected": rejected,
    }
    # UTF-8 bytes, as the crate's report is (SPEC §8), whatever encoding
    # the locale or PYTHONIOENCODING gives sys.stdout: under an ASCII one
    # a kernel name or message outside ASCII stopped the oracle.
    sys.stdout.flush()
    sys.stdout.buffer.write(
        (json.dumps(report, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
