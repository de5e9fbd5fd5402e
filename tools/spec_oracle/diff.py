#!/usr/bin/env python3
"""Holds `taintworld replay --json` to an independent implementation of SPEC.md.

`oracle.py` in this folder implements SPEC §1-§9 and Appendix A a second
time, from the SPEC alone, in plain Python (claims as interval lists, no
code shared with the crate). SPEC §8 says two implementations of the report
produce byte-for-byte comparable reports; this script checks that they do:

  * the example logs: the oracle's report equals the checked-in
    `*.report.json` byte for byte;
  * the real PyTorch logs, replayed plain and with launches injected;
  * `taintworld gen` logs of every shape, with failures, chain limits of
    1, 3 and 1024, and strict mode;
  * edge cases where SPEC.md is silent and the crate documents its choice
    (JSON nesting depth, numbers past f64's range, how a `.gz` ends),
    command lines the crate refuses or takes, and SPEC rules that random
    logs seldom meet (touching claims fuse only within one failure and
    origin, the first device fault wins, a window keeps the range it saw,
    a line splits at `\n` alone);
  * hand-written logs in `edges/`, each at the edges of a part of SPEC
    §1-§6b (one allocation bound twice, one error found again and while
    only pinned, chains cut across streams, freed and never-made memory,
    captures and graph ids, profiles and device faults, failed
    reservations), with and without `--keep-going` and a chain limit of 1;
  * random hostile logs from `randlog.py` (every op, a handful of memory
    ids and streams so that everything interacts, bad lines, random flags),
    drawn from `--seed` (default 0).

The example and real logs must be found in at least the numbers shipped
(MIN_LOGS): fewer exits 1 at once, so that logs moved, renamed or lost
cannot drop out of the tally unseen.

Each report must equal the crate's byte for byte, except the text of a
rejected line's error (only its line number is compared; the SPEC leaves
the wording free). A replay that stops must stop at the same line with the
same exit status. Any disagreement is printed with its log, kept in the
scratch folder, and the script exits 1.

  diff.py --taintworld target/release/taintworld [--random N] [--events N]
          [--injections N] [--launches N] [--seed S]
"""
import argparse
import gzip
import json
import os
import random
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from randlog import gen  # noqa: E402

ORACLE = os.path.join(HERE, "oracle.py")

# The fewest logs each category read from disk may find: the 5 example
# logs, 11 real logs and 7 hand-written edge logs shipped now. (The
# generated logs and the other edge cases are made here, so their number
# is this file's to change.)
MIN_LOGS = {"example": 5, "real log": 11, "hand-written edge log": 7}


def at_least(kind, found):
    """Exits 1 when the category `kind` found fewer logs than MIN_LOGS
    says it was written for."""
    if found < MIN_LOGS[kind]:
        sys.exit("diff.py: %s: %d logs found, at least %d expected (were some moved, "
                 "renamed or lost?)" % (kind, found, MIN_LOGS[kind]))


def run(cmd):
    p = subprocess.run(cmd, capture_output=True)
    return p.returncode, p.stdout, p.stderr


def stop_line(stderr):
    """The line a stopped replay names, or None when it names none."""
    m = re.search(rb"error: line (\d+):", stderr)
    return int(m.group(1)) if m else None


def disagreement(taintworld, log, flags):
    """None when both sides agree on `log` under `flags`, else what differs."""
    rc1, out1, err1 = run([taintworld, "replay", "--json", *flags, log])
    rc2, out2, err2 = run([sys.executable, ORACLE, "replay", *flags, log])
    if rc1 != rc2:
        return "exit status: taintworld %d (%s), oracle %d (%s)" % (
            rc1, err1.decode(errors="replace").strip()[:300],
            rc2, err2.decode(errors="replace").strip()[:300])
    if rc1 != 0:
        l1, l2 = stop_line(err1), stop_line(err2)
        return None if l1 == l2 else "stopped at line %s, oracle at line %s" % (l1, l2)
    try:
        crate, oracle = json.loads(out1), json.loads(out2)
    except ValueError as e:
        return "a report is not JSON: %s" % e
    lines = [[r["line"] for r in rep["rejected"]] for rep in (crate, oracle)]
    if lines[0] != lines[1]:
        return "rejected lines: taintworld %s, oracle %s" % tuple(lines)
    # The wording of a rejection is free: take the crate's, then compare bytes.
    oracle["rejected"] = crate["rejected"]
    if crate == oracle:
        mine = json.dumps(oracle, ensure_ascii=False, separators=(",", ":")) + "\n"
        if mine.encode() == out1:
            return None
        return "the same report, but not the same bytes"
    keys = [k for k in crate if crate.get(k) != oracle.get(k)]
    return "; ".join("%s: taintworld %s, oracle %s" % (
        k, json.dumps(crate.get(k))[:400], json.dumps(oracle.get(k))[:400]) for k in keys)


