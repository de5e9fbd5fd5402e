#!/usr/bin/env python3
"""Check a taintworld launch log (format version 1) before it is shipped.

Pure Python, no PyTorch: it runs wherever the log is, including the GPU
machine right after recording, so a broken recording is caught before the
device is given back.

It checks what ``taintworld replay`` would reject (SPEC.md section 9 and
Appendix A) plus what a *recorded* log must satisfy to mean anything.  The
first it learns by replaying the log alongside with the oracle's replay
(``tools/spec_oracle/oracle.py``, SPEC.md written again in Python, which
CI holds to the crate's on every shipped log and hundreds of random ones):
its parser reads every line, and its world takes every event, so whatever
the replay rejects is rejected here, a window that a *skip* dooms (which
needs the claims) and a graph replayed over a memory id made again smaller
among them.  Where this file's own rules below say why in more words, they
do, and they add:

* every line is JSON (no duplicate keys), the header comes first and names
  ``taintworld-log`` version 1;
* integer fields are integers in 0 .. 2^64-1;
* ``alloc`` names a memory id that is not live; ``free`` one that is;
* every binding names a live memory id, *allocated on the same stream id* as
  the binding names (stricter than replay, which compares slots and counts
  a binding of memory not live as unresolved: a recorder always names the
  allocation's own stream, and binds only what is live), with
  ``0 <= start <= end <= size``;
* accesses are ``read``, ``write``, ``read_write`` or ``dead``;
* captures are balanced per slot, ``capture_end`` names a fresh graph id, and
  ``replay`` and ``graph_destroy`` name a graph that was captured and made:
  a window in which a launch on its slot failed or was skipped is doomed and
  makes no graph (SPEC section 6);
* ``profile_begin`` names a profile that is not open, ``profile_end`` one
  that is; ``device_fault`` carries an error with a string kind and message;
* a ``.gz`` name (in any case) or gzip's first bytes mean gzip, with
  nothing after the last member;
* at the end every allocation has been freed and no capture is open (a
  recorder frees everything still live when it stops).

Usage: ``check_log.py LOG [LOG...] [--expect-read] [--min OP=N]...
[--min-streams N] [--expect-blocking] [--json]``.  Exit status 0 when every
log passes, 1 otherwise.  ``--expect-read`` also demands at least one
``read`` event that comes after the last launch (a training step that reads
its loss back at the end); ``--min`` and ``--min-streams`` demand that the program did what it was
meant to (``--min replay=5``, two streams), so a recording that silently
missed the interesting part fails too; ``--min failed=N`` counts the
launches, host writes and graph replays whose outcome failed (a program
that met a real error), as the recorder lists them.  ``--expect-blocking``
demands a header that says ``launch_blocking: true`` (a CUDA recording made
with ``record_torch.py --blocking``, whose failed launch after the device
fault is the kernel that caused it).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import zlib
from typing import Dict, List, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "spec_oracle"))
from oracle import MAX_LINE, Bad, World, cli_number, gunzip, log_lines, parse_json  # noqa: E402

U64 = 2 ** 64 - 1
ACCESSES = {"read", "write", "read_write", "dead"}
KNOWN_OPS = {
    "header", "alloc", "free", "launch", "host_write", "read", "capture_begin",
    "capture_end", "replay", "graph_destroy", "profile_begin", "profile_end",
    "device_fault", "sync",
}


class LogError(Exception):
    pass


class UnreadableLog(OSError):
    """A log whose bytes cannot be read as the replay reads them (a broken
    or padded gzip file)."""


def _parse(text):
    """One line's event, parsed as the replay parses it: with the oracle's
    parser (``tools/spec_oracle/oracle.py``), which CI holds to the
    replay's on every shipped log and hundreds of random ones."""
    try:
        return parse_json(text)
    except Bad as e:
        raise LogError(str(e)) from None


def _int(ev, key, required=True) -> Optional[int]:
    v = ev.get(key)
    if v is None:
        if required:
            raise LogError(f"missing {key!r}")
        return None
    if type(v) is not int or v < 0 or v > U64:
        raise LogError(f"{key!r} must be an integer in 0..2^64-1, got {v!r}")
    return v


