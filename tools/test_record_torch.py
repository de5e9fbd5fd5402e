#!/usr/bin/env python3
"""CPU tests of the taintworld recorder (``tools/record_torch.py``).

Run with ``python3 tools/test_record_torch.py`` (or ``pytest tools/``).  They
need PyTorch (a CPU build is enough) and no GPU: the recorder runs in
``device="cpu"`` mode, where CPU tensors stand for device memory.  Host/device
transfers are exercised with the recorder's ``is_device`` hook (float32
tensors play device memory, everything else host memory), and CUDA graph
capture with its ``graph_class`` hook (a stand-in class whose methods do
nothing), because neither exists on a CPU.

Every log written here is also put through ``tools/check_log.py``, the same
validator the GPU recordings go through; the validator's own tests, which
need no PyTorch, are in ``tools/test_check_log.py``.

CI runs these after installing PyTorch from PyPI (``.ci/run``); they pass
with 2.11 (what recorded the shipped logs) and 2.15 (CI's pin).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import check_log  # noqa: E402
from test_check_log import run_tests  # noqa: E402
from record_torch import Recorder, error_of, header  # noqa: E402

# ---------------------------------------------------------------- helpers


def record(fn, **kw):
    """Run ``fn`` under a recorder; return (events, recorder, path)."""
    fd, path = tempfile.mkstemp(suffix=".jsonl")
    os.close(fd)
    rec = Recorder(path, device=kw.pop("device", "cpu"), **kw)
    with rec:
        fn()
    with open(path) as f:
        events = [json.loads(line) for line in f]
    summary = check_log.check(path)
    assert summary["ok"], summary["errors"]
    assert not rec.errors, rec.errors
    return events, rec, path


def _recorder_of(graph_class, recorder=Recorder):
    """A CPU recorder (``recorder``, a ``Recorder`` or a subclass) of a new
    temporary log, with ``graph_class`` standing in for CUDA graphs: the
    recorder and the log's path."""
    fd, path = tempfile.mkstemp(suffix=".jsonl")
    os.close(fd)
    return recorder(path, device="cpu", graph_class=graph_class), path


def launches(events, kernel=None):
    return [e for e in events if e["op"] == "launch"
            and (kernel is None or e["kernel"] == kernel)]


def one(events, kernel):
    ls = launches(events, kernel)
    assert len(ls) == 1, (kernel, [e["kernel"] for e in launches(events)])
    return ls[0]


def float32_is_device(t):
    """The ``is_device`` hook of the transfer tests: float32 tensors play
    device memory, every other dtype host memory."""
    return t.dtype == torch.float32


def gzip_events(path):
    """The events of a gzipped log, one dict a line."""
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f]


def memory_sizes(events):
    return {e["memory"]: e["size"] for e in events if e["op"] == "alloc"}


# ---------------------------------------------------------------- tests


def test_header_first_and_everything_freed():
    def prog():
        a = torch.randn(16)
        b = a * 2
        del b
    events, _, path = record(prog)
    assert events[0] == {"op": "header", "format": "taintworld-log", "version": 1,
                         "max_streams": 8}
    allocs = [e["memory"] for e in events if e["op"] == "alloc"]
    frees = [e["memory"] for e in events if e["op"] == "free"]
    assert sorted(allocs) == sorted(frees)
    assert len(set(allocs)) == len(allocs), "memory ids are never reused"
    assert allocs == sorted(allocs) and allocs[0] == 1


def test_gzip_output_and_line_parsing():
    fd, path = tempfile.mkstemp(suffix=".jsonl.gz")
    os.close(fd)
    with Recorder(path, device="cpu"):
        x = torch.ones(4, 4)
        (x @ x).sum().item()
    with gzip.open(path, "rt") as f:
        lines = f.read().splitlines()
    assert all(isinstance(json.loads(line), dict) for line in lines)
    assert json.loads(lines[0])["op"] == "header"
    s = check_log.check(path, expect_read=True)
    assert s["ok"], s["errors"]


def test_binding_ranges_cover_the_view():
    base = torch.zeros(10, 8)  # made before recording: allocated at first use

    def prog():
        v = base[2:5, 1:3]  # 3 rows of 2 elements, rows 8 elements apart
        v.add_(1)
        e = base[3:3]
        e.add_(1)
    events, _, _ = record(prog)
    adds = launches(events, "aten::add_.Tensor")
    assert len(adds) == 2
    b = adds[0]["bindings"][0]
    # storage_offset 2*8+1 = 17; last elem 17 + 2*8 + 1 = 34 -> end 35; *4 bytes
    assert b["range"] == [17 * 4, 35 * 4], b
    assert b["access"] == "read_write"
    size = memory_sizes(events)[b["memory"]]
    assert size == 80 * 4
    eb = adds[1]["bindings"][0]
    assert eb["range"][0] == eb["range"][1], "an empty tensor binds an empty range"


def test_schema_access_inplace_out_and_fresh():
    def prog():
        a, b = torch.randn(8), torch.randn(8)
        a.mul_(b)  # self mutated: read_write; other: read
        out = torch.empty(8)
        torch.add(a, b, out=out)  # out=: write
        c = a + b  # fresh output: write
        del c
    events, _, _ = record(prog)
    m = one(events, "aten::mul_.Tensor")["bindings"]
    assert [x["access"] for x in m] == ["read_write", "read"]
    o = one(events, "aten::add.out")["bindings"]
    assert [x["access"] for x in o] == ["read", "read", "write"]
    f = one(events, "aten::add.Tensor")["bindings"]
    assert [x["access"] for x in f] == ["read", "read", "write"]
    # empty() allocates but launches nothing
    assert not launches(events, "aten::empty.memory_format")


def test_overwrite_refinements():
    def prog():
        a = torch.empty(6, 5)
        src = torch.randn(6, 5)
        a.copy_(src)
        a.fill_(3.0)
        a.zero_()
        a.normal_()
        a.uniform_()
        a.random_(0, 10)
        a.bernoulli_(0.5)
        a.exponential_()
        a[:, 1].fill_(1.0)  # a view with gaps: read_write, not write
    events, _, _ = record(prog)
    cp = one(events, "aten::copy_")["bindings"]
    assert [x["access"] for x in cp] == ["write", "read"], cp
    for k in ("aten::zero_", "aten::normal_", "aten::uniform_", "aten::random_.from",
              "aten::bernoulli_.float", "aten::exponential_"):
        b = one(events, k)["bindings"]
        assert b[0]["access"] == "write", (k, b)
    fills = launches(events, "aten::fill_.Scalar")
    assert [f["bindings"][0]["access"] for f in fills] == ["write", "read_write"]


def test_like_and_new_factories_do_not_access_template():
    def prog():
        t = torch.randn(3, 3)
        torch.zeros_like(t)
        torch.ones_like(t)
        torch.full_like(t, 2.0)
        t.new_zeros(4)
        t.new_ones(4)
        torch.empty_like(t)
    events, _, _ = record(prog)
    for k in ("aten::zeros_like", "aten::ones_like", "aten::full_like",
              "aten::new_zeros", "aten::new_ones"):
        b = one(events, k)["bindings"]
        assert b[0]["access"] == "dead" and b[-1]["access"] == "write", (k, b)
    assert not launches(events, "aten::empty_like")


def test_views_launch_nothing():
    def prog():
        t = torch.randn(4, 6)
        t.view(6, 4)
        t.t()
        t.detach()
        t.expand(2, 4, 6)
        t[1:3]
        t[:, 2]
        t.as_strided((2, 2), (1, 1))
        t.reshape(24)
        t.transpose(0, 1)
        t.unsqueeze(0)
        t.split(2)
        t.t_()
    events, _, _ = record(prog)
    kernels = [e["kernel"] for e in launches(events)]
    assert kernels == ["aten::randn"], kernels


