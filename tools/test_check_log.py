#!/usr/bin/env python3
"""Tests of the log validator (``tools/check_log.py``), which need no PyTorch.

Run with ``python3 tools/test_check_log.py``; CI runs them. They hold the
validator to the bad logs it must reject, and every recording shipped
under ``examples/logs/real/`` to the validator, so that a log changed or
added there without a recorder at hand still meets the validator that
passed it when it was recorded (``tools/record_all.sh`` checks each with
the flags its program asks for; here each is checked plainly, and a log
whose header says ``launch_blocking`` with ``--expect-blocking`` too).
"""

from __future__ import annotations

import contextlib
import glob
import gzip
import io
import json
import os
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import check_log  # noqa: E402

REAL_LOGS = os.path.join(HERE, "..", "examples", "logs", "real")


def write(lines, suffix=".jsonl"):
    """A temporary log of ``lines``, one a line: its path."""
    fd, path = tempfile.mkstemp(suffix=suffix)
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def test_check_log_rejects_bad_logs():
    h = '{"op":"header","format":"taintworld-log","version":1}'
    good = [h, '{"op":"alloc","stream":0,"memory":1,"size":8}',
            '{"op":"launch","kernel":"k","stream":0,"bindings":[{"stream":0,"memory":1,'
            '"range":[0,8],"access":"write"}],"outcome":"ok"}',
            '{"op":"read","binding":{"stream":0,"memory":1}}',
            '{"op":"free","memory":1}']
    assert check_log.check(write(good), expect_read=True)["ok"]
    # Each bad log is the good one with one fault, and its error, the only
    # one, names that fault and its line: a case that failed for another
    # reason would pass with its own rule gone.
    bad_cases = {
        "line 3: header is not the first event": good[:2] + [h] + good[2:],
        "line 3: range [0, 9] past the end of memory 1 (size 8)":
            [h, good[1], good[2].replace("[0,8]", "[0,9]"), good[4]],
        "line 3: binding names stream 1 but memory 1 was allocated on stream 0":
            [h, good[1], good[2].replace('"stream":0,"memory":1,', '"stream":1,"memory":1,'), good[4]],
        "1 allocation(s) never freed, e.g. [1]": good[:3],
        "line 3: memory 1 is already live": [h, good[1], good[1], good[4]],
        "line 4: binding names memory 1, which is not live": [h, good[1], good[4], good[2]],
        "line 3: bad access 'wr'": [h, good[1], good[2].replace('"write"', '"wr"'), good[4]],
        "line 2: malformed JSON: duplicate key 'memory'":
            [h, '{"op":"alloc","stream":0,"memory":1,"memory":2,"size":8}'],
        "line 2: replay of unknown graph 3":
            [h, '{"op":"replay","graph":3,"stream":0,"outcome":"ok"}'],
    }
    # A launch that fails in a window dooms it: its capture_end makes no
    # graph, so a replay or graph_destroy of that id is bad input; the same
    # capture without the failure makes one.
    failing = ('{"op":"launch","kernel":"k","stream":0,"bindings":[],'
               '"outcome":{"failed":{"kind":"k","message":"m"}}}')
    window = ['{"op":"capture_begin","stream":0}', failing,
              '{"op":"capture_end","stream":0,"graph":1}']
    for op, after in (("replay", '{"op":"replay","graph":1,"stream":0,"outcome":"ok"}'),
                      ("graph_destroy", '{"op":"graph_destroy","graph":1}')):
        why = (f"line 6: {op} of graph 1, whose capture a failed launch (line 4) doomed: "
               "it made no graph")
        bad_cases[why] = good[:2] + window + [after] + good[4:]
    s = check_log.check(write(good[:2] + window + good[4:]))
    assert s["ok"], s["errors"]
    made = [window[0], window[2].replace('"graph":1', '"graph":2'), '{"op":"graph_destroy","graph":2}']
    s = check_log.check(write(good[:2] + window + made + good[4:]))
    assert s["ok"], s["errors"]
    for why, lines in bad_cases.items():
        s = check_log.check(write(lines))
        assert s["errors"] == [why], (why, s["errors"])
    # A host write after the last launch is not the read --expect-read asks
    # for, failed or not; a failed one counts for --min failed.
    for outcome in ('"ok"', '{"failed":{"kind":"k","message":"m"}}'):
        host_write = ('{"op":"host_write","binding":{"stream":0,"memory":1},"outcome":'
                      + outcome + '}')
        s = check_log.check(write(good[:3] + [host_write, good[4]]), expect_read=True)
        assert not s["ok"] and s["errors"] == ["no read event after the last launch"], s
    s = check_log.check(write(good[:3] + [host_write] + good[3:]), expect_read=True,
                        minimum={"failed": 1})
    assert s["ok"], s["errors"]
    # A graph replay that failed counts too, as the recorder lists it.
    capture = ['{"op":"capture_begin","stream":0}', good[2],
               '{"op":"capture_end","stream":0,"graph":1}']
    for outcome, ok in (('"ok"', False), ('{"failed":{"kind":"device","message":"m"}}', True)):
        replay = '{"op":"replay","graph":1,"stream":0,"outcome":' + outcome + '}'
        s = check_log.check(write(good[:2] + capture + [replay] + good[3:]), expect_read=True,
                            minimum={"failed": 1})
        assert s["ok"] == ok, (outcome, s["errors"])
    # --expect-blocking wants the header's launch_blocking, which must be a
    # boolean where it is given.
    blocking = h[:-1] + ',"launch_blocking":true}'
    for first, expected in ((h, (True, False)), (blocking, (True, True))):
        lines = [first] + good[1:]
        assert check_log.check(write(lines))["ok"] == expected[0]
        s = check_log.check(write(lines), expect_blocking=True)
        assert s["ok"] == expected[1] and s["launch_blocking"] == expected[1], s
    s = check_log.check(write([h[:-1] + ',"launch_blocking":1}'] + good[1:]))
    assert s["errors"][0] == "line 1: launch_blocking must be true or false", s["errors"]


