#!/usr/bin/env python3
"""Differential soundness probe of the recorder (``tools/record_torch.py``),
on the CPU.

The recorder's unit tests check the bindings it writes for the operators
someone thought of.  This probe checks them against what each operator
*does*, for every operator a set of programs (``probe_cases.py``) runs: a
dispatch mode of its own, entered *below* the recorder's, sees each operator
the recorder passes on, snapshots the bytes of the storages it can reach
before and after the call, and holds the launch the recorder wrote for that
call to these rules:

W1  every byte the operator changed lies in a ``write`` or ``read_write``
    binding of its launch, on the memory id the recorder has for that
    storage (and an unmoved storage keeps its id); a storage that *moved*
    (``resize_``) carries its old bytes only through a launch that writes
    them (``W1-moved``);
W2  every fresh output's span lies in a ``write``/``read_write`` binding;
W3  an operator with no launch changed no byte and made no fresh data;
R1  re-run on copies of its argument storages whose bytes *outside* the
    ``read``/``read_write`` bindings are perturbed (every bit flipped; random
    bytes), the operator gives the same fresh outputs, the same non-tensor
    result, and the same bytes inside every write binding: it reads nothing
    the log says it does not (a ``write`` binding the operator does not
    wholly overwrite fails this too, the bytes it leaves showing through);
    a host ``read`` (``.item()``) counts its binding as read;
R2  in those re-runs, bytes outside every write binding keep the perturbed
    values they started with (a stronger W1);
L1  every binding names a memory id that is live (allocated, not freed);
L2  no allocation is freed while a storage of it still holds its bytes at
    the same address and size (the log would forget a live tensor's taint).

A taint replay is sound for a recorded program only if the log's bindings
over-approximate what its kernels read and write; each rule is a way that
could fail unseen (a byte written outside the bindings keeps a stale taint,
a byte read outside them launders one).  The probe found four such holes
when it was first written (aliased storages, moved storages, sparse tensors,
an RNN backward's workspace), all fixed in the recorder since; CI runs it
(``tools/test_record_torch.py``) so that a new one fails a test.

Findings with check ``NOTE`` are not violations: a storage that moved (the
recorder's ``aten::resize_`` copy is then checked by W1-moved and R1), an
operator with a sparse argument (its bytes are checked by W1/W2/W3, but it
is not re-run, as only strided arguments can be rebuilt), a re-run that
failed or did not reproduce the recorded run (not re-run then).

What the probe must not mistake for the program: the recorder calls
operators itself while it records one (a sparse tensor's ``_indices()`` and
``_values()``, ``_storage_parts``); those pass through the probe's mode,
which is below the recorder's.  The probe wraps the recorder's handlers
(``_on_op``, ``_on_failed_op``) and lets every operator called while one of
them runs on the same thread go through unprobed; otherwise the launch of
the program's operator is taken for the recorder's call's, and both are
wrongly judged.

Use::

    python3 tools/probe_record_torch.py [CASE_SUBSTRING ...]
    python3 tools/probe_record_torch.py --recorder /tmp/old/record_torch.py
    python3 tools/probe_record_torch.py --selftest

``--recorder`` probes another copy of the recorder (an older one, one
broken on purpose); ``--selftest`` breaks copies of this one in known ways
and checks that the probe says so.  It exits 1 when there are findings.
A recorder that leaves an index tensor's bytes out of its read bindings
can make a re-run crash (an index perturbed out of range, written through
by a kernel that trusts it: ``max_pool2d_with_indices_backward``): the
process then dies with a traceback, which is why the test runs the probe
in a process of its own.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import importlib.util
import json
import os
import runpy
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import check_log  # noqa: E402
import record_torch  # noqa: E402

__all__ = ["run_case", "run_cases", "case_report", "format_finding", "load_recorder",
           "violations", "NOTE"]

READS = ("read", "read_write")
WRITES = ("write", "read_write")

# The check of a finding that is not a violation (see the module's doc).
NOTE = "NOTE"

# Where the cases' tensors live and what the recorder takes for device
# memory: the CPU (as CI runs it), or ``cuda`` (``--device cuda``, on a
# machine with a GPU, for the kernels only a GPU runs: cuBLAS, cuDNN,
# fused optimizers, attention).  The probe's own snapshots and masks stay
# on the CPU either way.
DEVICE = "cpu"

# Operators that only reserve memory: their fresh output holds whatever the
# allocator left there, and no launch is expected (the recorder's own
# ``_ALLOC_ONLY``, restated so that a recorder that lost it is caught).
_ALLOC_ONLY = {"empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided",
               "empty_permuted"}


# ------------------------------------------------------------------ tensors


def _flat(value):
    """Tensors and storages inside an argument or result, in order."""
    if isinstance(value, (torch.Tensor, torch.UntypedStorage)):
        return [value]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flat(v)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _flat(v)]
    return []


def _strided(t) -> bool:
    return (isinstance(t, torch.Tensor) and t.layout == torch.strided
            and t.device.type == DEVICE and not t.is_quantized)


def _parts(t):
    """The strided tensors whose storages hold a tensor's or storage's data:
    itself, or a sparse tensor's indices and values.  Worked out here, not
    with the recorder's ``_storage_parts``, so that a recorder that gets
    them wrong is caught; called inside the probe's handler, where neither
    mode sees the calls."""
    if isinstance(t, torch.UntypedStorage):
        # Host memory, with ``--device cuda``, is not the log's.
        return [t] if t.device.type == DEVICE else []
    if _strided(t):
        return [t]
    try:
        if t.layout == torch.sparse_coo:
            return [t._indices(), t._values()]
        if t.layout in (torch.sparse_csr, torch.sparse_bsr):
            return [t.crow_indices(), t.col_indices(), t.values()]
        if t.layout in (torch.sparse_csc, torch.sparse_bsc):
            return [t.ccol_indices(), t.row_indices(), t.values()]
    except Exception:
        pass
    return []


def _storage(x):
    """(storage, key) of a tensor or a storage; the key is the address of
    the C++ StorageImpl, as the recorder's ``_by_key`` has it."""
    st = x if isinstance(x, torch.UntypedStorage) else x.untyped_storage()
    return st, st._cdata