def test_batch_norm_training_updates_running_stats():
    bn = nn.BatchNorm2d(3)
    x = torch.randn(2, 3, 4, 4)

    def prog():
        bn.train()
        bn(x)
        bn.eval()
        bn(x)
    events, _, _ = record(prog)
    # The batch-norm op PyTorch picks differs by version and backend; look for
    # the launch that binds the running stats.
    rm = bn.running_mean.untyped_storage().nbytes()
    bns = [e for e in launches(events) if "batch_norm" in e["kernel"]]
    assert len(bns) >= 2, [e["kernel"] for e in launches(events)]
    train, evl = bns[0], bns[-1]
    # bindings in schema order: input, weight, bias, running_mean, running_var, ...
    tr = [b["access"] for b in train["bindings"][:5]]
    ev = [b["access"] for b in evl["bindings"][:5]]
    assert tr[3:] == ["read_write", "read_write"], (train["kernel"], tr)
    assert ev[3:] == ["read", "read"], (evl["kernel"], ev)
    assert rm == 12


def test_tensor_lists_foreach_and_cat():
    def prog():
        xs = [torch.randn(3) for _ in range(3)]
        ys = [torch.randn(3) for _ in range(3)]
        torch._foreach_add_(xs, ys)
        torch._foreach_zero_(xs)
        torch.cat(xs)
    events, _, _ = record(prog)
    fa = one(events, "aten::_foreach_add_.List")["bindings"]
    assert [b["access"] for b in fa] == ["read_write"] * 3 + ["read"] * 3
    fz = one(events, "aten::_foreach_zero_")["bindings"]
    assert [b["access"] for b in fz] == ["write"] * 3
    c = one(events, "aten::cat")["bindings"]
    assert [b["access"] for b in c] == ["read"] * 3 + ["write"]


def test_item_is_a_read_of_the_tensor():
    def prog():
        x = torch.randn(5)
        s = x.sum()
        s.item()
    events, _, _ = record(prog)
    s = one(events, "aten::sum")
    reads = [e for e in events if e["op"] == "read"]
    assert len(reads) == 1
    out = s["bindings"][-1]
    assert reads[0]["binding"]["memory"] == out["memory"]
    assert reads[0]["binding"]["range"] == out["range"]
    assert events.index(reads[0]) > events.index(s)


def test_a_thread_started_while_recording_has_its_device_work_recorded():
    # A dispatch mode is thread-local: without the recorder's own mode in
    # each thread the program starts, a thread's launches were dropped and
    # a read of what they computed came out clean (seventy-first session).
    import threading

    start_before = threading.Thread.start
    seen = {}

    def prog():
        x = torch.randn(8)

        def work():
            seen["y"] = x * 3.0

        t = threading.Thread(target=work)
        t.start()
        t.join()
        seen["y"].sum().item()
    events, _, _ = record(prog)
    mul = one(events, "aten::mul.Tensor")
    total = one(events, "aten::sum")
    assert total["bindings"][0]["memory"] == mul["bindings"][-1]["memory"]
    assert threading.Thread.start is start_before  # the patch is undone


def test_a_thread_pools_work_is_recorded_item_by_item_and_its_workers_keep_no_mode():
    # A pool's workers outlive the recording; a mode put on them for life
    # would send every operator they run after it through Python and keep
    # torch.compile from compiling there (seventy-first session's review).
    # So the work items submitted while recording run under a mode, the
    # workers never do, and a pool made before the recording is seen too.
    from concurrent.futures import ThreadPoolExecutor

    before = ThreadPoolExecutor(max_workers=1)
    pools = [before]

    def prog():
        x = torch.randn(8)
        y = before.submit(lambda: x * 3.0).result()
        during = ThreadPoolExecutor(max_workers=1)
        pools.append(during)
        z = during.submit(lambda: y + 1.0).result()
        z.sum().item()
    events, _, _ = record(prog)
    mul = one(events, "aten::mul.Tensor")
    add = one(events, "aten::add.Tensor")
    total = one(events, "aten::sum")
    assert add["bindings"][0]["memory"] == mul["bindings"][-1]["memory"]
    assert total["bindings"][0]["memory"] == add["bindings"][-1]["memory"]
    for pool in pools:
        assert pool.submit(torch._C._len_torch_dispatch_stack).result() == 0
        pool.shutdown()


def test_data_dependent_results_are_reads():
    def prog():
        a, b = torch.randn(4), torch.randn(4)
        torch.equal(a, b)  # returns a Python bool: the host read both
        float(a.sum())
    events, _, _ = record(prog)
    reads = [e for e in events if e["op"] == "read"]
    assert len(reads) == 3, reads
    assert not launches(events, "aten::equal")


def test_file_like_output_is_not_closed():
    buf = io.StringIO()
    with Recorder(buf, device="cpu"):
        torch.ones(2).sum().item()
    lines = buf.getvalue().splitlines()
    assert json.loads(lines[0])["op"] == "header"
    assert json.loads(lines[-1])["op"] == "free"
    buf.write("")  # still open


def test_dead_storage_freed_before_its_address_is_reused():
    def prog():
        for _ in range(20):
            a = torch.empty(1024)
            a.fill_(1.0)
            del a
    events, _, _ = record(prog)
    live, frees = {}, 0
    # The log has no addresses; what must hold is that at most one of these
    # same-size buffers is ever live, i.e. each is freed before the next alloc.
    for e in events:
        if e["op"] == "alloc":
            assert len(live) == 0, "previous buffer not freed before a new alloc"
            live[e["memory"]] = e
        elif e["op"] == "free":
            live.pop(e["memory"], None)
            frees += 1
    assert frees == 20


def _freed_at(events):
    """Each memory id's index in ``events`` of its ``free``."""
    return {e["memory"]: i for i, e in enumerate(events) if e["op"] == "free"}


def test_a_second_storage_over_bytes_a_live_one_holds_is_the_same_allocation():
    """``torch.from_dlpack`` and a slice of an ``UntypedStorage`` make a
    second storage over bytes the first still holds: the recorder used to
    free the first's allocation on meeting it, and the taint of those bytes
    went with it (the soundness probe of the sixty-fourth session)."""
    def prog():
        a = torch.randn(8)
        a.mul_(2)
        b = torch.from_dlpack(a)        # the same 32 bytes, another storage
        (b * 3).sum().item()
        torch.add(a, b)                 # one launch binding both names
        c = torch.UntypedStorage(16)
        c.copy_(a.untyped_storage()[8:24])  # 16 of a's bytes, a third storage
        a[4:].sum().item()
    events, _, _ = record(prog)
    a = one(events, "aten::mul_.Tensor")["bindings"][0]
    assert a["range"] == [0, 32] and memory_sizes(events)[a["memory"]] == 32
    freed = _freed_at(events)
    mul_launch = one(events, "aten::mul.Tensor")
    mul = events.index(mul_launch)
    # b's bytes are a's memory, at a's offsets, and a stays live meanwhile.
    assert mul_launch["bindings"][0]["memory"] == a["memory"]
    assert mul_launch["bindings"][0]["range"] == [0, 32]
    assert [b["memory"] for b in one(events, "aten::add.Tensor")["bindings"][:2]] == [a["memory"]] * 2
    slice_read = [b for b in one(events, "aten::copy_")["bindings"] if b["access"] == "read"]
    assert slice_read == [{"stream": 0, "memory": a["memory"], "range": [8, 24], "access": "read"}]
    # Freed once, after the last read of a's bytes.
    last_read = max(i for i, e in enumerate(events) if e["op"] == "read")
    assert freed[a["memory"]] > max(mul, last_read)
    assert sum(1 for e in events if e == {"op": "free", "memory": a["memory"]}) == 1