def test_check_log_rejects_what_the_replay_rejects_and_passes_what_it_passes():
    """Found by a helper running both over random and mutated logs: profile
    events and a device fault's error went unchecked, Python's parser took
    JSON the replay's does not (it now parses as the oracle does), a replay's optional stream went unchecked,
    an outcome with an extra key was refused, and a broken or padded gzip
    file crashed the validator or passed it; and an op or an access that
    is not a string was "malformed JSON: unhashable type" (a review).  Each log here is whole but
    for the one line named, and the error is the replay's reason."""
    h = '{"op":"header","format":"taintworld-log","version":1}'
    graph = ['{"op":"capture_begin","stream":0}', '{"op":"capture_end","stream":0,"graph":1}']
    nested = lambda n: '{"op":"sync","x":' + "[" * (n - 1) + "]" * (n - 1) + "}"  # noqa: E731
    bad = {
        "profile 1 is already open": ['{"op":"profile_begin","profile":1}'] * 2,
        "profile 1 is not open": ['{"op":"profile_end","profile":1}'],
        "missing 'profile'": ['{"op":"profile_begin"}'],
        "device_fault needs an 'error'": ['{"op":"device_fault"}'],
        "a device_fault's error needs a string kind and message":
            ['{"op":"device_fault","error":{"kind":"device"}}'],
        "malformed JSON: bad constant NaN": ['{"op":"sync","x":NaN}'],
        "malformed JSON: bad constant -Infinity": ['{"op":"sync","x":-Infinity}'],
        "malformed JSON: number out of range": ['{"op":"sync","x":1e400}'],
        "number out of range": ['{"op":"sync","x":' + "9" * 400 + "}"],
        "malformed JSON: lone surrogate": ['{"op":"sync","x":"\\udcff"}'],
        "malformed JSON: recursion limit exceeded": [nested(128)],
        "'stream' must be an integer in 0..2^64-1, got -1":
            graph + ['{"op":"replay","graph":1,"stream":-1,"outcome":"ok"}'],
        "line 2: 'op' must be a string, got {'a': 1}": ['{"op":{"a":1}}'],
        "line 3: bad access ['read']":
            ['{"op":"alloc","stream":0,"memory":1,"size":8}',
             '{"op":"launch","kernel":"k","stream":0,"bindings":[{"stream":0,"memory":1,'
             '"access":["read"]}],"outcome":"ok"}', '{"op":"free","memory":1}'],
    }
    for why, lines in bad.items():
        s = check_log.check(write([h] + lines))
        assert len(s["errors"]) == 1 and why in s["errors"][0], (why, s["errors"])
    good = [['{"op":"profile_begin","profile":1}', '{"op":"profile_end","profile":1}',
             '{"op":"profile_begin","profile":1}'],  # left open: the replay says nothing
            ['{"op":"device_fault","error":{"kind":"device","message":"m"}}', '{"op":"sync"}'],
            [nested(127), '{"op":"sync","x":123456789012345678901234567890}'],
            graph + ['{"op":"replay","graph":1,"stream":0,"outcome":"ok"}'],
            ['{"op":"alloc","stream":0,"memory":1,"size":8}',
             '{"op":"launch","kernel":"k","stream":0,"bindings":[],'
             '"outcome":{"failed":{"kind":"k","message":"m"},"note":"ignored"}}',
             '{"op":"free","memory":1}']]
    for lines in good:
        s = check_log.check(write([h] + lines))
        assert s["ok"], (lines, s["errors"])
    # gzip as the replay reads it: by the name or the first bytes, and
    # nothing after the last member.
    plain_named_gz = write([h], suffix=".jsonl.GZ")
    fd, padded = tempfile.mkstemp(suffix=".jsonl.gz")
    with os.fdopen(fd, "wb") as f:
        f.write(gzip.compress((h + "\n").encode()) + b"\0" * 8)
    fd, two_members = tempfile.mkstemp(suffix=".log")
    with os.fdopen(fd, "wb") as f:
        f.write(gzip.compress((h + "\n").encode()) + gzip.compress(b'{"op":"sync"}\n'))
    assert check_log.check(two_members)["ok"]
    for path in (plain_named_gz, padded):
        try:
            check_log.check(path)
        except check_log.UnreadableLog as e:
            assert "not gzip as the replay reads it" in str(e), (path, e)
        else:
            raise AssertionError(f"{path} was read")
        with contextlib.redirect_stdout(io.StringIO()) as out:
            assert check_log.main([path]) == 1
        assert "FAIL: cannot read" in out.getvalue()