def logs_in(folder, suffix):
    """The names in `folder` that end in `suffix`, sorted; none when the
    folder is gone (at_least then says so, rather than a traceback)."""
    if not os.path.isdir(folder):
        return []
    return sorted(n for n in os.listdir(folder) if n.endswith(suffix))


def write_to(memory, start, end, outcome):
    """A launch line that writes [start, end) of `memory` on stream 0."""
    return ('{"op":"launch","kernel":"k","stream":0,"bindings":[{"stream":0,"memory":%d,'
            '"range":[%d,%d],"access":"write"}],"outcome":%s}\n'
            % (memory, start, end, outcome)).encode()


def failed(message):
    """A failed outcome: failures differ by `message` alone here."""
    return '{"failed":{"kind":"compile","message":"%s"}}' % message


def edge_cases():
    """(file name, bytes, flag sets) for the cases SPEC.md leaves to the
    implementation, where the crate documents its choice: arrays and
    objects nest at most 127 deep (the line's own object included), a
    number must fit an f64, and a gzip log (named `.gz`, or starting
    with gzip's magic) is whole gzip members and nothing after them;
    command-line numbers past u64, not numbers, or not Rust's, and a
    command line with a second log. And SPEC rules that a random log
    meets too seldom to hold the oracle to them (in 300 random logs, a
    broken fusing of touching claims agreed every time, a later device
    fault winning 298 times, a window keeping no range 299 times): each
    log leaves its claims live, so that `final` counts them."""
    sync = b'{"op":"sync"}\n'
    lines = {
        "depth_127.jsonl": b'{"op":"sync","x":' + b"[" * 126 + b"]" * 126 + b"}\n",
        "depth_128.jsonl": b'{"op":"sync","x":' + b"[" * 127 + b"]" * 127 + b"}\n",
        "depth_128_objects.jsonl": b'{"op":"sync","x":' + b'{"a":' * 127 + b"1" + b"}" * 127 + b"}\n",
        "float_past_f64.jsonl": b'{"op":"sync","x":1e999}\n{"op":"sync","y":-1e400}\n',
        "float_under_f64.jsonl": b'{"op":"sync","x":1e-400}\n',
        "integer_past_f64.jsonl": b'{"op":"sync","x":1' + b"0" * 400 + b"}\n",
    }
    for name, data in lines.items():
        yield name, sync + data + sync, [[], ["--keep-going"]]
    member = gzip.compress(sync, mtime=0)
    for name, data in {
        "empty.jsonl.gz": b"",
        "two_members.jsonl.gz": member + member,
        "cut_member.jsonl.gz": member[:-3],
        "zero_padded.jsonl.gz": member + bytes(16),
        "garbage_after.jsonl.gz": member + b"garbage",
        # Gzip is also known by its first two bytes, whatever the name.
        "gzip_named_plain.jsonl": member + member,
        "gzip_named_plain_garbage_after.jsonl": member + b"garbage",
        # A `.gz` name in any case says gzip, even of plain text.
        "plain_named_upper.jsonl.GZ": sync,
        "gzip_named_upper.jsonl.GZ": member,
    }.items():
        yield name, data, [[]]
    too_big = str(2 ** 64)
    yield "flags.jsonl", sync, [
        ["--fail-launch", too_big], ["--max-streams", too_big], ["--chain-limit", too_big],
        ["--fail-launch", "x"], ["--max-streams", "1.0"], ["--chain-limit", "-1"],
        ["--max-streams", str(2 ** 64 - 1)], ["--fail-launch", str(2 ** 64 - 1)],
        # Rust's u64::from_str takes one leading + and ASCII digits only.
        ["--fail-launch", "+1"], ["--max-streams", "+2"], ["--chain-limit", "+0"],
        ["--fail-launch", "++1"], ["--fail-launch", "+"], ["--fail-launch", " 1"],
        ["--fail-launch", "\u0661"], ["--max-streams", "\u00b2"], ["--chain-limit", "\uff11"],
        ["/dev/null"],
        # clap takes a value after `=` too, and no value for a flag.
        ["--chain-limit=2"], ["--fail-launch=1", "--max-streams=2"], ["--keep-going=1"],
        ["--chain-limit="],
    ]
    alloc = b'{"op":"alloc","stream":0,"memory":%d,"size":%d}\n'
    read = b'{"op":"read","binding":{"stream":0,"memory":%d}}\n'
    # [0,8) then [8,16) of one failure are one claim (SPEC section 1), in
    # either order; [4,8) between [0,4) and [8,12) fuses all three.
    yield "touching_claims_of_one_failure.jsonl", (
        alloc % (1, 16) + write_to(1, 0, 8, failed("m")) + write_to(1, 8, 16, failed("m"))
        + alloc % (2, 16) + write_to(2, 8, 16, failed("m")) + write_to(2, 0, 8, failed("m"))
        + alloc % (3, 16) + write_to(3, 0, 4, failed("m")) + write_to(3, 8, 12, failed("m"))
        + write_to(3, 4, 8, failed("m")) + read % 1 + read % 2 + read % 3), [[]]
    # Touching claims of two failures, or of one failure through two skip
    # records, stay apart.
    def read_1_write_2(start, end):
        return ('{"op":"launch","kernel":"s","stream":0,"bindings":[{"stream":0,"memory":1,'
                '"access":"read"},{"stream":0,"memory":2,"range":[%d,%d],"access":"write"}],'
                '"outcome":"ok"}\n' % (start, end)).encode()
    yield "touching_claims_of_two_failures.jsonl", (
        alloc % (1, 16) + write_to(1, 0, 8, failed("m")) + write_to(1, 8, 16, failed("other"))
        + alloc % (2, 16) + read_1_write_2(0, 8) + read_1_write_2(8, 16)
        + read % 1 + read % 2), [[]]
    # The first device fault is the one every later sync and read reports.
    yield "first_device_fault_wins.jsonl", (
        alloc % (1, 8) + b'{"op":"device_fault","error":{"kind":"device","message":"first"}}\n'
        + b'{"op":"device_fault","error":{"kind":"device","message":"second"}}\n'
        + sync + read % 1), [[]]
    # A window records the range its launch wrote, [0,16) of the memory
    # as it was: its replay over the id made again larger releases that
    # range, not the new allocation's whole.
    yield "window_keeps_the_concrete_range.jsonl", (
        alloc % (1, 16) + b'{"op":"capture_begin","stream":0}\n'
        + b'{"op":"launch","kernel":"w","stream":0,"bindings":[{"stream":0,"memory":1,'
          b'"access":"write"}],"outcome":"ok"}\n'
        + b'{"op":"capture_end","stream":0,"graph":1}\n{"op":"free","memory":1}\n'
        + alloc % (1, 32) + b'{"op":"host_write","binding":{"stream":0,"memory":1},'
          b'"outcome":{"failed":{"kind":"copy","message":"m"}}}\n'
        + b'{"op":"replay","graph":1,"stream":0,"outcome":"ok"}\n'
        + b'{"op":"read","binding":{"stream":0,"memory":1,"range":[0,16]}}\n'
        + b'{"op":"read","binding":{"stream":0,"memory":1,"range":[16,32]}}\n'), [[]]
    # Lines split at \n alone: a lone \r is JSON's whitespace inside line
    # 2, and \r\n ends a line as \n does.
    yield "carriage_returns.jsonl", (
        sync + b'{"op":"sync",\r"x":1}\r\n\r\n{"op":"free","memory":5}\r\n' + sync), [
        [], ["--keep-going"]]