def _outcome(ev, allow_dry_run):
    o = ev.get("outcome")
    if o is None:
        raise LogError("missing 'outcome'")
    if o == "ok" or (o == "dry_run" and allow_dry_run):
        return o
    # Other keys beside ``failed`` are ignored, as unknown fields are.
    if isinstance(o, dict) and _is_error(o.get("failed")):
        return "failed"
    raise LogError(f"bad outcome {o!r}")


def _is_error(err) -> bool:
    return (isinstance(err, dict) and isinstance(err.get("kind"), str)
            and isinstance(err.get("message"), str))


def _lines(path) -> List[bytes]:
    """The log's lines, decompressed as the replay decompresses (when the
    name ends in ``.gz``, in any case, or the first bytes say gzip: every
    member, and nothing but members) and split as it splits them, by the
    oracle's ``log_lines``: at ``\\n`` alone, a trailing ``\\r`` dropped
    (``bytes.splitlines`` also broke at a lone ``\\r``, and numbered the
    lines after it wrong)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b" or path.lower().endswith(".gz"):
        try:
            data = gunzip(data)
        except (ValueError, zlib.error) as e:
            raise UnreadableLog(f"not gzip as the replay reads it: {e}") from None
    return log_lines(data)


def check(path: str, expect_read: bool = False, minimum: Optional[Dict[str, int]] = None,
          min_streams: int = 0, expect_blocking: bool = False) -> Dict:
    """Check one log; returns a summary dict with an ``errors`` list."""
    errors: List[str] = []
    counts: collections.Counter = collections.Counter()
    live: Dict[int, Dict[str, int]] = {}  # memory -> {stream, size}
    ever_alloc = 0
    open_capture: Dict[int, int] = {}  # slot -> line
    # slot -> the line of the first launch that failed in its open window,
    # which dooms the window (SPEC section 6): its capture_end makes no graph.
    doomed: Dict[int, int] = {}
    failed_captures: Dict[int, int] = {}  # graph -> that launch's line
    graphs = set()
    profiles = set()  # open profile ids
    launch_blocking = False
    max_streams = 8
    seen_event = False
    streams = set()
    bindings = 0
    access_counts: collections.Counter = collections.Counter()
    reads_after_last_launch = 0
    kernels = set()
    lineno = 0

    def err(msg):
        if len(errors) < 100:
            errors.append(f"line {lineno}: {msg}")

    def binding(b, need_access):
        nonlocal bindings
        if not isinstance(b, dict):
            raise LogError("binding must be an object")
        stream = _int(b, "stream")
        memory = _int(b, "memory")
        rng = b.get("range")
        acc = b.get("access")
        if need_access:
            if not isinstance(acc, str) or acc not in ACCESSES:
                raise LogError(f"bad access {acc!r}")
            access_counts[acc] += 1
        bindings += 1
        if memory not in live:
            raise LogError(f"binding names memory {memory}, which is not live")
        a = live[memory]
        if a["stream"] != stream:
            raise LogError(f"binding names stream {stream} but memory {memory} "
                           f"was allocated on stream {a['stream']}")
        if rng is not None:
            if (not isinstance(rng, list) or len(rng) != 2
                    or any(type(x) is not int or x < 0 or x > U64 for x in rng)):
                raise LogError(f"bad range {rng!r}")
            s, e = rng
            if e < s:
                raise LogError(f"range {rng} ends before it starts")
            if e > a["size"]:
                raise LogError(f"range {rng} past the end of memory {memory} "
                               f"(size {a['size']})")

    for raw in _lines(path):
        lineno += 1
        if len(raw) > MAX_LINE:
            err("line longer than 1 MiB")
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            err("not UTF-8")
            continue
        if text.strip(" \t") == "" or text.startswith("#"):
            continue
        try:
            ev = _parse(text)
            if not isinstance(ev, dict):
                raise LogError("an event must be a JSON object")
            op = ev.get("op")
            if not isinstance(op, str):
                raise LogError(f"'op' must be a string, got {op!r}")
            if op not in KNOWN_OPS:
                raise LogError(f"unknown op {op!r}")
            if op == "header":
                if seen_event:
                    raise LogError("header is not the first event")
                if ev.get("format") != "taintworld-log" or ev.get("version") != 1 \
                        or type(ev.get("version")) is not int:
                    raise LogError("header must name format taintworld-log, version 1")
                ms = _int(ev, "max_streams", required=False)
                if ms == 0:
                    raise LogError("max_streams 0")
                if ms is not None:
                    max_streams = ms
                chain_limit = _int(ev, "chain_limit", required=False)
                if chain_limit == 0:
                    raise LogError("chain_limit 0")
                blocking = ev.get("launch_blocking", False)
                if type(blocking) is not bool:
                    raise LogError("launch_blocking must be true or false")
                launch_blocking = blocking
                # The replay's own state, as the oracle keeps it.
                world = World(max_streams, chain_limit or 1024, False, set())
                seen_event = True
                counts["header"] += 1
                continue
            if not seen_event:
                raise LogError("the first event is not a header")
            counts[op] += 1
            # What the replay makes of the line, whatever this file's own
            # rules say of it below (a line only they reject, the replay
            # takes, and its state moves on).
            try:
                world.apply(ev, lineno)
                replay_rejects = None
            except Bad as e:
                replay_rejects = str(e)
            if op == "alloc":
                stream = _int(ev, "stream")
                memory = _int(ev, "memory")
                size = _int(ev, "size")
                if memory in live:
                    raise LogError(f"memory {memory} is already live")
                if ev.get("outcome") is not None and ev.get("outcome") != "ok":
                    _outcome(ev, False)
                live[memory] = {"stream": stream, "size": size}
                streams.add(stream)
                ever_alloc += 1
            elif op == "free":
                memory = _int(ev, "memory")
                if memory not in live:
                    raise LogError(f"free of memory {memory}, which is not live")
                del live[memory]
            elif op == "launch":
                if not isinstance(ev.get("kernel"), str):
                    raise LogError("launch needs a string 'kernel'")
                kernels.add(ev["kernel"])
                _int(ev, "stream")
                bs = ev.get("bindings")
                if not isinstance(bs, list):
                    raise LogError("launch needs a 'bindings' list")
                for b in bs:
                    binding(b, True)
                if _outcome(ev, True) == "failed":
                    counts["failed"] += 1
                    slot = ev["stream"] % max_streams
                    if slot in open_capture:
                        doomed.setdefault(slot, lineno)
                reads_after_last_launch = 0
            elif op in ("host_write", "read"):
                binding(ev.get("binding"), False)
                if op == "read":
                    reads_after_last_launch += 1
                elif _outcome(ev, False) == "failed":
                    counts["failed"] += 1
            elif op == "capture_begin":
                slot = _int(ev, "stream") % max_streams
                if slot in open_capture:
                    raise LogError(f"capture already open on slot {slot} "
                                   f"(line {open_capture[slot]})")
                open_capture[slot] = lineno
            elif op == "capture_end":
                slot = _int(ev, "stream") % max_streams
                g = _int(ev, "graph")
                if slot not in open_capture:
                    raise LogError(f"capture_end with no capture open on slot {slot}")
                if g in graphs:
                    raise LogError(f"graph {g} is already live")
                del open_capture[slot]
                if g in world.graphs:
                    failed_captures.pop(g, None)
                    graphs.add(g)
                else:
                    # Doomed by a launch that failed (seen here) or by a
                    # skip (which needs the claims: the replay's state).
                    failed_captures[g] = doomed.get(slot)
                doomed.pop(slot, None)
            elif op in ("replay", "graph_destroy"):
                g = _int(ev, "graph")
                if op == "replay":
                    _int(ev, "stream", required=False)  # optional, but a u64
                if g in failed_captures:
                    why = ("a skip" if failed_captures[g] is None
                           else f"a failed launch (line {failed_captures[g]})")
                    raise LogError(f"{op} of graph {g}, whose capture {why} doomed: "
                                   "it made no graph")
                if g not in graphs:
                    raise LogError(f"{op} of unknown graph {g}")
                if op == "graph_destroy":
                    graphs.discard(g)
                elif _outcome(ev, False) == "failed":
                    counts["failed"] += 1
            elif op in ("profile_begin", "profile_end"):
                p = _int(ev, "profile")
                if op == "profile_begin":
                    if p in profiles:
                        raise LogError(f"profile {p} is already open")
                    profiles.add(p)
                elif p not in profiles:
                    raise LogError(f"profile {p} is not open")
                else:
                    profiles.discard(p)
            elif op == "device_fault":
                if "error" not in ev:
                    raise LogError("device_fault needs an 'error'")
                if not _is_error(ev["error"]):
                    raise LogError("a device_fault's error needs a string kind and message")
            if replay_rejects is not None:
                raise LogError(f"the replay rejects it: {replay_rejects}")
        except LogError as e:
            err(str(e))
    if not seen_event:
        errors.append("no header")
    if live:
        ids = sorted(live)[:10]
        errors.append(f"{len(live)} allocation(s) never freed, e.g. {ids}")
    if open_capture:
        errors.append(f"capture(s) still open on slot(s) {sorted(open_capture)}")
    if expect_read and reads_after_last_launch == 0:
        errors.append("no read event after the last launch")
    for op, n in (minimum or {}).items():
        if counts[op] < n:
            errors.append(f"expected at least {n} {op!r} event(s), found {counts[op]}")
    if expect_blocking and not launch_blocking:
        errors.append("the header does not say launch_blocking: true")
    if len(streams) < min_streams:
        errors.append(f"expected allocations on at least {min_streams} streams, "
                      f"found {sorted(streams)}")
    return {
        "path": path,
        "ok": not errors,
        "lines": lineno,
        "counts": dict(counts),
        "launches": counts["launch"],
        "allocations": ever_alloc,
        "streams": sorted(streams),
        "bindings": bindings,
        "accesses": dict(access_counts),
        "distinct_kernels": len(kernels),
        "graphs": sorted(graphs),
        "reads_after_last_launch": reads_after_last_launch,
        "launch_blocking": launch_blocking,
        "errors": errors,
    }


def _count(text) -> int:
    """A count on the command line, read as the replay reads its numbers
    (the oracle's ``cli_number``, Rust's u64: ASCII digits, one optional
    leading +), so that ``²`` or ``-1`` is argparse's usage error, exit 2."""
    try:
        return cli_number(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a count 0..2^64-1: {text!r}") from None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("logs", nargs="+")
    p.add_argument("--expect-read", action="store_true",
                   help="require a read event after the last launch")
    p.add_argument("--min", action="append", default=[], metavar="OP=N",
                   help="require at least N events of OP (repeatable), e.g. --min replay=5; "
                        "failed=N counts launches, host writes and replays that failed")
    p.add_argument("--min-streams", type=_count, default=0,
                   help="require allocations on at least this many stream ids")
    p.add_argument("--expect-blocking", action="store_true",
                   help="require a header that says launch_blocking: true")
    p.add_argument("--json", action="store_true", help="print summaries as JSON lines")
    ns = p.parse_args(argv)
    minimum = {}
    for item in ns.min:
        op, _, n = item.partition("=")
        try:
            minimum[op] = _count(n)
        except argparse.ArgumentTypeError:
            minimum[op] = None
        if (op not in KNOWN_OPS and op != "failed") or minimum[op] is None:
            p.error(f"--min wants OP=N with a known op (or failed), got {item!r}")
    status = 0
    for path in ns.logs:
        try:
            s = check(path, expect_read=ns.expect_read, minimum=minimum,
                      min_streams=ns.min_streams, expect_blocking=ns.expect_blocking)
        except OSError as e:
            print(f"{path}: FAIL: cannot read: {e}")
            status = 1
            continue
        if ns.json:
            print(json.dumps(s, sort_keys=True))
        else:
            c = s["counts"]
            print(f"{path}: {'ok' if s['ok'] else 'FAIL'}: {s['lines']} lines, "
                  f"{s['launches']} launches, {s['allocations']} allocations, "
                  f"{c.get('read', 0)} reads, {c.get('host_write', 0)} host writes, "
                  f"{c.get('capture_end', 0)} captures, {c.get('replay', 0)} replays, "
                  f"streams {s['streams']}, accesses {s['accesses']}"
                  + (", launches blocking" if s["launch_blocking"] else ""))
            for e in s["errors"]:
                print(f"  {e}")
        if not s["ok"]:
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