def test_check_log_splits_lines_where_the_replay_does():
    """At \\n alone, one trailing \\r dropped (SPEC Appendix A): a lone \\r
    inside a line is JSON's whitespace there. The validator split at it
    too, and so reported lines 2, 3 and 4 where the replay reports line 3
    alone."""
    h = '{"op":"header","format":"taintworld-log","version":1}'
    s = check_log.check(write([h, '{"op":"sync",\r"x":1}\r', '{"op":"free","memory":5}']))
    assert s["errors"] == ["line 3: free of memory 5, which is not live"], s["errors"]
    assert s["lines"] == 3, s


def test_check_log_reads_counts_as_the_replay_reads_numbers():
    """``--min OP=N`` and ``--min-streams N`` take what Rust's u64 takes
    (a leading +, ASCII digits); anything else is argparse's usage error,
    exit 2, where a superscript ``²`` ended in a traceback."""
    path = write(['{"op":"header","format":"taintworld-log","version":1}'])
    for args in (["--min", "sync=\u00b2"], ["--min-streams", "\u00b2"], ["--min-streams", "\u0661"],
                 ["--min", "sync=-1"], ["--min-streams", str(2 ** 64)]):
        with contextlib.redirect_stderr(io.StringIO()) as err:
            try:
                check_log.main([path, *args])
            except SystemExit as e:
                assert e.code == 2, (args, e.code)
            else:
                raise AssertionError(f"{args} was taken")
        assert "usage:" in err.getvalue(), (args, err.getvalue())
    with contextlib.redirect_stdout(io.StringIO()):
        assert check_log.main([path, "--min", "sync=+0", "--min-streams", "0"]) == 0


def test_check_log_follows_the_replays_state_where_a_skip_dooms_a_window():
    """What needs the claims, which this file does not keep, the oracle's
    replay (``tools/spec_oracle``) keeps for it: a window doomed by a skip
    makes no graph, and a graph replayed over a memory id made again
    smaller records a range past its end.  Both passed before, and a graph
    id used again after a window a skip doomed was refused."""
    h = '{"op":"header","format":"taintworld-log","version":1}'
    alloc = '{"op":"alloc","stream":0,"memory":1,"size":4}'
    fail = ('{"op":"launch","kernel":"bad","stream":0,"bindings":[{"stream":0,"memory":1,'
            '"access":"write"}],"outcome":{"failed":{"kind":"compile","message":"m"}}}')
    read = ('{"op":"launch","kernel":"k","stream":0,"bindings":[{"stream":0,"memory":1,'
            '"access":"read"}],"outcome":"ok"}')
    begin, end = '{"op":"capture_begin","stream":0}', '{"op":"capture_end","stream":0,"graph":1}'
    free = '{"op":"free","memory":1}'
    # The captured read of the failed launch's bytes is a skip: no graph 1.
    doomed = [h, alloc, fail, begin, read, end]
    s = check_log.check(write(doomed + ['{"op":"graph_destroy","graph":1}', free]))
    assert s["errors"] == ["line 7: graph_destroy of graph 1, whose capture a skip doomed: "
                           "it made no graph"], s["errors"]
    s = check_log.check(write(doomed + [begin, end, '{"op":"graph_destroy","graph":1}', free]))
    assert s["ok"], s["errors"]  # graph 1 was never made: its id is free
    write16 = read.replace('"read"', '"write"')
    s = check_log.check(write([h, alloc.replace("4}", "16}"), begin, write16, end, free, alloc,
                               '{"op":"replay","graph":1,"outcome":"ok"}',
                               '{"op":"graph_destroy","graph":1}', free]))
    assert s["errors"] == ["line 8: the replay rejects it: range past the end of allocation"], \
        s["errors"]