def test_a_storage_that_moves_takes_its_bytes_with_it_in_a_copy():
    """``resize_`` that grows a storage, and an ``out=`` argument resized,
    move its bytes: PyTorch copies them to new memory.  The recorder used
    to make the new memory a clean allocation and free the old with its
    taint; now a launch ``aten::resize_`` reads the old bytes and writes
    the new before the old allocation goes."""
    def prog():
        a = torch.randn(4)
        view = a[1:3]
        a.mul_(2)
        a.resize_(64)                   # 16 bytes copied into 256
        view.sum().item()
        big = torch.randn(10)
        head = big[:4]
        torch.neg(torch.randn(6), out=big[8:10])  # out= grows big: 40 -> 56 bytes
        head.sum().item()
    events, _, _ = record(prog)
    sizes, freed = memory_sizes(events), _freed_at(events)
    old = one(events, "aten::mul_.Tensor")["bindings"][0]["memory"]
    moves = launches(events, "aten::resize_")
    assert len(moves) == 2, [e["kernel"] for e in launches(events)]
    (read_old, write_new), (read_big, write_grown) = (m["bindings"] for m in moves)
    assert read_old == {"stream": 0, "memory": old, "range": [0, 16], "access": "read"}
    assert write_new["range"] == [0, 16] and write_new["access"] == "write"
    assert sizes[write_new["memory"]] == 256
    assert read_big["range"] == [0, 40] and sizes[read_big["memory"]] == 40
    assert write_grown["range"] == [0, 40] and sizes[write_grown["memory"]] == 56
    for move, (src, dst) in zip(moves, ((read_old, write_new), (read_big, write_grown))):
        at = events.index(move)
        assert freed[src["memory"]] > at and events[at - 1]["op"] == "alloc"
        assert events[at - 1]["memory"] == dst["memory"]
    # The reads after each move read the new memory.
    sums = launches(events, "aten::sum")
    assert [s["bindings"][0]["memory"] for s in sums] == [write_new["memory"], write_grown["memory"]]
    # The out= launch itself writes the moved storage's last 8 bytes.
    neg = one(events, "aten::neg.out")["bindings"]
    assert neg[-1]["memory"] == write_grown["memory"] and neg[-1]["range"] == [32, 56]


def test_a_sparse_tensor_is_bound_by_its_indices_and_values():
    """A sparse tensor's memory is its indices' and its values' storages:
    the recorder used to bind none of it, so a dense -> sparse -> dense
    round trip, or a sparse gradient's optimizer step, cut the taint."""
    def prog():
        y = torch.randn(4, 5).relu()
        s = y.to_sparse()
        s.to_dense().sum().item()
        emb = nn.Embedding(6, 3, sparse=True)
        opt = torch.optim.SGD(emb.parameters(), lr=0.1)
        emb(torch.tensor([1, 4])).sum().backward()
        opt.step()
        emb.weight.sum().item()
    events, _, _ = record(prog)
    made = one(events, "aten::_to_sparse")["bindings"]
    relu = one(events, "aten::relu")["bindings"][-1]["memory"]
    assert made[0]["memory"] == relu and made[0]["access"] == "read"
    parts = [b["memory"] for b in made[1:] if b["access"] == "write"]
    assert len(parts) == 2  # indices and values
    dense = one(events, "aten::_to_dense")["bindings"]
    assert [b["memory"] for b in dense if b["access"] == "read"] == parts
    # The step adds the sparse gradient into the weight: both its parts read.
    step = one(events, "aten::add_.Tensor")["bindings"]
    weight = step[0]["memory"]
    assert step[0]["access"] == "read_write" and weight == one(events, "aten::embedding")["bindings"][0]["memory"]
    assert len([b for b in step[1:] if b["access"] == "read"]) == 2


def test_an_rnn_backward_reads_and_writes_its_forwards_workspace():
    """The schema marks an RNN backward's workspace read, but the CPU's
    oneDNN LSTM backward was seen to change it (and cuDNN documents its
    reserve space as read and written): ``read_write``."""
    rec, _ = _recorder_of(None)
    for op, arg_name in ((torch.ops.aten.mkldnn_rnn_layer_backward.default, "workspace"),
                         (torch.ops.aten._cudnn_rnn_backward.default, "reserve"),
                         (torch.ops.aten.miopen_rnn_backward.default, "reserve")):
        arg = next(a for a in op._schema.arguments if a.name == arg_name)
        assert arg.alias_info is None  # what the schema says: read only
        name = op._schema.name.split("::")[-1]
        assert rec._access_for(op, name, arg, []) == "read_write", name


def test_an_undecodable_byte_in_an_error_message_is_written_as_text():
    """Python keeps a file name's undecodable byte as an unpaired surrogate;
    written as JSON it became an escape the replay rejects (no UTF-8), so a
    program that met such an error made a log the replay would not read."""
    error, _ = error_of(RuntimeError("cannot open /data/\udcff.bin"))
    assert error == {"kind": "RuntimeError", "message": "cannot open /data/\\udcff.bin"}
    # An operator of the test's own that fails with such a message.
    lib = torch.library.Library("taintworld_test", "DEF")
    lib.define("open_data(Tensor x) -> Tensor")

    def open_data(x):
        raise RuntimeError("cannot open /data/\udcff.bin")
    lib.impl("open_data", open_data, "CPU")

    def prog():
        try:
            torch.ops.taintworld_test.open_data(torch.zeros(4))
        except RuntimeError:
            pass
    events, _, _ = record(prog)  # check_log, which rejects the escape, passes it
    failed = [e for e in launches(events) if e["outcome"] != "ok"]
    assert len(failed) == 1 and "\\udcff" in failed[0]["outcome"]["failed"]["message"]


def test_an_operator_that_points_its_arguments_elsewhere_is_bound_as_they_were():
    """cuDNN's ``_cudnn_rnn_flatten_weight`` copies an RNN's weights into one
    new buffer and points each weight at it (``set_``), so bound after the
    call the weights were the new buffer, read, and the old memory they
    were copied from was never bound (the soundness probe on an H100).  A
    stand-in operator of the test's own that does the same, named among
    ``_REPOINTS_ARGUMENTS``, must read the old weights and write the
    buffer."""
    import record_torch
    lib = torch.library.Library("taintworld_test_repoint", "DEF")
    lib.define("flatten(Tensor[] weights) -> Tensor")

    def flatten(weights):
        flat = torch.cat([w.reshape(-1) for w in weights])
        at = 0
        for w in weights:
            w.set_(flat.untyped_storage(), at, w.shape)
            at += w.numel()
        return flat
    lib.impl("flatten", flatten, "CPU")

    def prog():
        ws = [torch.randn(2, 3), torch.randn(4)]
        torch.ops.taintworld_test_repoint.flatten(ws)
        ws[1].sum().item()

    record_torch._REPOINTS_ARGUMENTS.add("flatten")
    try:
        events, _, _ = record(prog)
    finally:
        record_torch._REPOINTS_ARGUMENTS.discard("flatten")
    made = [b["memory"] for e in launches(events, "aten::randn") for b in e["bindings"]]
    bound = one(events, "taintworld_test_repoint::flatten")["bindings"]
    assert [(b["memory"], b["access"]) for b in bound[:2]] == [(m, "read") for m in made]
    assert bound[2]["access"] == "write" and bound[2]["range"] == [0, 40]
    assert bound[2]["memory"] not in made
    # The weight read afterwards is a view of the buffer.
    assert one(events, "aten::sum")["bindings"][0] == {
        "stream": 0, "memory": bound[2]["memory"], "range": [24, 40], "access": "read"}