class Tally:
    def __init__(self, scratch):
        self.scratch = scratch
        self.counts = {}
        self.failed = 0

    def check(self, kind, taintworld, log, flags, keep_copy_of=None):
        agreed, seen = self.counts.get(kind, (0, 0))
        what = disagreement(taintworld, log, flags)
        if what is None:
            self.counts[kind] = (agreed + 1, seen + 1)
            return
        self.counts[kind] = (agreed, seen + 1)
        self.failed += 1
        if keep_copy_of is not None:
            log = os.path.join(self.scratch, "disagreement_%d.jsonl" % self.failed)
            with open(log, "w", encoding="utf-8") as f:
                f.write(keep_copy_of)
        print("DISAGREE %s %s %s\n    %s" % (kind, log, " ".join(flags), what), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--taintworld", required=True, help="the taintworld binary to test")
    ap.add_argument("--random", type=int, default=500, help="random logs (default 500)")
    ap.add_argument("--events", type=int, default=None,
                    help="events per random log (default: 5 to 300, drawn)")
    ap.add_argument("--injections", type=int, default=4,
                    help="injected launches tried per real log (default 4)")
    ap.add_argument("--launches", type=int, default=1000,
                    help="launches per generated log (default 1000)")
    ap.add_argument("--seed", type=int, default=0,
                    help="which random logs: another seed, other logs (default 0)")
    args = ap.parse_args()
    tw = os.path.abspath(args.taintworld)
    examples = os.path.join(REPO, "examples", "logs")
    example_names = logs_in(examples, ".jsonl")
    real = os.path.join(examples, "real")
    real_names = logs_in(real, ".jsonl.gz")
    shapes = ["chain", "fanout", "random", "training-step"]
    rates = [(1, "0"), (2, "0.01"), (3, "0.1")]
    edges = list(edge_cases())
    hand = os.path.join(HERE, "edges")
    hand_names = logs_in(hand, ".jsonl")
    at_least("example", len(example_names))
    at_least("real log", len(real_names))
    at_least("hand-written edge log", len(hand_names))
    scratch = tempfile.mkdtemp(prefix="taintworld-oracle-")
    t = Tally(scratch)

    for name in example_names:
        log = os.path.join(examples, name)
        rc, out, err = run([sys.executable, ORACLE, "replay", log])
        with open(log[: -len(".jsonl")] + ".report.json", "rb") as f:
            expected = f.read()
        agreed, seen = t.counts.get("example (checked-in report)", (0, 0))
        if rc == 0 and out == expected:
            agreed += 1
        else:
            t.failed += 1
            print("DISAGREE the oracle's report of %s is not the checked-in one" % log)
        t.counts["example (checked-in report)"] = (agreed, seen + 1)
        t.check("example", tw, log, [])

    for name in real_names:
        log = os.path.join(real, name)
        t.check("real log", tw, log, [])
        t.check("real log", tw, log, ["--strict", "--chain-limit", "3"])
        launches = json.loads(run([tw, "replay", "--json", log])[1])["launches"]
        rng = random.Random(name)
        for _ in range(args.injections):
            n = rng.randrange(max(launches, 1))
            t.check("real log, injected", tw, log,
                    ["--fail-launch", str(n), "--chain-limit", str(rng.choice([2, 1024]))])

    for shape in shapes:
        for seed, rate in rates:
            log = os.path.join(scratch, "gen_%s_%d.jsonl" % (shape, seed))
            rc, _, err = run([tw, "gen", "--launches", str(args.launches), "--seed", str(seed),
                              "--streams", "3", "--fail-rate", rate, "--shape", shape, "-o", log])
            if rc != 0:
                sys.exit("taintworld gen failed: %s" % err.decode(errors="replace"))
            for flags in [[], ["--chain-limit", "1"], ["--chain-limit", "3", "--strict"],
                          ["--fail-launch", "5", "--fail-launch", str(args.launches // 3)]]:
                t.check("generated", tw, log, flags)
            os.remove(log)

    for name in hand_names:
        log = os.path.join(hand, name)
        for flags in [["--keep-going"], ["--keep-going", "--chain-limit", "1"], []]:
            t.check("hand-written edge log", tw, log, flags)

    for name, data, flag_sets in edges:
        log = os.path.join(scratch, name)
        with open(log, "wb") as f:
            f.write(data)
        for flags in flag_sets:
            t.check("edge case", tw, log, flags)
        os.remove(log)

    log = os.path.join(scratch, "random.jsonl")
    first = args.seed * 1_000_003
    for seed in range(first, first + args.random):
        rng = random.Random(seed * 7919)
        flags = []
        if rng.random() < 0.85:
            flags.append("--keep-going")
        if rng.random() < 0.3:
            flags.append("--strict")
        if rng.random() < 0.3:
            flags += ["--chain-limit", str(rng.choice([1, 2, 3]))]
        if rng.random() < 0.2:
            flags += ["--max-streams", str(rng.choice([1, 2, 3]))]
        for _ in range(rng.choice([0, 0, 1, 2])):
            flags += ["--fail-launch", str(rng.randrange(20))]
        text = gen(seed, args.events)
        with open(log, "w", encoding="utf-8") as f:
            f.write(text)
        t.check("random", tw, log, flags, keep_copy_of=text)
        done = seed - first + 1
        if done % 100 == 0:
            print("random logs: %d of %d" % (done, args.random), file=sys.stderr, flush=True)

    for kind, (agreed, seen) in t.counts.items():
        print("%-30s %5d of %5d agree" % (kind, agreed, seen))
    if t.failed:
        print("%d disagreements; logs kept in %s" % (t.failed, scratch))
        sys.exit(1)
    if os.path.exists(log):
        os.remove(log)
    os.rmdir(scratch)


if __name__ == "__main__":
    main()
