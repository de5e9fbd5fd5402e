#!/usr/bin/env python3
"""What recording costs a program on the host: each program run plain and
under the recorder (``Recorder``, on the CPU), in turn, three times each
after one plain warm-up, on one thread, timed by the thread's own CPU time
(``time.thread_time``, which another process on a shared machine does not
move); the least of each, and the difference a PyTorch operator the
recorder sees (views and metadata operators included, which launch
nothing).

The figure ``docs/recording.md`` gives (*Recording costs host time*).  Needs
PyTorch; not run by CI.

Run: ``python3 tools/record_cost.py tools/programs/gpt2_train_step.py ...``.
"""

import contextlib
import io
import os
import runpy
import sys
import tempfile
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from record_torch import Recorder  # noqa: E402


class _Count(TorchDispatchMode):
    """Counts the operators a dispatch mode sees, as the recorder's does."""

    def __init__(self):
        super().__init__()
        self.seen = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen += 1
        return func(*args, **(kwargs or {}))


def _run(program, around):
    torch.manual_seed(0)
    start = time.thread_time()
    with around:
        runpy.run_path(program, run_name="__main__")
    return time.thread_time() - start


def main(programs):
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="taintworld-record-cost-") as scratch:
        log = os.path.join(scratch, "log.jsonl")
        for program in programs:
            quiet = io.StringIO()
            with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
                _run(program, contextlib.nullcontext())
                plain, recorded = [], []
                for _ in range(3):
                    plain.append(_run(program, contextlib.nullcontext()))
                    recorded.append(_run(program, Recorder(log, device="cpu")))
                plain, recorded = min(plain), min(recorded)
                count = _Count()
                _run(program, count)
            per = (recorded - plain) / max(count.seen, 1) * 1e6
            print(f"{os.path.basename(program)}: plain {plain * 1e3:.1f} ms, recorded "
                  f"{recorded * 1e3:.1f} ms, {count.seen} operators: {per:.0f} µs an operator")


if __name__ == "__main__":
    main(sys.argv[1:])