def test_host_device_transfers_with_predicate():
    """float32 = device, everything else = host (the ``is_device`` hook)."""
    host = torch.randn(8, dtype=torch.float64)

    def prog():
        d = host.to(torch.float32)  # host -> device (fresh): host_write
        d2 = torch.empty(8, dtype=torch.float32)
        d2.copy_(host)  # host -> device into existing memory: host_write
        d3 = torch.zeros(4, 8, dtype=torch.float32)
        d3[:, 1].copy_(host[:4])  # into a view with gaps: launch read_write
        back = d.to(torch.float64)  # device -> host: read
        h = torch.empty(8, dtype=torch.float64)
        h.copy_(d2)  # device -> host via copy_: read
        (d + d2).sum().item()  # read
        del back
    events, _, _ = record(prog, is_device=float32_is_device)
    ops = [e["op"] for e in events if e["op"] in ("host_write", "read", "launch")]
    hw = [e for e in events if e["op"] == "host_write"]
    rd = [e for e in events if e["op"] == "read"]
    assert len(hw) == 2, ops
    assert all(e["outcome"] == "ok" for e in hw)
    assert len(rd) == 3, ops
    gap = one(events, "aten::copy_")
    assert [b["access"] for b in gap["bindings"]] == ["read_write"]
    # no binding ever names a host (float64) tensor: sizes are float32 multiples
    assert all(not launches(events, k) for k in ("aten::_to_copy",))


def _raises(fn):
    """Runs ``fn``, which must raise; returns the exception."""
    try:
        fn()
    except Exception as exc:  # the program's own handling of a failed op
        return exc
    raise AssertionError("expected the operator to fail")


def test_a_failing_operator_is_a_failed_launch_of_what_it_would_change():
    """An operator that raises is a launch with a failed outcome: its inputs
    read, its mutated arguments its write set, no fresh output (none was
    made); the program still gets the exception, and what it does next is
    recorded as before."""
    caught = []

    def prog():
        a, b = torch.ones(3), torch.ones(4)
        caught.append(_raises(lambda: a + b))  # out of place
        caught.append(_raises(lambda: a.add_(b)))  # in place
        (a * 2).sum().item()
    events, rec, path = record(prog)
    assert rec.failed == ["aten::add.Tensor (RuntimeError)", "aten::add_.Tensor (RuntimeError)"]
    assert check_log.check(path, minimum={"failed": 2})["ok"]
    assert not check_log.check(path, minimum={"failed": 3})["ok"]
    assert all(isinstance(e, RuntimeError) for e in caught), caught
    add, add_ = one(events, "aten::add.Tensor"), one(events, "aten::add_.Tensor")
    for launch in (add, add_):
        failed = launch["outcome"]["failed"]
        assert failed["kind"] == "RuntimeError", failed
        assert failed["message"].startswith("The size of tensor a (3) must match"), failed
        assert "\n" not in failed["message"]
    assert [b["access"] for b in add["bindings"]] == ["read", "read"]
    assert [b["access"] for b in add_["bindings"]] == ["read_write", "read"]
    assert add_["bindings"][0]["memory"] == add["bindings"][0]["memory"]
    # The program went on: its multiply ran and its sum was read.
    assert one(events, "aten::mul.Tensor")["outcome"] == "ok"
    assert [e["op"] for e in events].count("read") == 1
    assert not [e for e in events if e["op"] == "device_fault"]


def test_an_allocation_that_fails_is_a_failed_launch_of_kind_oom_binding_nothing():
    """A factory whose memory cannot be had binds nothing (no storage was
    made) and fails with kind ``oom``; a kernel whose output cannot be had
    fails the same way, reading its inputs."""
    def prog():
        # 1 PiB each, past any machine's address space: no allocator can
        # hand them out, however freely it overcommits (a 64 TiB product was
        # handed out on a GPU machine, and the kernel writing it was killed).
        _raises(lambda: torch.empty(2**50, dtype=torch.uint8))
        _raises(lambda: torch.ones(1 << 24, 1) @ torch.ones(1, 1 << 24))
    events, _, _ = record(prog)
    empty = one(events, "aten::empty.memory_format")
    assert empty["bindings"] == []
    assert empty["outcome"]["failed"]["kind"] == "oom"
    mm = one(events, "aten::mm")
    assert mm["outcome"]["failed"]["kind"] == "oom", mm
    assert [b["access"] for b in mm["bindings"]] == ["read", "read"]
    assert len(mm["outcome"]["failed"]["message"]) <= 200


def test_a_host_copy_that_fails_is_a_failed_host_write():
    host = torch.randn(9, dtype=torch.float64)

    def prog():
        d = torch.zeros(8, dtype=torch.float32)
        _raises(lambda: d.copy_(host))  # 9 values do not fit 8
        d.sum().item()
    events, _, _ = record(prog, is_device=float32_is_device)
    hw = [e for e in events if e["op"] == "host_write"]
    assert len(hw) == 1, hw
    assert hw[0]["outcome"]["failed"]["kind"] == "RuntimeError"
    assert hw[0]["binding"]["range"] == [0, 32]


def test_a_failed_copy_onto_the_device_binds_nothing_and_one_off_it_is_read_only_after_a_fault():
    """A ``.to(device)`` that raises is a failed launch binding nothing (the
    copy it was to make never existed); a copy off the device that raises
    while the device works is not recorded (the host got an error, not
    bytes), and once the device has faulted it is a read, which the replay
    answers with the fault.  float32 plays device memory (the ``is_device``
    hook), ``device="cpu"`` names the device, ``device="meta"`` the host, and
    a channels-last layout asked of a 1-D tensor is the error."""
    host = torch.randn(8, dtype=torch.float64)
    lose_device = _lose_device_op()
    last = torch.channels_last

    def prog():
        d = torch.zeros(8, dtype=torch.float32)
        _raises(lambda: host.to(device="cpu", dtype=torch.float32, memory_format=last))
        _raises(lambda: d.to(device="meta", memory_format=last))  # device works
        _raises(lambda: lose_device(d))
        _raises(lambda: d.to(device="meta", memory_format=last))  # after the fault
    events, rec, _ = record(prog, is_device=float32_is_device)
    to = one(events, "aten::_to_copy")
    assert to["bindings"] == [] and to["outcome"]["failed"]["kind"] == "RuntimeError", to
    assert to["outcome"]["failed"]["message"] == "required rank 4 tensor to use channels_last format"
    assert not [e for e in events if e["op"] == "host_write"]
    ops = [e["op"] for e in events]
    assert ops.count("device_fault") == 1 and ops.count("read") == 1, ops
    assert ops.index("device_fault") < ops.index("read")
    (read,) = [e for e in events if e["op"] == "read"]
    (alloc,) = [e for e in events if e["op"] == "alloc"]
    assert read["binding"]["memory"] == alloc["memory"], (read, alloc)
    assert rec.failed == ["aten::_to_copy (RuntimeError)", "taintworld_test::lose_device (device)"]