def _bytes(st) -> torch.Tensor:
    """A copy of a storage's bytes."""
    t = torch.empty(0, dtype=torch.uint8, device=st.device).set_(st)
    return t.clone() if t.device.type == "cpu" else t.cpu()


def _mask(n, ranges) -> torch.Tensor:
    m = torch.zeros(n, dtype=torch.bool)
    for a, b in ranges:
        a, b = max(a, 0), min(b, n)
        if b > a:
            m[a:b] = True
    return m


def _span(t):
    """[first, end) byte offsets of a view inside its storage (all of a
    storage)."""
    if isinstance(t, torch.UntypedStorage):
        return 0, t.nbytes()
    isz, off = t.element_size(), t.storage_offset()
    if t.numel() == 0:
        return off * isz, off * isz
    last = off + sum((s - 1) * st for s, st in zip(t.shape, t.stride()))
    return off * isz, (last + 1) * isz


def _runs(idx) -> str:
    """Byte offsets as runs ``[a,b)``, the first eight."""
    idx = idx.tolist()
    if not idx:
        return "[]"
    runs, s, p = [], idx[0], idx[0]
    for i in idx[1:]:
        if i == p + 1:
            p = i
            continue
        runs.append((s, p + 1))
        s = p = i
    runs.append((s, p + 1))
    txt = ", ".join(f"[{a},{b})" for a, b in runs[:8])
    return txt + (" …" if len(runs) > 8 else "")


# ------------------------------------------------------------------ a call


class _Call:
    """One operator of the program as the probe saw it, and the events the
    recorder wrote for it.

    ``keys`` maps each storage snapshotted around the call to what is known
    of it: ``pre``/``post`` bytes and ``(ptr, nbytes)``, ``pre_mem`` and
    ``pre_base`` (the recorder's memory id and offset in it before the call,
    ``None`` when it had none for that place), ``post_mem``/``post_base``
    (the same when the launch was written), ``arg`` (an argument's).
    """

    def __init__(self, idx, func):
        self.idx = idx
        self.func = func
        self.events = []
        self.keys = {}
        self.raised = None
        self.out_keys = []      # storages of the results
        self.fresh = []         # (tensor or storage, key, byte span): results over new storages
        self.frozen = None      # the arguments, to rebuild for a re-run
        self.rng = None
        self.device_rng = None
        self.generators = []
        self.unstrided = False  # an argument the re-run cannot rebuild (sparse)

    @property
    def kernel(self) -> str:
        return record_torch.kernel_name(self.func)