def test_every_shipped_recording_passes():
    paths = sorted(glob.glob(os.path.join(REAL_LOGS, "*.jsonl.gz")))
    assert len(paths) >= 11, paths
    blocking = 0
    for path in paths:
        with gzip.open(path, "rt") as f:
            head = json.loads(f.readline())
        expect_blocking = head.get("launch_blocking") is True
        blocking += expect_blocking
        s = check_log.check(path, expect_blocking=expect_blocking)
        assert s["ok"], (os.path.basename(path), s["errors"][:5])
    # The device-assert program is recorded a second time with --blocking.
    assert blocking >= 1, "no shipped recording says launch_blocking"


def test_the_runner_leaves_no_temporary_file_behind():
    """Every file a test makes with ``tempfile`` is gone once the run ends,
    a failing test's too, and ``tempfile`` is pointed back where it was."""
    made = []

    def make():
        fd, path = tempfile.mkstemp(suffix=".jsonl")
        os.close(fd)
        made.append(path)

    def test_that_passes():
        make()

    def test_that_fails():
        make()
        raise AssertionError("on purpose")

    where = tempfile.gettempdir()
    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
        status = run_tests({"test_that_passes": test_that_passes,
                            "test_that_fails": test_that_fails})
    assert status == 1, quiet.getvalue()
    assert "1 passed, 1 failed" in quiet.getvalue(), quiet.getvalue()
    assert len(made) == 2 and not any(os.path.exists(p) for p in made), made
    assert tempfile.gettempdir() == where


def test_the_runner_counts_a_test_that_exits_as_a_failure_and_goes_on():
    """A test that raises SystemExit, even SystemExit(0), fails and the
    tests after it still run, the summary line follows and the status is
    1 (the run ended with status 0 there, its later tests unrun). Only
    KeyboardInterrupt stops the run."""
    ran = []

    def test_a_exits_0():
        raise SystemExit(0)

    def test_b_exits_3():
        sys.exit(3)

    def test_c_passes():
        ran.append("c")

    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
        status = run_tests({"test_a_exits_0": test_a_exits_0, "test_b_exits_3": test_b_exits_3,
                            "test_c_passes": test_c_passes})
    assert status == 1 and ran == ["c"], quiet.getvalue()
    assert quiet.getvalue().rstrip().endswith("1 passed, 2 failed"), quiet.getvalue()

    def test_interrupted():
        raise KeyboardInterrupt

    where = tempfile.gettempdir()
    try:
        with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            run_tests({"test_interrupted": test_interrupted, "test_passes": test_c_passes})
    except KeyboardInterrupt:
        assert ran == ["c"] and tempfile.gettempdir() == where
    else:
        raise AssertionError("KeyboardInterrupt did not stop the run")


# ---------------------------------------------------------------- runner


def run_tests(namespace) -> int:
    """Runs every ``test_*`` function of ``namespace`` (a module's
    globals), reporting each failure rather than stopping at the first;
    returns the exit status. ``test_record_torch.py`` runs its own with it.

    The tests write their logs with ``tempfile``; for the run its files go
    into one directory of their own, removed at the end, so that a run
    leaves nothing behind in the system's temporary directory (it left
    about twenty files a run before)."""
    tests = [(k, v) for k, v in sorted(namespace.items())
             if k.startswith("test_") and callable(v)]
    failed = 0
    before = tempfile.tempdir
    with tempfile.TemporaryDirectory(prefix="taintworld-tests-") as scratch:
        tempfile.tempdir = scratch
        try:
            for name, fn in tests:
                try:
                    fn()
                    print(f"ok   {name}")
                except KeyboardInterrupt:
                    raise
                # Report every failing test, not just the first: SystemExit
                # (even SystemExit(0)) too, which would end the run there
                # with the tests after it unrun.
                except BaseException as e:
                    failed += 1
                    traceback.print_exc()
                    print(f"FAIL {name}: {type(e).__name__}: {e}")
        finally:
            tempfile.tempdir = before
    print(f"{len(tests) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