def test_error_kinds_tell_oom_a_rejected_launch_and_a_lost_device_apart():
    oom = torch.OutOfMemoryError(
        "CUDA out of memory. Tried to allocate 512.00 GiB. GPU 0 has a total capacity "
        "of 139.81 GiB of which 138.2 GiB is free.\nOf the allocated memory ...")
    error, sticky = error_of(oom)
    assert (error["kind"], sticky) == ("oom", False)
    assert error["message"].startswith("CUDA out of memory. Tried to allocate 512.00 GiB.")
    assert "allocated memory" not in error["message"]
    error, sticky = error_of(RuntimeError(
        "CUDA error: device-side assert triggered\nCUDA kernel errors might be "
        "asynchronously reported at some other API call"))
    assert error == {"kind": "device", "message": "CUDA error: device-side assert triggered"}
    assert sticky
    error, sticky = error_of(RuntimeError("CUDA error: too many resources requested for launch"))
    assert (error["kind"], sticky) == ("cuda", False)
    error, sticky = error_of(IndexError("index 7 is out of bounds"))
    assert (error["kind"], sticky) == ("IndexError", False)
    error, _ = error_of(RuntimeError("x" * 500))
    assert len(error["message"]) == 200 and error["message"].endswith("…")


def _accelerator_error(message, code):
    """A ``torch.AcceleratorError`` as PyTorch raises one for a failed CUDA
    call, with ``code`` as its ``error_code`` (left unset for ``None``)."""
    exc = torch.AcceleratorError(message)
    if code is not None:
        exc.error_code = code
    return exc


def test_a_cuda_error_code_or_its_message_tells_a_lost_device():
    # 710 is a device-side assert, 719 a kernel's launch failure: sticky,
    # whatever the message says.
    error, sticky = error_of(_accelerator_error("CUDA error: device-side assert triggered", 710))
    assert (error, sticky) == ({"kind": "device", "message": "CUDA error: device-side assert triggered"}, True)
    error, sticky = error_of(_accelerator_error("CUDA error: a message naming no cause", 719))
    assert (error["kind"], sticky) == ("device", True)
    # 1 is an invalid argument: the launch is rejected and the device is
    # fine, unless the message says otherwise (believed: trusting bytes
    # after a lost device is the worse mistake).
    error, sticky = error_of(_accelerator_error("CUDA error: invalid argument", 1))
    assert (error["kind"], sticky) == ("cuda", False)
    error, sticky = error_of(_accelerator_error("CUDA error: an illegal memory access was encountered", 1))
    assert (error["kind"], sticky) == ("device", True)
    # No code, or one that is not an integer: the message alone decides.
    for code in (None, True, "710"):
        error, sticky = error_of(_accelerator_error("CUDA error: an illegal memory access was encountered", code))
        assert (error["kind"], sticky) == ("device", True), code
        error, sticky = error_of(_accelerator_error("CUDA error: invalid argument", code))
        assert (error["kind"], sticky) == ("cuda", False), code


# The whole text of two CUDA errors as PyTorch 2.11 raised them on an H100
# (the sixty-second session): CUDA's own words on the first line, then
# advice, partly the error's own, whose last line names device-side
# assertions.
_INVALID_ORDINAL_TEXT = (
    "CUDA error: invalid device ordinal\n"
    "GPU device may be out of range, do you have enough GPUs?\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, "
    "so the stacktrace below might be incorrect.\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")
_DEVICE_ASSERT_TEXT = (
    "CUDA error: device-side assert triggered\n"
    "Search for `cudaErrorAssert' in "
    "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html "
    "for more information.\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, "
    "so the stacktrace below might be incorrect.\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")

# The shape of the error a collective raises when NCCL meets a CUDA error
# (``torch.distributed.DistBackendError`` from ``all_reduce``, as reported
# in huggingface/text-generation-inference#2121 with NCCL 2.20.5; not seen
# on this project's machines): NCCL's summary first, the CUDA error it met
# on the last line.
_NCCL_WRAPPED_FIRST_LINE = (
    "NCCL error in: ProcessGroupNCCL.cpp:2395, unhandled cuda error "
    "(run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5")
_DIST_BACKEND_ERROR = getattr(torch.distributed, "DistBackendError", RuntimeError)


def _nccl_wrapped_text(failure):
    return (_NCCL_WRAPPED_FIRST_LINE + "\n"
            "ncclUnhandledCudaError: Call to CUDA function failed.\n"
            "Last error:\n"
            f"Cuda failure '{failure}'")


def test_the_advice_after_every_cuda_error_does_not_make_it_a_lost_device():
    """An invalid device ordinal (101) leaves the device working: it is a
    ``cuda`` error, with its code or without, though its whole text names
    device-side assertions. The device-side assert (710) is a device fault
    either way, by its code or by its first line; and an error that names a
    lost device only on a later line, as a collective's wrapped one does,
    is one too, where one that names another CUDA error is not."""
    for code in (101, None):
        error, sticky = error_of(_accelerator_error(_INVALID_ORDINAL_TEXT, code))
        assert (error, sticky) == ({"kind": "cuda", "message": "CUDA error: invalid device ordinal"}, False), code
    error, sticky = error_of(RuntimeError(_INVALID_ORDINAL_TEXT))
    assert (error["kind"], sticky) == ("cuda", False)
    for code in (710, None):
        error, sticky = error_of(_accelerator_error(_DEVICE_ASSERT_TEXT, code))
        assert (error, sticky) == ({"kind": "device", "message": "CUDA error: device-side assert triggered"}, True), code
    # A collective's error wraps the CUDA error NCCL met, naming it on its
    # last line only; it carries no code, so its words decide.
    first = _NCCL_WRAPPED_FIRST_LINE
    for failure, kind in (("device-side assert triggered", "device"), ("invalid argument", "cuda")):
        error, sticky = error_of(_DIST_BACKEND_ERROR(_nccl_wrapped_text(failure)))
        assert (error, sticky) == ({"kind": kind, "message": first}, kind == "device"), failure


_LOSE_DEVICE_LIB = []


def _lose_device_op():
    """An operator (``taintworld_test::lose_device``) that raises a sticky
    CUDA error, as a kernel that loses the device does: defined once, since a
    library may define an operator only once per process."""
    if not _LOSE_DEVICE_LIB:
        lib = torch.library.Library("taintworld_test", "FRAGMENT")
        lib.define("lose_device(Tensor x) -> Tensor")

        def lose_device(x):
            raise RuntimeError("CUDA error: an illegal memory access was encountered\n"
                               "Compile with `TORCH_USE_CUDA_DSA` to enable device-side "
                               "assertions.")
        lib.impl("lose_device", lose_device, "CPU")
        _LOSE_DEVICE_LIB.append(lib)
    return torch.ops.taintworld_test.lose_device


def test_a_sticky_cuda_error_is_one_device_fault_and_reads_still_recorded():
    """An operator that loses the device (here a stand-in that raises a
    sticky CUDA error) makes one ``device_fault`` before its failed launch;
    a second does not make another; a read after it is recorded, so the
    replay answers it with the fault."""
    lose_device = _lose_device_op()

    def prog():
        x = torch.ones(4)
        _raises(lambda: lose_device(x))
        _raises(lambda: lose_device(x))
        x.sum().item()
    events, _, _ = record(prog)
    faults = [e for e in events if e["op"] == "device_fault"]
    assert faults == [{"op": "device_fault", "error": {
        "kind": "device", "message": "CUDA error: an illegal memory access was encountered"}}]
    lost = launches(events, "taintworld_test::lose_device")
    assert len(lost) == 2
    assert all(e["outcome"]["failed"]["kind"] == "device" for e in lost)
    assert events.index(faults[0]) < events.index(lost[0])
    assert [e["op"] for e in events].count("read") == 1


class FakeGraph:
    """Stands in for torch.cuda.CUDAGraph on a CPU: its methods do nothing."""

    def capture_begin(self, *a, **kw):
        pass

    def capture_end(self):
        pass

    def replay(self):
        pass