class _Watch:
    """What the probe keeps over one recording: the calls, the storages it
    has met (weakly), the memory ids the log holds live, and the findings
    made while it runs (L1, L2)."""

    def __init__(self):
        self.calls = []         # the calls not yet checked
        self.count = 0          # the calls checked
        self.current = None     # the call the recorder's next events belong to
        self.findings = []
        self.seen = {}          # storage key -> weak reference
        self.live = set()       # memory ids alloc'd and not freed
        self.members = {}       # memory id -> its storages (recorder's _Member) at alloc
        self.rec = None
        self.ending = False     # the recorder frees everything as it exits
        self.inside = threading.local()  # depth of the recorder's handlers

    # --------------------------------------------------- the recorder's side
    def attach(self, rec):
        """Sees the recorder's events as it writes them, and marks the time
        it spends in its operator handlers (see the module's doc)."""
        self.rec = rec
        write = rec._emit
        inside = self.inside

        def emit(event):
            try:
                self.on_event(event)
            except Exception:
                self.findings.append(dict(check="PROBE", op=None,
                                          detail=traceback.format_exc()[-600:]))
            return write(event)
        rec._emit = emit

        def handler(orig):
            def run(*args, **kwargs):
                inside.depth = getattr(inside, "depth", 0) + 1
                try:
                    return orig(*args, **kwargs)
                finally:
                    inside.depth -= 1
            return run
        for name in ("_on_op", "_on_failed_op"):
            if hasattr(rec, name):
                setattr(rec, name, handler(getattr(rec, name)))

    def in_recorder(self) -> bool:
        return getattr(self.inside, "depth", 0) > 0

    def on_event(self, ev):
        op = ev["op"]
        rec = self.rec
        if op == "alloc":
            self.live.add(ev["memory"])
            a = rec._live.get(ev["memory"])
            self.members[ev["memory"]] = list(a.members) if a is not None else []
        elif op == "free":
            self._check_free(ev["memory"])
        elif op in ("launch", "read", "host_write"):
            for b in (ev["bindings"] if op == "launch" else [ev["binding"]]):
                if b["memory"] not in self.live:
                    self.findings.append(dict(check="L1", op=ev.get("kernel", op), event=ev,
                                              detail=f"binding names memory {b['memory']}, "
                                                     "which is not live"))
        call = self.current
        if call is None or op not in ("launch", "read", "host_write"):
            return
        call.events.append(ev)
        # Where each storage of the call is in the log as the event is written.
        for key, info in call.keys.items():
            m = rec._by_key.get(key)
            if m is not None and not m.alloc.freed:
                info["post_mem"], info["post_base"] = m.alloc.memory, m.ptr - m.alloc.ptr
                if (info.get("pre_mem") is None and m.ptr == info["pre_ptr"]
                        and m.nbytes == info["pre_n"]):
                    # First met by the recorder in this call, where it was before.
                    info["pre_mem"], info["pre_base"] = info["post_mem"], info["post_base"]
        for key in call.out_keys:
            m = rec._by_key.get(key)
            if key not in call.keys and m is not None:
                call.keys[key] = dict(post_mem=m.alloc.memory, post_base=m.ptr - m.alloc.ptr)

    def _check_free(self, memory):
        """L2: the allocation's storages have all died or moved away."""
        self.live.discard(memory)
        for m in self.members.pop(memory, []):
            if self.ending or m.nbytes == 0 or m.weak.expired():
                continue
            st = torch.UntypedStorage._new_with_weak_ptr(m.weak.cdata)
            call = self.current.kernel if self.current is not None else None
            if (st.data_ptr(), st.nbytes()) == (m.ptr, m.nbytes):
                self.findings.append(dict(check="L2", op=call, detail=(
                    f"memory {memory} freed while a storage of it still holds its "
                    f"{m.nbytes} bytes: the log forgets their taint")))
            else:
                self.findings.append(dict(check=NOTE, op=call, detail=(
                    f"memory {memory} freed as its storage moved ({m.nbytes} B -> "
                    f"{st.nbytes()} B)")))

    # --------------------------------------------------- storages
    def remember(self, st, key):
        if key not in self.seen:
            self.seen[key] = st._weak_ref()

    def alive(self):
        """The storages met so far that are still alive, by key."""
        out = {}
        for key, w in list(self.seen.items()):
            if torch.UntypedStorage._expired(w):
                torch.UntypedStorage._free_weak_ref(w)
                del self.seen[key]
            else:
                out[key] = torch.UntypedStorage._new_with_weak_ptr(w)
        return out

    def settle(self):
        """Checks the calls kept so far (``check_call``) into ``findings``
        and lets them go, with the random state as it was: a check re-runs
        each call from its own."""
        if not self.calls:
            return
        rng = torch.get_rng_state()
        device_rng = torch.cuda.get_rng_state() if DEVICE == "cuda" else None
        try:
            for call in self.calls:
                try:
                    self.findings.extend(check_call(call))
                except Exception:
                    self.findings.append(dict(check="PROBE", op=call.kernel,
                                              detail=traceback.format_exc()[-600:]))
        finally:
            torch.set_rng_state(rng)
            if device_rng is not None:
                torch.cuda.set_rng_state(device_rng)
        self.count += len(self.calls)
        self.calls = []

    def forget_all(self):
        for w in self.seen.values():
            torch.UntypedStorage._free_weak_ref(w)
        self.seen.clear()

    def place_in_log(self, key, st):
        """The recorder's (memory id, offset) for a storage where it is now;
        (None, None) when it has none."""
        m = self.rec._by_key.get(key) if self.rec is not None else None
        if (m is None or m.alloc.freed or m.weak.expired()
                or (m.ptr, m.nbytes) != (st.data_ptr(), st.nbytes())):
            return None, None
        return m.alloc.memory, m.ptr - m.alloc.ptr


class _ProbeMode(TorchDispatchMode):
    """Below the recorder's mode: snapshots around each operator of the
    program (the recorder's own calls go through untouched)."""

    def __init__(self, watch: _Watch):
        super().__init__()
        self.watch = watch

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        w = self.watch
        if w.in_recorder():
            return func(*args, **kwargs)
        # The calls before this one are whole (the recorder wrote their
        # events): checked now, and their snapshots let go, so that a whole
        # program's calls are not all held at once.
        w.settle()
        call = _Call(w.count, func)
        with torch.no_grad():
            found = _flat(args) + _flat(kwargs)
            call.unstrided = any(not isinstance(x, torch.UntypedStorage) and not _strided(x)
                                 and (x.device.type == DEVICE or x.layout != torch.strided)
                                 for x in found)
            storages = {}
            for x in found:
                for p in _parts(x):
                    st, key = _storage(p)
                    storages[key] = st
                    w.remember(st, key)
            args_keys = set(storages)
            for key, st in w.alive().items():
                storages.setdefault(key, st)
            for key, st in storages.items():
                mem, base = w.place_in_log(key, st)
                call.keys[key] = dict(pre_ptr=st.data_ptr(), pre_n=st.nbytes(), pre=_bytes(st),
                                      pre_mem=mem, pre_base=base, arg=key in args_keys, st=st)
            call.rng = torch.get_rng_state()
            call.device_rng = torch.cuda.get_rng_state() if DEVICE == "cuda" else None
            call.generators = [(g, g.get_state()) for g in list(args) + list(kwargs.values())
                               if isinstance(g, torch.Generator)]
            call.frozen = (_freeze(list(args)), {k: _freeze(v) for k, v in kwargs.items()})
        w.current = None
        try:
            out = func(*args, **kwargs)
        except Exception as exc:
            call.raised = repr(exc)
            w.calls.append(call)
            w.current = call
            raise
        with torch.no_grad():
            for info in call.keys.values():
                st = info.pop("st")
                info["post_ptr"], info["post_n"] = st.data_ptr(), st.nbytes()
                info["post"] = _bytes(st)
            for o in _flat(out):
                for p in _parts(o):
                    st, key = _storage(p)
                    call.out_keys.append(key)
                    w.remember(st, key)
                    if key not in call.keys:
                        call.fresh.append((p, key, _span(p)))
        w.calls.append(call)
        w.current = call
        return out


# ------------------------------------------------------------------ re-runs


class _Frozen:
    """A strided tensor argument as it was at the call: its storage (by
    key) and its view of it."""

    def __init__(self, t):
        self.key = _storage(t)[1]
        self.dtype, self.offset = t.dtype, t.storage_offset()
        self.shape, self.stride = tuple(t.shape), t.stride()
        self.conj, self.neg = t.is_conj(), t.is_neg()


class _FrozenStorage:
    def __init__(self, st):
        self.key = st._cdata


class _Host:
    """A tensor that is not the log's memory (a host tensor, with
    ``--device cuda``: an optimizer's step count, a scalar) as it was at
    the call; each re-run gets a copy of its own."""

    def __init__(self, t):
        self.t = t.detach().clone()


def _freeze(v):
    if isinstance(v, torch.Tensor):
        if _strided(v):
            return _Frozen(v)
        return _Host(v) if v.device.type != DEVICE and v.layout == torch.strided else None
    if isinstance(v, torch.UntypedStorage):
        return _FrozenStorage(v)
    if isinstance(v, list):
        return [_freeze(x) for x in v]
    if isinstance(v, tuple):
        return tuple(_freeze(x) for x in v)
    return v