def test_graph_capture_and_replay_events():
    x = torch.randn(16)

    def prog():
        g = FakeGraph()
        g.capture_begin()
        y = x * 2
        g.capture_end()
        for _ in range(3):
            x.copy_(torch.randn(16))
            g.replay()
        y.sum().item()
        g2 = FakeGraph()
        g2.capture_begin()
        g2.capture_end()
        g2.replay()
    events, _, _ = record(prog, graph_class=FakeGraph)
    ops = [e["op"] for e in events]
    assert ops.count("capture_begin") == 2 and ops.count("capture_end") == 2
    ends = [e for e in events if e["op"] == "capture_end"]
    assert [e["graph"] for e in ends] == [1, 2]
    reps = [e for e in events if e["op"] == "replay"]
    assert [r["graph"] for r in reps] == [1, 1, 1, 2]
    assert all(r["outcome"] == "ok" and r["stream"] == 0 for r in reps)
    i0, i1 = ops.index("capture_begin"), ops.index("capture_end")
    assert "launch" in ops[i0:i1]
    # the wrappers are gone afterwards
    assert FakeGraph.__dict__["replay"].__qualname__ == "FakeGraph.replay"


class EndFailingGraph(FakeGraph):
    """A stand-in whose ``capture_end`` raises when made with ``fails``, as
    a capture CUDA invalidates does: no graph is made, and replaying the
    object raises too, as PyTorch's does then."""

    def __init__(self, fails=False):
        self.fails = fails

    def capture_end(self):
        if self.fails:
            raise RuntimeError("CUDA error: operation not permitted when stream is capturing")

    def replay(self):
        if self.fails:
            raise RuntimeError("the graph was not captured")

    def reset(self):
        pass


def test_a_capture_whose_end_raises_is_closed_and_its_graph_destroyed_at_once():
    """The log stays good input: the window ends, so the next launch is in
    no window and the next capture on the stream opens a window of its
    own, and the graph that PyTorch never made is forgotten before either."""
    x = torch.randn(16)

    def prog():
        bad = EndFailingGraph(fails=True)
        bad.capture_begin()
        y = x * 2  # noqa: F841 (captured, in a capture that will not end)
        _raises(bad.capture_end)
        z = x + 1
        good = EndFailingGraph()
        good.capture_begin()
        w = x * 3
        good.capture_end()
        good.replay()
        (z + w).sum().item()
    events, _, _ = record(prog, graph_class=EndFailingGraph)
    shown = [(e["op"], e.get("graph", e.get("kernel"))) for e in events
             if e["op"] in ("capture_begin", "capture_end", "graph_destroy", "replay", "launch")]
    assert shown == [("capture_begin", None), ("launch", "aten::mul.Tensor"),
                     ("capture_end", 1), ("graph_destroy", 1),
                     ("launch", "aten::add.Tensor"),
                     ("capture_begin", None), ("launch", "aten::mul.Tensor"), ("capture_end", 2),
                     ("replay", 2), ("launch", "aten::add.Tensor"), ("launch", "aten::sum"),
                     ("graph_destroy", 2)], shown


def test_a_replay_of_a_graph_whose_capture_failed_or_that_was_reset_is_not_written_and_is_reported():
    x = torch.randn(16)
    rec, path = _recorder_of(EndFailingGraph)
    with rec:
        bad = EndFailingGraph(fails=True)
        bad.capture_begin()
        y = x * 2  # noqa: F841 (captured)
        _raises(bad.capture_end)
        _raises(bad.replay)
        done = EndFailingGraph()
        done.capture_begin()
        y = x * 3  # noqa: F841 (captured)
        done.capture_end()
        done.reset()
        done.replay()
        x.sum().item()
    assert rec.errors == [f"replay of graph {g}, of which the log holds no graph: its capture "
                          "failed, a launch in it failed, or it was reset" for g in (1, 2)], rec.errors
    summary = check_log.check(path)
    assert summary["ok"], summary["errors"]
    with open(path) as f:
        assert not [e for e in map(json.loads, f) if e["op"] == "replay"]


def test_a_capture_the_program_raises_out_of_is_closed_when_the_next_capture_begins():
    """A program that raises out of a capture and catches it outside leaves
    the window without its capture_end; the next capture ends it first, so
    neither capture's events are lost and no window opens inside another."""
    x = torch.randn(16)

    def prog():
        left = FakeGraph()
        try:
            left.capture_begin()
            y = x * 2  # noqa: F841 (captured)
            raise ValueError("the program gives up on the capture")
        except ValueError:
            pass
        g = FakeGraph()
        g.capture_begin()
        z = x + 1  # noqa: F841 (captured)
        g.capture_end()
        g.replay()
        x.sum().item()
    events, _, _ = record(prog, graph_class=FakeGraph)
    shown = [(e["op"], e.get("graph", e.get("kernel"))) for e in events
             if e["op"] in ("capture_begin", "capture_end", "graph_destroy", "replay", "launch")]
    assert shown == [("capture_begin", None), ("launch", "aten::mul.Tensor"),
                     ("capture_end", 1), ("graph_destroy", 1),
                     ("capture_begin", None), ("launch", "aten::add.Tensor"), ("capture_end", 2),
                     ("replay", 2), ("launch", "aten::sum"), ("graph_destroy", 2)], shown


def test_a_capture_in_which_a_launch_failed_makes_no_graph_to_replay_or_destroy():
    """SPEC section 6: a launch that fails in a window dooms it, and its
    capture_end makes no graph. The log ends the window and names the graph
    nowhere after; a replay of it is reported, not written."""
    x = torch.randn(16)
    rec, path = _recorder_of(FakeGraph)
    with rec:
        g = FakeGraph()
        g.capture_begin()
        _raises(lambda: x + torch.randn(3))
        g.capture_end()
        g.replay()
        x.sum().item()
    assert rec.errors == ["replay of graph 1, of which the log holds no graph: its capture "
                          "failed, a launch in it failed, or it was reset"], rec.errors
    summary = check_log.check(path)
    assert summary["ok"], summary["errors"]
    with open(path) as f:
        events = [json.loads(line) for line in f]
    assert [e["op"] for e in events if e["op"] in ("capture_end", "replay", "graph_destroy")] == \
        ["capture_end"]
    assert [(e["kernel"], e["outcome"] != "ok") for e in events if e["op"] == "launch"] == \
        [("aten::randn", False), ("aten::add.Tensor", True), ("aten::sum", False)]


def test_a_graph_reset_during_its_own_capture_is_destroyed_after_its_capture_ends():
    x = torch.randn(16)

    def prog():
        g = EndFailingGraph()
        g.capture_begin()
        y = x * 2  # noqa: F841 (captured)
        g.reset()
        g.capture_end()
        x.sum().item()
    events, _, _ = record(prog, graph_class=EndFailingGraph)
    ops = [e["op"] for e in events if e["op"] in ("capture_begin", "capture_end", "graph_destroy")]
    assert ops == ["capture_begin", "capture_end", "graph_destroy"], ops


def test_a_replay_inside_its_own_capture_is_reported_as_such():
    rec, path = _recorder_of(FakeGraph)
    with rec:
        g = FakeGraph()
        g.capture_begin()
        g.replay()
        g.capture_end()
    assert rec.errors == ["replay of a graph whose capture has not ended"], rec.errors
    assert check_log.check(path)["ok"]


def test_graphs_that_are_gone_are_not_kept_by_the_recorder():
    """A program that captures graph after graph (each reset before the
    next) leaves the recorder holding none of them once they are gone."""
    x = torch.randn(16)
    rec, path = _recorder_of(EndFailingGraph)
    with rec:
        for _ in range(20):
            g = EndFailingGraph()
            g.capture_begin()
            y = x * 2  # noqa: F841 (captured)
            g.capture_end()
            g.replay()
            g.reset()
        kept = len(rec._graphs)
        x.sum().item()
    assert kept <= 1, kept
    summary = check_log.check(path)
    assert summary["ok"] and summary["counts"]["graph_destroy"] == 20, summary