def _rebuild(v, storages):
    """The argument again, over ``storages`` (key -> a copy)."""
    if isinstance(v, _FrozenStorage):
        return storages[v.key]
    if isinstance(v, _Host):
        return v.t.clone()
    if isinstance(v, _Frozen):
        st = storages[v.key]
        t = torch.empty(0, dtype=v.dtype, device=st.device).set_(st, v.offset, v.shape, v.stride)
        if v.conj:
            t = torch.ops.aten._conj(t)
        if v.neg:
            t = torch.ops.aten._neg_view(t)
        return t
    if isinstance(v, list):
        return [_rebuild(x, storages) for x in v]
    if isinstance(v, tuple):
        return tuple(_rebuild(x, storages) for x in v)
    return v


def _elements(t) -> torch.Tensor:
    """A result's values as bytes, whatever its layout in memory."""
    t = t.detach().clone().resolve_conj().resolve_neg().contiguous().reshape(-1)
    return t.view(torch.uint8).cpu()


def _rerun(call, data):
    """Runs the call again on new storages holding ``data`` (key -> bytes)
    with the random state it had.  Returns the bytes of its results over
    new storages, the bytes of each argument storage after it (and whether
    it moved), and its non-tensor results."""
    storages, places = {}, {}
    for key, d in data.items():
        st = torch.UntypedStorage(d.numel(), device=DEVICE)
        torch.empty(0, dtype=torch.uint8, device=DEVICE).set_(st).copy_(d)
        storages[key] = st
        places[key] = (st.data_ptr(), st.nbytes())
    args, kwargs = call.frozen
    args = _rebuild(list(args), storages)
    kwargs = {k: _rebuild(v, storages) for k, v in kwargs.items()}
    torch.set_rng_state(call.rng)
    if call.device_rng is not None:
        torch.cuda.set_rng_state(call.device_rng)
    for g, state in call.generators:
        g.set_state(state)
    with torch.no_grad():
        out = call.func(*args, **kwargs)
    after = {key: (_bytes(st), (st.data_ptr(), st.nbytes()) != places[key])
             for key, st in storages.items()}
    ours = {st._cdata for st in storages.values()}
    results, others = [], []
    for o in (out if isinstance(out, (list, tuple)) else [out]):
        for t in _flat(o):
            for p in (_parts(t) if isinstance(t, torch.Tensor) else []):
                if p.untyped_storage()._cdata not in ours:
                    results.append(_elements(p))
        if not isinstance(o, (torch.Tensor, list, tuple)):
            others.append(repr(o))  # a NaN equals itself as text
    return results, after, others


# ------------------------------------------------------------------ checks


def _ranges(call, mem, base, nbytes, kinds):
    """[start, end) offsets, in the storage, of the call's bindings on
    memory ``mem`` whose access is one of ``kinds`` (a host ``read``'s
    binding, which has no access, counts as ``read``)."""
    out = []
    for ev in call.events:
        if ev["op"] == "launch":
            bindings = ev["bindings"]
        elif ev["op"] == "host_write" and ev.get("outcome") == "ok" and "write" in kinds:
            bindings = [dict(ev["binding"], access="write")]
        elif ev["op"] == "read" and "read" in kinds:
            bindings = [dict(ev["binding"], access="read")]
        else:
            continue
        for b in bindings:
            if b["memory"] != mem or b.get("access") not in kinds:
                continue
            r = b.get("range")
            # No range: the whole allocation, which may run past the storage.
            out.append((-base, 1 << 62) if r is None else (r[0] - base, r[1] - base))
    return out


def check_call(call):
    """The findings of W1, W2, W3, R1 and R2 on one call."""
    if call.raised is not None:
        return []
    found = []
    # A host copy onto the device writes as a launch does (``--device cuda``).
    launches = [ev for ev in call.events if ev["op"] == "launch"
                or (ev["op"] == "host_write" and ev.get("outcome") == "ok")]
    reads = [ev for ev in call.events if ev["op"] == "read"]
    kernel = call.kernel

    def finding(check, detail):
        found.append(dict(check=check, op=kernel, detail=detail, launches=launches))

    if call.unstrided:
        found.append(dict(check=NOTE, op=kernel, detail="an argument is not strided (sparse): "
                                                        "bytes checked, not re-run"))
    for key, info in call.keys.items():
        if "pre" not in info or "post" not in info:
            continue
        if (info["pre_ptr"], info["pre_n"]) != (info["post_ptr"], info["post_n"]):
            # Moved: its memory id is gone, and the bytes copied across are
            # carried only by a launch writing them in the new memory (the
            # recorder's ``aten::resize_`` copy, or the call's own write).
            n = min(info["pre_n"], info["post_n"])
            mem = info.get("post_mem")
            written = (_mask(info["post_n"], _ranges(call, mem, info.get("post_base", 0),
                                                     info["post_n"], ("write",)))
                       if mem is not None else torch.zeros(info["post_n"], dtype=torch.bool))
            carried = (~written[:n]).nonzero().flatten()
            if carried.numel() and info.get("pre_mem") is not None:
                finding("W1-moved", f"storage moved ({info['pre_n']} B -> {info['post_n']} B): "
                                    f"memory {info['pre_mem']} is freed and bytes {_runs(carried)} "
                                    f"of it carried into "
                                    f"{'memory ' + str(mem) if mem else 'a storage no launch binds'} "
                                    "without a write binding")
            continue
        changed = (info["pre"] != info["post"]).nonzero().flatten()
        if changed.numel() == 0:
            continue
        mem = info.get("post_mem")
        if not launches:
            finding("W3", f"no launch, but bytes {_runs(changed)} of a {info['pre_n']}-byte "
                          f"storage changed (memory {mem or info.get('pre_mem')})")
            continue
        if mem is None:
            finding("W1", f"bytes {_runs(changed)} changed in a storage no binding names")
            continue
        if info.get("pre_mem") is not None and info["pre_mem"] != mem:
            finding("W1-remapped", f"storage unmoved, but its memory id went from "
                                   f"{info['pre_mem']} to {mem}")
        written = _mask(info["post_n"], _ranges(call, mem, info["post_base"], info["post_n"], WRITES))
        bad = changed[~written[changed]]
        if bad.numel():
            finding("W1", f"bytes {_runs(bad)} of memory {mem} changed outside every write binding")
    for o, key, (s, t) in call.fresh:
        if t <= s:
            continue
        mem = call.keys.get(key, {}).get("post_mem")
        if not launches:
            if call.func._schema.name.split("::")[-1] not in _ALLOC_ONLY:
                finding("W3", f"no launch, but a fresh output ({t - s} B) was made")
            continue
        if mem is None:
            finding("W2", f"fresh output ([{s},{t}) of a new storage) not bound")
            continue
        n = _storage(o)[0].nbytes()
        written = _mask(n, _ranges(call, mem, call.keys[key].get("post_base", 0), n, WRITES))
        if not bool(written[s:t].all()):
            finding("W2", f"fresh output span [{s},{t}) of memory {mem} not covered by writes")
    if (launches or reads) and not call.unstrided:
        found.extend(_perturbed(call, launches))
    return found


def _perturbed(call, launches):
    """R1 and R2: the call re-run with the bytes its read bindings leave out
    perturbed, twice (every bit flipped; random bytes)."""
    found = []
    kernel = call.kernel
    keys = [k for k, i in call.keys.items() if i.get("arg") and "pre" in i]
    start = {k: call.keys[k]["pre"].clone() for k in keys}
    read, written = {}, {}
    for k in keys:
        i = call.keys[k]
        n, mem = i["pre_n"], i.get("pre_mem")
        read[k] = (_mask(n, _ranges(call, mem, i["pre_base"], n, READS)) if mem is not None
                   else torch.zeros(n, dtype=torch.bool))
        mem = i.get("post_mem")
        written[k] = (_mask(i["post_n"], _ranges(call, mem, i["post_base"], i["post_n"], WRITES))
                      if mem is not None else torch.zeros(i["post_n"], dtype=torch.bool))
    gen = torch.Generator().manual_seed(1234 + call.idx)
    variants = {"unperturbed": start, "flipped": {}, "random": {}}
    for k in keys:
        d, unread = start[k], ~read[k]
        a, b = d.clone(), d.clone()
        a[unread] = ~d[unread]
        b[unread] = torch.randint(0, 256, (int(unread.sum()),), generator=gen, dtype=torch.uint8)
        variants["flipped"][k], variants["random"][k] = a, b
    try:
        runs = {name: _rerun(call, data) for name, data in variants.items()}
    except Exception as exc:
        return [dict(check=NOTE, op=kernel, detail=f"re-run failed: {exc!r}"[:300])]
    base_results, base_after, base_others = runs["unperturbed"]
    for k in keys:
        post, moved = base_after[k]
        if (not moved and call.keys[k]["post_n"] == post.numel()
                and not torch.equal(post, call.keys[k]["post"])):
            return [dict(check=NOTE, op=kernel, detail="an unperturbed re-run differs from the "
                                                       "recorded call: not re-run")]
    for name in ("flipped", "random"):
        results, after, others = runs[name]

        def finding(check, detail):
            found.append(dict(check=check, op=kernel, launches=launches,
                              detail=f"{detail} ({name} run)"))
        if len(results) != len(base_results) or any(
                x.shape != y.shape or not torch.equal(x, y) for x, y in zip(results, base_results)):
            finding("R1", "fresh outputs differ when bytes outside the read bindings are perturbed")
        if others != base_others:
            finding("R1", f"non-tensor result differs when bytes outside the read bindings are "
                          f"perturbed: {others} vs {base_others}")
        for k in keys:
            post, moved = after[k]
            base_post, base_moved = base_after[k]
            if moved or base_moved:
                if post.numel() == base_post.numel():
                    w = (written[k] if written[k].numel() == post.numel()
                         else torch.ones(post.numel(), dtype=torch.bool))
                    diff = ((post != base_post) & w).nonzero().flatten()
                    if diff.numel():
                        finding("R1-moved", f"storage moved; bytes {_runs(diff)} of its new memory "
                                            "depend on bytes outside the read bindings")
                continue
            mem = call.keys[k].get("post_mem")
            diff = ((post != base_post) & written[k]).nonzero().flatten()
            if diff.numel():
                finding("R1", f"bytes {_runs(diff)} inside write bindings of memory {mem} differ "
                              f"when bytes outside the read bindings "
                              f"({_runs(read[k].nonzero().flatten())}) are perturbed")
            kept = ((post != variants[name][k]) & ~written[k]).nonzero().flatten()
            if kept.numel():
                finding("R2", f"bytes {_runs(kept)} of memory {mem} changed outside every "
                              "write binding")
    return found