def _broken_hook(self, *args):
    raise KeyError("the recorder's own bug")


def test_an_error_of_the_recorders_own_in_a_graph_hook_is_reported_not_raised():
    """The recorder's own error in a graph hook is reported, never raised into
    the program: after a good replay nothing is raised, and while a replay
    fails the program still gets the replay's own exception, unchained."""
    for hook, graph_class in (("_on_replay", FakeGraph), ("_on_replay_error", FailingGraph)):
        broken = type("Broken", (Recorder,), {hook: _broken_hook})
        rec, path = _recorder_of(graph_class, broken)
        with rec:
            g = graph_class()
            g.capture_begin()
            g.capture_end()
            if graph_class is FailingGraph:
                exc = _raises(g.replay)
                assert type(exc) is RuntimeError and str(exc) == FailingGraph.message, repr(exc)
                assert exc.__context__ is None and exc.__cause__ is None, repr(exc.__context__)
            else:
                g.replay()
        assert rec.errors == ["CUDAGraph.replay: KeyError: \"the recorder's own bug\""], \
            (hook, rec.errors)
        assert check_log.check(path)["ok"], hook


class FailingGraph(FakeGraph):
    """A stand-in whose replay raises, as a replay whose launch the driver
    rejects (or, with a sticky message, one that loses the device)."""

    message = "CUDA error: an illegal memory access was encountered"

    def replay(self):
        raise RuntimeError(self.message)


def test_a_replay_that_raises_is_a_failed_replay_after_the_devices_fault():
    x = torch.randn(16)

    def prog():
        g = FailingGraph()
        g.capture_begin()
        y = x * 2  # noqa: F841 (the captured launch)
        g.capture_end()
        _raises(g.replay)
        x.sum().item()
    events, rec, _ = record(prog, graph_class=FailingGraph)
    rep = [e for e in events if e["op"] == "replay"]
    error = {"kind": "device", "message": FailingGraph.message}
    assert rep == [{"op": "replay", "graph": 1, "stream": 0, "outcome": {"failed": error}}]
    faults = [e for e in events if e["op"] == "device_fault"]
    assert faults == [{"op": "device_fault", "error": error}]
    assert events.index(faults[0]) + 1 == events.index(rep[0])
    assert rec.failed == ["replay (device)"]


_POOL = bytearray(8192)
_POOL_LIB = []


def _pool_allocator():
    """``at(offset, n)``: a fresh float32 storage of ``n`` elements at byte
    ``offset`` of a fixed buffer, made by an operator the recorder sees as an
    allocation (``twtest::empty``, like ``aten::empty``).  The buffer plays a
    CUDA graph's private pool, whose addresses PyTorch's allocator reuses
    within a capture."""
    if not _POOL_LIB:
        lib = torch.library.Library("twtest", "DEF")
        lib.define("empty(int offset, int n) -> Tensor")
        lib.impl("empty", lambda offset, n: torch.frombuffer(
            _POOL, dtype=torch.float32, count=n, offset=offset),
            "CompositeExplicitAutograd")
        _POOL_LIB.append(lib)
    return lambda offset, n: torch.ops.twtest.empty(offset, n)


class ResettableGraph(FakeGraph):
    """A stand-in graph with ``reset`` (CUDAGraph's "give the pool back")."""

    def reset(self):
        pass


def _replay_resolution(events):
    """Replays the log's allocation lifetimes like ``taintworld replay``
    does: (unresolved graph bindings at replays, the graphs' write sets)."""
    live, open_win, graphs, unresolved = {}, None, {}, 0
    for e in events:
        op = e["op"]
        if op == "alloc":
            assert e["memory"] not in live
            live[e["memory"]] = e
        elif op == "free":
            del live[e["memory"]]
        elif op == "capture_begin":
            open_win = []
        elif op == "launch" and open_win is not None:
            open_win += [(b["memory"], tuple(b["range"])) for b in e["bindings"]
                         if b["access"] in ("write", "read_write")]
        elif op == "capture_end":
            graphs[e["graph"]], open_win = open_win, None
        elif op == "replay":
            unresolved += sum(1 for mem, _ in graphs[e["graph"]] if mem not in live)
        elif op == "graph_destroy":
            del graphs[e["graph"]]
    return unresolved, graphs


def test_graph_pool_storages_live_until_the_graph_goes():
    """Storages a capture allocated stay allocations until graph_destroy;
    storages whose bytes overlap (the pool reuses its addresses within the
    capture) are one allocation, bound at their offsets in it."""
    x = torch.randn(512)
    at = _pool_allocator()

    def prog():
        g = ResettableGraph()
        g.capture_begin()
        a = at(0, 256)  # [0, 1024)
        torch.mul(x[:256], 2, out=a)
        b = at(1024, 256)  # [1024, 2048)
        torch.add(a, 1, out=b)
        del a  # dies in the capture: its bytes stay the graph's
        c = at(0, 64)  # [0, 256): reuses a's bytes
        torch.mul(b[:64], 3, out=c)
        del b
        d = at(512, 384)  # [512, 2048): spans a's tail and b
        torch.add(x[:384], 1, out=d)  # x: first met in the capture, as an input
        e = at(4096, 4)  # [4096, 4112): a block of its own
        torch.sum(c, 0, keepdim=True, out=e[:1])
        g.capture_end()
        for _ in range(3):
            x.copy_(torch.randn(512))
            g.replay()
        e.sum().item()
        del c, d, e
        x.add_(1)  # an op after the outputs died: the blocks stay (graph alive)
        g.reset()
        x.add_(1)
        g2 = ResettableGraph()  # a second graph, collected without reset
        g2.capture_begin()
        f = at(6144, 16)
        torch.mul(x[:16], 2, out=f)
        g2.capture_end()
        g2.replay()
        del f
        del g2
        x.add_(1)
    events, _, _ = record(prog, graph_class=ResettableGraph)
    ops = [e["op"] for e in events]
    i0, i1 = ops.index("capture_begin"), ops.index("capture_end")
    allocs = [e for e in events[i0:i1] if e["op"] == "alloc"]
    # a, b, c, d as one block [0, 2048), x (first met here, as an input: an
    # ordinary allocation), then e's block
    assert [e["size"] for e in allocs] == [2048, 512 * 4, 16], allocs
    blk, xm, eb = (e["memory"] for e in allocs)
    assert launches(events)[0]["bindings"][0]["memory"] == xm
    assert [blk, xm, eb] == [1, 2, 3], "memory ids stay consecutive"
    assert not [e for e in events[i0:i1] if e["op"] == "free"]
    ranges = [(b["memory"], b["range"]) for e in events[i0:i1] if e["op"] == "launch"
              for b in e["bindings"] if b["access"] == "write"]
    assert ranges == [(blk, [0, 1024]), (blk, [1024, 2048]), (blk, [0, 256]),
                      (blk, [512, 2048]), (eb, [0, 4])], ranges
    # nothing the graph writes is freed while it lives: replays resolve
    unresolved, _ = _replay_resolution(events)
    assert unresolved == 0
    destroys = [i for i, e in enumerate(events) if e["op"] == "graph_destroy"]
    assert [events[i]["graph"] for i in destroys] == [1, 2], destroys
    frees = {e["memory"]: i for i, e in enumerate(events) if e["op"] == "free"}
    last_replay1 = max(i for i, e in enumerate(events) if e["op"] == "replay" and e["graph"] == 1)
    # reset() gives the pool back: graph_destroy, then the blocks go, before the next op
    assert last_replay1 < destroys[0] < frees[blk] and destroys[0] < frees[eb]
    after_reset = [i for i, e in enumerate(events) if e["op"] == "launch"
                   and e["kernel"] == "aten::add_.Tensor"]
    assert after_reset[0] < destroys[0] < frees[blk] < after_reset[1], (after_reset, destroys)
    # the collected graph is destroyed at the next op, its block freed after it
    g2_alloc = [e for e in events if e["op"] == "alloc" and e["size"] == 64][-1]["memory"]
    assert destroys[1] < frees[g2_alloc] < after_reset[2]