# ------------------------------------------------------------------ running


def load_recorder(path):
    """The module of a copy of the recorder at ``path`` (an older one, one
    broken on purpose), imported under a name of its own so that it leaves
    ``record_torch`` as it is."""
    name = f"_probed_recorder_{abs(hash(os.path.abspath(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def _quiet_and_fixed():
    """One thread (an operator's result then does not depend on how work
    was split, so a re-run reproduces it), the global random state and the
    thread count given back afterwards, and PyTorch's warnings (an out=
    argument resized, ...) kept off the output."""
    import warnings
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng(devices=[0] if DEVICE == "cuda" else []), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        torch.set_num_threads(threads)


def run_case(name, fn, recorder=None, log_dir=None):
    """Runs one case (``fn``) under the recorder with the probe below it;
    returns (calls probed, findings).  ``recorder``: the recorder's module
    (``record_torch`` by default).  The log goes into ``log_dir`` (a new
    temporary directory, removed after, by default) and is put through
    ``check_log.py`` as every recorded log is."""
    recorder = recorder or record_torch
    with contextlib.ExitStack() as stack:
        if log_dir is None:
            log_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="probe-"))
        stack.enter_context(_quiet_and_fixed())
        path = os.path.join(log_dir, name + ".jsonl")
        torch.manual_seed(0)
        watch = _Watch()
        rec = recorder.Recorder(path, device=DEVICE)
        found = []
        try:
            with _ProbeMode(watch):
                with rec:
                    watch.attach(rec)
                    try:
                        # The cases make their tensors where the default
                        # device is; a program puts them where it means to.
                        with (contextlib.nullcontext() if getattr(fn, "own_device", False)
                              else torch.device(DEVICE)):
                            fn()
                    finally:
                        watch.ending = True
        except Exception:
            found.append(dict(check="CASE", op=None, detail=traceback.format_exc()[-800:]))
        watch.current = None
        watch.settle()
        found.extend(watch.findings)
        watch.forget_all()
        if rec.errors:
            found.append(dict(check="RECORDER", op=None,
                              detail="could not record: " + "; ".join(rec.errors)[:600]))
        summary = check_log.check(path)
        if not summary["ok"]:
            found.append(dict(check="CHECK_LOG", op=None, detail="; ".join(summary["errors"])[:600]))
        return watch.count, found


def program_case(path):
    """A case that runs the program at ``path`` as ``__main__`` (one of
    ``tools/programs/``, say: what the shipped logs were recorded from)."""
    def run():
        argv = sys.argv
        sys.argv = [path]
        try:
            runpy.run_path(path, run_name="__main__")
        finally:
            sys.argv = argv
    run.own_device = True
    return os.path.splitext(os.path.basename(path))[0], run


def run_cases(cases=None, recorder=None, log_dir=None):
    """Every case (``probe_cases.CASES`` by default) through the probe:
    ``{case name: (calls probed, findings)}``."""
    if cases is None:
        from probe_cases import CASES as cases
    return {name: run_case(name, fn, recorder, log_dir) for name, fn in cases}


def violations(findings):
    return [f for f in findings if f["check"] != NOTE]


def format_finding(f, logged=2) -> str:
    """One finding, with the first ``logged`` launches of its call."""
    txt = f"[{f['check']}] {f.get('op')}: {f['detail']}"
    for ev in (f.get("launches") or [])[:logged]:
        txt += "\n    log: " + json.dumps(ev, separators=(",", ":"))
    if f.get("event"):
        txt += "\n    log: " + json.dumps(f["event"], separators=(",", ":"))
    return txt


def case_report(name, calls, found, notes=False) -> str:
    """A case's count of calls and findings, and its findings (each told
    once; the notes too with ``notes``)."""
    bad = violations(found)
    lines = [f"{name}: {calls} calls, {len(bad)} findings"
             + (f", {len(found) - len(bad)} notes" if len(found) > len(bad) else "")]
    told = set()
    for f in found if notes else bad:
        said = (f["check"], f.get("op"), f["detail"][:60])
        if said not in told:
            told.add(said)
            lines.append("  " + format_finding(f).replace("\n", "\n  "))
    return "\n".join(lines)


# ------------------------------------------------------------------ self-test

# Cases the self-test runs each broken recorder through: quick ones that
# among them write through views, out= arguments and in place.
_SELFTEST_CASES = ("elementwise_views", "inplace_on_views", "out_variants", "linalg",
                   "foreach_ops")


def _breakages():
    """(what is broken, how to break a fresh copy of the recorder) pairs."""
    def all_read(m):
        m.Recorder._access_for = lambda self, *a: "read"

    def span_short(m):
        span = m._span_elems

        def short(t):
            a, b = span(t)
            return (a, b - 1) if b - a > 1 else (a, b)
        m._span_elems = short

    def covers_always(m):
        m._covers_span = lambda t: True

    def late_start(m):
        span = m._span_elems

        def late(t):
            a, b = span(t)
            return (a + 1, b) if b - a > 1 else (a, b)
        m._span_elems = late
    return [("every access read", all_read), ("spans one element short", span_short),
            ("_covers_span always true", covers_always), ("spans start one element late", late_start)]


def selftest() -> int:
    """Breaks copies of the recorder in known ways; each must be caught,
    and the unbroken one must pass the same cases.  Returns the exit
    status."""
    from probe_cases import CASES
    cases = [c for c in CASES if c[0] in _SELFTEST_CASES]
    status = 0
    path = os.path.join(HERE, "record_torch.py")
    for what, breaks in [("nothing broken", None)] + _breakages():
        module = load_recorder(path)
        if breaks is not None:
            breaks(module)
        results = run_cases(cases, module)
        by = {}
        for _, found in results.values():
            for f in violations(found):
                by[f["check"]] = by.get(f["check"], 0) + 1
        ok = bool(by) == (breaks is not None)
        status |= not ok
        print(f"{'ok  ' if ok else 'FAIL'} {what}: findings by check {by}", flush=True)
    return status


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("cases", nargs="*", help="run only the cases whose name holds one of these")
    p.add_argument("--recorder", help="probe this copy of record_torch.py instead")
    p.add_argument("--notes", action="store_true", help="show the notes too")
    p.add_argument("--logs", help="keep the logs in this directory")
    p.add_argument("--selftest", action="store_true",
                   help="check that the probe catches recorders broken on purpose")
    p.add_argument("--program", action="append", default=[], metavar="FILE",
                   help="probe this program instead of the cases (repeatable); not one "
                        "that captures CUDA graphs, whose captures the re-runs would join")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="run the cases on this device, the recorder recording it (default cpu)")
    ns = p.parse_args(argv)
    global DEVICE
    DEVICE = ns.device
    if DEVICE == "cuda":
        # A re-run must give the same bytes: deterministic kernels where
        # PyTorch has them (a finding on one it has not is to be read with
        # that in mind), and cuBLAS's workspace fixed for it.
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.backends.cudnn.benchmark = False
    # A re-run with perturbed bytes can crash a kernel that trusts them (an
    # index outside the read bindings, made wild, in a recorder that leaves
    # it out): the traceback then says so, after the last case printed,
    # which is the one that crashed.
    faulthandler.enable()
    if ns.selftest:
        return selftest()
    from probe_cases import CASES
    cases = [c for c in CASES if not ns.cases or any(s in c[0] for s in ns.cases)]
    if ns.program:
        cases = [program_case(path) for path in ns.program]
    recorder = load_recorder(ns.recorder) if ns.recorder else None
    if ns.logs:
        os.makedirs(ns.logs, exist_ok=True)
    began = time.monotonic()
    calls, total = 0, {}
    for name, fn in cases:
        n, found = run_case(name, fn, recorder, ns.logs)
        print(case_report(name, n, found, ns.notes), flush=True)
        calls += n
        for f in violations(found):
            total[f["check"]] = total.get(f["check"], 0) + 1
    print(f"== {len(cases)} cases, {calls} calls, {time.monotonic() - began:.1f} s; "
          f"findings by check: {total}")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