def test_graph_alive_at_the_end_is_destroyed_before_the_final_frees():
    x = torch.randn(16)
    keep = []

    def prog():
        g = FakeGraph()
        keep.append(g)  # outlives the recording
        g.capture_begin()
        y = x * 2
        g.capture_end()
        g.replay()
        del y
    events, _, _ = record(prog, graph_class=FakeGraph)
    ops = [e["op"] for e in events]
    d = ops.index("graph_destroy")
    assert set(ops[d + 1:]) == {"free"}, ops[d:]
    assert _replay_resolution(events)[0] == 0


def test_every_binding_names_its_allocation_stream():
    def prog():
        m = nn.Linear(8, 4)
        loss = m(torch.randn(3, 8)).square().mean()
        loss.backward()
        loss.item()
    events, _, path = record(prog)
    stream_of = {}
    for e in events:
        if e["op"] == "alloc":
            stream_of[e["memory"]] = e["stream"]
        elif e["op"] == "launch":
            for b in e["bindings"]:
                assert b["stream"] == stream_of[b["memory"]]


def _record_cli(script, suffix, *flags):
    """``record_torch.py SCRIPT -o LOG --device cpu FLAGS...`` run to its
    end with status 0, the log a new temporary file ending in ``suffix``:
    the path and the finished process."""
    fd, path = tempfile.mkstemp(suffix=suffix)
    os.close(fd)
    cmd = [sys.executable, os.path.join(HERE, "record_torch.py"), script, "-o", path,
           "--device", "cpu", *flags]
    # Hide any GPU so the program runs on the CPU, where the recorder looks,
    # and leave blocking launches to the flag.
    env = {k: v for k, v in os.environ.items() if k != "CUDA_LAUNCH_BLOCKING"}
    env["CUDA_VISIBLE_DEVICES"] = ""
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    return path, r


def _run_program(name, expect_read=True):
    path, r = _record_cli(os.path.join(HERE, "programs", name + ".py"), ".jsonl.gz")
    s = check_log.check(path, expect_read=expect_read)
    assert s["ok"], s["errors"]
    return s, path, r.stderr


def test_programs_record_and_validate_cli():
    for name in ("gpt2_train_step", "resnet_train_step", "two_streams", "cuda_graph_replay",
                 "gpt2_graph_train", "gpt2_decode", "gpt2_amp_step", "gpt2_decode_graph",
                 "gpt2_oom_fallback"):
        s, path, _ = _run_program(name)
        assert s["launches"] > 10, (name, s)
        # each program ends with a read before its frees: a step's loss, the last token
        evs = gzip_events(path)
        tail = [e for e in evs if e["op"] != "free"]
        assert tail[-1]["op"] == "read", (name, tail[-1])
        if name == "resnet_train_step":
            accs = [b["access"] for e in evs if e["op"] == "launch" and "batch_norm" in e["kernel"]
                    and "backward" not in e["kernel"] for b in e["bindings"][3:5]]
            assert accs and set(accs) == {"read_write"}, accs


def test_the_device_assert_program_on_a_cpu_fails_its_embedding_launch():
    """On a CPU the bad token raises at once, in the embedding: one failed
    launch, no device fault, and the program goes on to its end."""
    s, path, stderr = _run_program("gpt2_device_assert", expect_read=False)
    assert ("1 operation(s) raised and are recorded as failed: aten::embedding (IndexError)"
            in stderr), stderr
    evs = gzip_events(path)
    failed = [e for e in evs if e["op"] == "launch" and e["outcome"] != "ok"]
    assert [e["kernel"] for e in failed] == ["aten::embedding"], failed
    assert failed[0]["outcome"]["failed"]["kind"] == "IndexError"
    assert not [e for e in evs if e["op"] == "device_fault"]
    assert s["counts"].get("failed") == 1


def test_the_header_says_launch_blocking_only_for_a_cuda_recording_with_the_variable_set():
    plain = {"op": "header", "format": "taintworld-log", "version": 1, "max_streams": 8}
    assert header("cuda", 8, {"CUDA_LAUNCH_BLOCKING": "1"}) == dict(plain, launch_blocking=True)
    # Left out otherwise, so that a log recorded without it keeps its bytes.
    assert header("cuda", 8, {}) == plain
    assert header("cuda", 8, {"CUDA_LAUNCH_BLOCKING": "0"}) == plain
    assert header("cpu", 8, {"CUDA_LAUNCH_BLOCKING": "1"}) == plain


def test_blocking_sets_the_variable_before_the_program_runs_and_only_with_the_flag():
    fd, script = tempfile.mkstemp(suffix=".py")
    with os.fdopen(fd, "w") as f:
        f.write("import os\nprint('blocking:', os.environ.get('CUDA_LAUNCH_BLOCKING'))\n")
    seen = [_record_cli(script, ".jsonl", *flags)[1].stdout.strip()
            for flags in (["--blocking"], [])]
    assert seen == ["blocking: 1", "blocking: None"], seen


def test_every_byte_an_operator_changes_or_reads_is_in_its_launchs_bindings():
    """The soundness probe (``tools/probe_record_torch.py``) over all its
    cases (``tools/probe_cases.py``: three dozen programs, some 2,800
    operators):
    each byte an operator changed lies in a write binding of its launch,
    each fresh output is bound, an operator with no launch changed nothing,
    bytes outside the read bindings perturbed change no result, and no
    allocation is freed while its storage still holds its bytes.  In a
    process of its own, since a recorder that leaves an index out of its
    read bindings can make the probe's perturbed re-run crash a kernel."""
    # Its logs go into this run's temporary directory, even if it crashes.
    r = subprocess.run([sys.executable, os.path.join(HERE, "probe_record_torch.py")],
                       capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, TMPDIR=tempfile.gettempdir()))
    said = (r.stdout[-6000:] + r.stderr[-3000:]).strip()
    assert r.returncode >= 0, f"the probe crashed (signal {-r.returncode}):\n{said}"
    assert r.returncode == 0, f"the probe's findings:\n{said}"
    last = r.stdout.splitlines()[-1]
    assert last.startswith("== ") and last.endswith("findings by check: {}"), said


def test_the_soundness_probe_catches_recorders_broken_on_purpose():
    """The probe above passing is worth something only while it can fail:
    its self-test breaks copies of the recorder (every access ``read``,
    spans one element short, spans starting one element late,
    ``_covers_span`` always true), and each must give findings while the
    unbroken recorder gives none."""
    r = subprocess.run([sys.executable, os.path.join(HERE, "probe_record_torch.py"), "--selftest"],
                       capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, TMPDIR=tempfile.gettempdir()))
    said = (r.stdout[-4000:] + r.stderr[-2000:]).strip()
    assert r.returncode == 0, said
    verdicts = [line.split(":")[0] for line in r.stdout.splitlines() if line[:4] in ("ok  ", "FAIL")]
    assert verdicts == ["ok   nothing broken", "ok   every access read", "ok   spans one element short",
                        "ok   _covers_span always true", "ok   spans start one element late"], said


# ---------------------------------------------------------------- runner


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
