#!/usr/bin/env python3
"""Record a PyTorch program as a taintworld launch log (format version 1).

The log is what ``taintworld replay`` reads (SPEC.md section 7): one JSON
object a line, header first.  This recorder sits in PyTorch's dispatcher as a
``TorchDispatchMode`` and turns what it sees into log events:

* every tensor *storage* on the device is an allocation (``alloc`` when the
  recorder first sees it, ``free`` once the storage has died); storages a
  CUDA graph's capture made live in the graph's private pool and stay live
  until the graph is reset or collected (``graph_destroy``), overlapping ones
  merged into one *pool block* (see ``Recorder._finish_capture``);
* every aten operator that does work on the device is a ``launch`` whose
  bindings are the byte spans of the tensors it touches, with the access read
  from the operator's schema (plus the refinements listed in
  ``docs/recording.md`` and in ``Recorder._access_for`` below);
* device-to-host copies (``.item()``, ``.cpu()``, ``.tolist()``) are ``read``
  events and host-to-device copies are ``host_write`` events;
* CUDA graph capture, replay and reset (or collection) become
  ``capture_begin`` / ``capture_end`` / ``replay`` / ``graph_destroy``;
* an operator that raises (out of memory, a launch the driver rejects, a
  check that fails before the launch) is recorded as what it would have
  done with a failed outcome (``error_of`` gives its kind and message), its
  fresh outputs left out since they were never made, and a graph replay
  that raises as a failed ``replay``; a sticky CUDA error, which loses the
  device, is first a ``device_fault``, written at the call that reports it
  (a later one, unless ``--blocking`` makes each launch wait for its
  kernel).  The exception still reaches the program.

Two ways to use it::

    with Recorder("run.jsonl.gz"):
        train_step()

    python tools/record_torch.py SCRIPT.py -o run.jsonl.gz [--device cuda|cpu] [--blocking] [-- ARGS...]

Why a dispatch mode: it sees every operator below autograd, on every thread
that autograd uses (the mode is part of the thread-local state the autograd
engine carries to its worker threads), without changing the program.  What it
cannot see is work that never goes through the dispatcher (custom CUDA
extensions called directly, cuBLAS workspaces, NCCL's own buffers).

Kernel names are ``aten::NAME`` with ``.OVERLOAD`` appended when the overload
is not the default one (``aten::mm``, ``aten::add.Tensor``).

Stream ids: CUDA stream ids are large encoded integers, and the log folds ids
onto ``max_streams`` slots by ``id % max_streams``, so two real streams could
fold onto one slot.  The recorder therefore maps streams to small stable
integers in the order it first meets them; the default stream of the current
device is always ``0``.  In ``device="cpu"`` mode every event is on stream 0.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import runpy
import sys
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures.thread import _worker as _pool_worker
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["Recorder", "kernel_name"]

FORMAT = "taintworld-log"
VERSION = 1

# Operators that do no work on device memory: they only make a new tensor
# *header* over an existing storage, change a tensor's metadata, or tell the
# allocator something.  The schema alias rule (every return aliases an input,
# nothing written) catches most views; these are the ones whose schema does not
# say so (``_unsafe_view``), the in-place metadata ops, and bookkeeping ops.
_NO_LAUNCH = {
    "detach", "detach_", "alias", "view", "_unsafe_view", "_reshape_alias",
    "t", "t_", "transpose", "transpose_", "permute", "expand", "expand_as",
    "slice", "select", "as_strided", "as_strided_", "unsqueeze", "unsqueeze_",
    "squeeze", "squeeze_", "split", "split_with_sizes", "unbind", "chunk",
    "narrow", "diagonal", "unfold", "view_as", "view_as_real",
    "view_as_complex", "_conj", "_neg_view", "lift_fresh", "lift",
    "set_", "record_stream", "is_same_size", "is_pinned",
    "_has_compatible_shallow_copy_type", "resize_as_sparse_",
}

# Operators that only reserve memory: the output is allocated (so it appears
# on the stream current now) but no kernel runs and no byte is written.
_ALLOC_ONLY = {
    "empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided",
    "empty_permuted",
}

# In-place operators that overwrite every element of ``self`` without reading
# it.  Their schema marks ``self`` mutated (``Tensor(a!)``), which would make it
# ``read_write``; they are ``write`` (when the tensor covers its whole span,
# see ``_covers_span``).
_OVERWRITE_SELF = {
    "copy_", "fill_", "zero_", "normal_", "uniform_", "random_", "bernoulli_",
    "exponential_", "geometric_", "cauchy_", "log_normal_", "_copy_from",
    "_foreach_zero_", "_foreach_copy_",
}

# Batch-norm operators that, in training, update ``running_mean`` and
# ``running_var`` in place although their schema does not mark them mutated.
# The value is the name of the argument that says "training", or None when the
# operator always updates them.
_BN_UPDATES_RUNNING = {
    "native_batch_norm": "training",
    "cudnn_batch_norm": "training",
    "miopen_batch_norm": "training",
    "batch_norm_update_stats": None,
    "batch_norm_gather_stats_with_counts": None,
}
_BN_RUNNING_ARGS = ("running_mean", "running_var")

# RNN backward operators that write into the workspace their forward left,
# although their schema marks it read only: the CPU's oneDNN LSTM backward
# was seen to change 397 bytes of its ``workspace`` (the recorder's
# soundness probe, a CPU LSTM), and cuDNN's most of its ``reserve`` (on an
# H100, PyTorch 2.11, cuDNN 9.19: 29,092 of a one-layer LSTM's 36,096
# bytes; a GRU's and a plain RNN's too).  MIOpen's is taken to be the
# same (not seen).  They are ``read_write``.
_BACKWARD_WRITES_WORKSPACE = {
    ("mkldnn_rnn_layer_backward", "workspace"),
    ("_cudnn_rnn_backward", "reserve"),
    ("miopen_rnn_backward", "reserve"),
}

# Operators that point their tensor arguments at other memory as they run
# (``set_`` on each): cuDNN's flattening of an RNN's weights copies them
# into one new buffer and makes each weight a view of it.  Bound after
# the call, the weights would be the new buffer, read, and the old ones
# unbound; their bindings are taken from views made before the call
# (seen on an H100 by the soundness probe, ``--device cuda``).
_REPOINTS_ARGUMENTS = {"_cudnn_rnn_flatten_weight"}

# Copies that may cross between host and device.
_COPY_OPS = {"copy_", "_copy_from", "_to_copy", "_copy_from_and_resize"}


def kernel_name(func) -> str:
    """The readable name a launch gets: ``aten::mm``, ``aten::add.Tensor``."""
    schema = func._schema
    if schema.overload_name:
        return f"{schema.name}.{schema.overload_name}"
    return schema.name


def _base_name(func) -> str:
    return func._schema.name.split("::")[-1]


def _flatten(value) -> List[torch.Tensor]:
    """Tensors inside an argument or return value (lists like ``Tensor?[]``)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        out = []
        for v in value:
            out.extend(_flatten(v))
        return out
    return []


def _storage_parts(t: torch.Tensor) -> List[torch.Tensor]:
    """The strided tensors that hold a tensor's data: itself, or a sparse
    tensor's indices and values, whose storages are the memory a kernel
    reading or writing the sparse tensor touches.  Any other layout (mkldnn,
    nested) is itself, which ``_is_device`` passes over."""
    layout = t.layout
    if layout == torch.strided:
        return [t]
    try:
        if layout == torch.sparse_coo:
            return [t._indices(), t._values()]
        if layout in (torch.sparse_csr, torch.sparse_bsr):
            return [t.crow_indices(), t.col_indices(), t.values()]
        if layout in (torch.sparse_csc, torch.sparse_bsc):
            return [t.ccol_indices(), t.row_indices(), t.values()]
    except Exception:
        pass
    return [t]


def _views(value):
    """An argument with each tensor in it replaced by a view of what it is
    now, which stays so when the tensor is pointed elsewhere."""
    if isinstance(value, torch.Tensor):
        return value.detach()
    if isinstance(value, (list, tuple)):
        return type(value)(_views(v) for v in value)
    return value


def _span_elems(t: torch.Tensor) -> Tuple[int, int]:
    """[first, last+1) element offsets of the view inside its storage."""
    off = t.storage_offset()
    if t.numel() == 0:
        return off, off
    last = off
    for size, stride in zip(t.shape, t.stride()):
        last += (size - 1) * stride
    return off, last + 1


def _covers_span(t: torch.Tensor) -> bool:
    """True when the view's elements are exactly the bytes of its span.

    A ``write`` binding releases every byte of its range.  A view with gaps
    (``x[:, 0]``) or with repeated elements (``expand``) writes fewer bytes
    than its span, so releasing the span could clear a failure from bytes that
    were never written.  Such writes are recorded as ``read_write`` instead:
    that checks the whole span first, and releases it only when none of it
    carries a failure, which is sound.
    """
    n = t.numel()
    if n == 0:
        return True
    first, end = _span_elems(t)
    if end - first != n:
        return False
    # Same count of elements as span positions: dense unless two elements
    # share an address.  Walk the dims from the smallest stride up and check
    # each stride equals the number of elements the smaller dims cover.
    dims = sorted(
        ((st, sz) for sz, st in zip(t.shape, t.stride()) if sz != 1),
        key=lambda p: p[0],
    )
    expected = 1
    for st, sz in dims:
        if st != expected:
            return False
        expected *= sz
    return True


class _Graph:
    """A CUDA graph as the recorder tracks it, from ``capture_begin`` on.

    ``alive`` turns false when the graph object is reset or garbage-collected
    (or recording ends); until then the storages its capture allocated stay
    live allocations of the log, as PyTorch keeps them reserved in the
    graph's private memory pool.
    """

    __slots__ = ("gid", "stream", "alive", "first_memory", "allocs", "finalizer", "doomed")

    def __init__(self, stream: int, first_memory: int):
        self.gid: Optional[int] = None  # set at capture_end
        self.stream = stream
        self.alive = True
        self.first_memory = first_memory  # first memory id handed out in the capture
        self.allocs: List["_Alloc"] = []  # allocations announced during the capture
        self.finalizer = None
        # A launch on its stream failed inside the window: the window is
        # doomed (SPEC section 6), and the replay makes no graph of it, so
        # the log names the graph in no replay and no graph_destroy.
        self.doomed = False


class _Alloc:
    """One allocation of the log.

    Usually one storage.  A *pool block* (memory a CUDA graph's capture
    allocated) may hold several storages at different offsets: PyTorch's
    allocator reuses a captured graph's pool addresses within the capture,
    and storages whose bytes overlap are one allocation of the log.
    ``holders`` are the graphs that keep a pool block reserved (empty for an
    ordinary allocation).
    """

    __slots__ = ("memory", "stream", "ptr", "nbytes", "members", "holders", "freed")

    def __init__(self, memory, stream, ptr, nbytes, holders=()):
        self.memory = memory
        self.stream = stream
        self.ptr = ptr
        self.nbytes = nbytes
        self.members: List["_Member"] = []
        self.holders = set(holders)
        self.freed = False

    def held(self) -> bool:
        return any(g.alive for g in self.holders)


class _Member:
    """One storage the recorder has seen, inside its allocation."""

    __slots__ = ("alloc", "ptr", "nbytes", "weak", "key")

    def __init__(self, alloc, ptr, nbytes, weak, key):
        self.alloc = alloc
        self.ptr = ptr
        self.nbytes = nbytes
        self.weak = weak
        self.key = key


class _StorageRef:
    """A weak reference to a storage's C++ StorageImpl.

    Python storage objects are short-lived wrappers, so a Python ``weakref``
    says nothing about the memory; PyTorch's own weak pointer to the
    StorageImpl expires exactly when the memory is given back.
    """

    __slots__ = ("cdata",)
    _free = staticmethod(torch.UntypedStorage._free_weak_ref)
    _expired = staticmethod(torch.UntypedStorage._expired)
    _storage = staticmethod(torch.UntypedStorage._new_with_weak_ptr)

    def __init__(self, storage):
        self.cdata = storage._weak_ref()

    def expired(self) -> bool:
        return bool(self._expired(self.cdata))

    def place(self) -> Optional[Tuple[int, int]]:
        """Where the storage's bytes are now, ``(data_ptr, nbytes)``; None
        once it is gone.  A live storage may have moved (``resize_``)."""
        try:
            st = self._storage(self.cdata)
            return None if st is None else (st.data_ptr(), st.nbytes())
        except Exception:
            return None

    def __del__(self):
        try:
            self._free(self.cdata)
        except Exception:
            pass


# CUDA runtime error codes (``cudaError_t``) that are sticky: the context is
# lost, every later call fails with the same error, and no byte on the device
# can be trusted again.  Such an error is a device fault (SPEC §6), not the
# failure of one operator.  CUDA's reference says of each of 700 (illegal
# address), 702 (launch timeout), 710 (device-side assert), 714 (hardware
# stack error), 715 (illegal instruction), 716 (misaligned address), 717
# (invalid address space), 718 (invalid program counter), 719 (launch
# failure) and 911 (an external device's error) that the process must be
# relaunched to use CUDA again; 214, an uncorrectable ECC error, is counted
# with them because the bytes on the device are what it corrupts.  The list
# is not every such code CUDA has (newer releases add more); one it lacks is
# told by its message, if at all.
_STICKY_CUDA_CODES = frozenset({214, 700, 702, 710, 714, 715, 716, 717, 718, 719, 911})

# What most of the same errors say: an exception that carries no code (a
# CUDA error raised as a plain ``RuntimeError``, or a PyTorch whose
# ``AcceleratorError`` has no ``error_code``) is told by its message: every
# line of it but the one that names ``TORCH_USE_CUDA_DSA``.  PyTorch ends
# the text of every CUDA error with advice, partly the error's own, whose
# last line is "Compile with `TORCH_USE_CUDA_DSA` to enable device-side
# assertions.": read with that line, the text of any CUDA error, an invalid
# device ordinal too, names a device-side assert.  The other lines are
# read, not the first alone, because a wrapped error names the CUDA error on
# a later line: a collective's ``DistBackendError`` says "unhandled cuda
# error" first and NCCL's "Cuda failure '...'" last.
_STICKY_CUDA_ERRORS = (
    "device-side assert", "illegal memory access", "illegal address",
    "misaligned address", "illegal instruction", "unspecified launch failure",
    "hardware stack error", "uncorrectable ecc error", "launch timed out",
    "invalid program counter",
)

# What the line of PyTorch's advice that names device-side assertions holds,
# in lower case; such a line is not read for the words of a lost device.
_TORCH_ADVICE = "torch_use_cuda_dsa"

# How much of an exception's first line an error's message keeps.
_MESSAGE_CHARS = 200

# How many reasons for what could not be recorded a recorder keeps.
_ERRORS_KEPT = 50


def header(device: str, max_streams: int, environ) -> dict:
    """The log's header event.

    ``launch_blocking: true`` is added when the recording is on CUDA and
    ``CUDA_LAUNCH_BLOCKING=1`` is in ``environ`` (see ``--blocking``): every
    launch then waits for its kernel, so an error a kernel hits on the GPU
    is reported by that kernel's own operator: the failed launch written
    right after the ``device_fault`` is the kernel that caused it.  Without
    it CUDA reports such an error at some later call, and that call's
    launch is the one that fails.  The field is left out otherwise, so
    logs recorded without it keep their bytes; the replay ignores it (SPEC
    section 7 ignores unknown fields).
    """
    event = {"op": "header", "format": FORMAT, "version": VERSION, "max_streams": max_streams}
    if device == "cuda" and environ.get("CUDA_LAUNCH_BLOCKING") == "1":
        event["launch_blocking"] = True
    return event


def cuda_error_code(exc: BaseException) -> Optional[int]:
    """The CUDA runtime error code an exception carries, or ``None``.

    PyTorch raises a failed CUDA call as ``torch.AcceleratorError``, whose
    ``error_code`` is the call's ``cudaError_t`` (PyTorch 2.11 on an H100:
    710 for a device-side assert, 101 for an invalid device ordinal).
    Anything else there, or nothing (an older PyTorch), counts as no code,
    and the message alone decides.
    """
    code = getattr(exc, "error_code", None)
    if isinstance(code, int) and not isinstance(code, bool):
        return code
    return None


def error_of(exc: BaseException) -> Tuple[dict, bool]:
    """The log's ``{"kind", "message"}`` for an operator's exception, and
    whether it is a device fault.

    ``kind`` is ``oom`` for ``torch.OutOfMemoryError`` (or the CPU
    allocator's "can't allocate memory"), ``device`` for a
    sticky CUDA error (one whose CUDA error code is in
    ``_STICKY_CUDA_CODES``, or whose message names such an error),
    ``cuda`` for another CUDA error (a launch the driver
    rejected: too many resources, a bad configuration), and the exception's
    class name otherwise (a ``RuntimeError`` from a check before the launch).
    ``message`` is the first line of the exception's text, cut at
    ``_MESSAGE_CHARS`` characters, with any unpaired surrogate (a file
    name's undecodable byte, as Python keeps it) written as its escape
    text: JSON would carry it as an escape the replay rejects as no UTF-8.
    """
    text = str(exc).strip()
    line = text.splitlines()[0].strip() if text else type(exc).__name__
    if len(line) > _MESSAGE_CHARS:
        line = line[:_MESSAGE_CHARS - 1].rstrip() + "…"
    line = line.encode("utf-8", "backslashreplace").decode("utf-8")
    lower = text.lower()
    oom = getattr(torch, "OutOfMemoryError", None) or getattr(torch.cuda, "OutOfMemoryError", None)
    if (oom is not None and isinstance(exc, oom)) or "can't allocate memory" in lower:
        # The CUDA allocator raises OutOfMemoryError; the CPU's, which the
        # recorder's own tests stand in with, a RuntimeError that says so.
        return {"kind": "oom", "message": line}, False
    if "cuda error" in lower or type(exc).__name__ == "AcceleratorError":
        # Either tells: a code names a lost device whatever its message
        # says, and a message that names one is believed whatever the code,
        # since trusting bytes after a lost device is the worse mistake.
        told = [l for l in lower.splitlines() if _TORCH_ADVICE not in l]
        sticky = cuda_error_code(exc) in _STICKY_CUDA_CODES or any(
            s in l for l in told for s in _STICKY_CUDA_ERRORS)
        return {"kind": "device" if sticky else "cuda", "message": line}, sticky
    return {"kind": type(exc).__name__, "message": line}, False


class _Mode(TorchDispatchMode):
    def __init__(self, recorder: "Recorder"):
        super().__init__()
        self.recorder = recorder

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not self.recorder.active:
            # A thread started while recording keeps its mode for life:
            # once the recording ends, its operators only pass through.
            return func(*args, **kwargs)
        seen = (args, kwargs)
        if _base_name(func) in _REPOINTS_ARGUMENTS:
            # What the arguments are before the call, for the recorder
            # (which must never break the program: the arguments as they
            # are if a view cannot be made).
            try:
                seen = (_views(args), {k: _views(v) for k, v in kwargs.items()})
            except Exception as exc:
                self.recorder._note_error(func, exc)
        try:
            out = func(*args, **kwargs)
        except Exception as failure:
            # The operator failed: recorded as failed work, then raised on
            # to the program, which may well catch it and go on.
            try:
                self.recorder._on_failed_op(func, *seen, failure)
            except Exception as exc:
                self.recorder._note_error(func, exc)
            raise
        try:
            self.recorder._on_op(func, *seen, out)
        except Exception as exc:  # recording must never break the program
            self.recorder._note_error(func, exc)
        return out


class Recorder:
    """Context manager that writes a taintworld log while a program runs.

    ``path``: where to write; a name ending in ``.gz`` is gzip-compressed.
    A file-like object with ``write`` (text) is also accepted.

    ``device``: ``"cuda"`` records CUDA tensors as device memory and treats CPU
    tensors as host memory; ``"cpu"`` treats CPU tensors as the device (there
    is no host then: ``.item()`` is still a ``read``, and there are no host
    writes) so the recorder can be developed and tested without a GPU;
    ``"auto"`` picks ``cuda`` when it is available.

    ``max_streams`` goes into the header.

    ``is_device`` (testing hook): a predicate on tensors that replaces the
    device test, so host/device transfers can be exercised on a CPU.
    ``graph_class`` (testing hook): the class whose ``capture_begin`` /
    ``capture_end`` / ``replay`` are wrapped; ``torch.cuda.CUDAGraph`` by
    default.
    """

    def __init__(
        self,
        path,
        device: str = "auto",
        max_streams: int = 8,
        is_device: Optional[Callable[[torch.Tensor], bool]] = None,
        graph_class=None,
    ):
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if device not in ("cuda", "cpu"):
            raise ValueError(f"device must be 'cuda', 'cpu' or 'auto', not {device!r}")
        self.path = path
        self.device = device
        self.max_streams = max_streams
        self._is_device_fn = is_device
        self._graph_class = graph_class
        self._lock = threading.RLock()
        self._file = None
        self._owns_file = False
        self._mode: Optional[_Mode] = None
        self._next_memory = 1
        self._next_graph = 1
        self._live: Dict[int, _Alloc] = {}  # memory id -> allocation
        self._by_key: Dict[int, _Member] = {}  # StorageImpl address -> storage
        self._capture: Optional[_Graph] = None  # the capture in progress
        self._buffer: Optional[List[dict]] = None  # its events, until capture_end
        self._graphs: List[_Graph] = []
        self._gone: List[_Graph] = []  # reset or collected, graph_destroy not yet written
        self._streams: Dict[Tuple[int, int], int] = {}
        self.streams = self._streams  # (device index, CUDA stream_id) -> log stream id
        self._patched: List[Tuple[Any, str, Any]] = []
        self._graph_ids: Dict[int, int] = {}  # id(graph object) -> graph id
        self._graph_objs: Dict[int, Any] = {}
        self._faulted = False  # a device_fault is written (at most one)
        self.counts: Dict[str, int] = {}
        self.failed: List[str] = []  # "kernel (kind)" of each failed event written
        self.errors: List[str] = []
        self.active = False

    # ------------------------------------------------------------ lifecycle
    def __enter__(self) -> "Recorder":
        if hasattr(self.path, "write"):
            self._file = self.path
        else:
            path = os.fspath(self.path)
            d = os.path.dirname(path)
            if d:
                os.makedirs(d, exist_ok=True)
            if path.endswith(".gz"):
                # mtime=0: the same program gives the same bytes.
                raw = gzip.GzipFile(path, "wb", mtime=0)
                self._file = io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
            else:
                self._file = open(path, "w", encoding="utf-8", newline="\n")
            self._owns_file = True
        if self.device == "cuda":
            # Stream 0 is the default stream of the current device.
            self._streams[(torch.cuda.current_device(), 0)] = 0
        self._emit(header(self.device, self.max_streams, os.environ))
        self._patch_graphs()
        self._patch_threads()
        self.active = True
        self._mode = _Mode(self)
        self._mode.__enter__()
        return self

    def _patch_threads(self) -> None:
        """A dispatch mode is thread-local: operators a thread the program
        starts while recording runs would not reach it.  Each such thread
        runs its ``run`` inside a mode of its own over this recorder, which
        it keeps for its life (unrecording once the recording ends).  A
        thread pool's workers live as long as their pool, so they are not
        given one: each work item submitted while recording runs under a
        mode instead, and only for the item, whether its pool was made
        before the recording or during it."""
        orig_start = threading.Thread.start
        orig_submit = ThreadPoolExecutor.submit
        rec = self

        def recorded(work):
            """`work`, run under a mode of its own if the recording still
            runs when it starts."""
            def run(*a, **kw):
                if not rec.active:
                    return work(*a, **kw)
                with _Mode(rec):
                    return work(*a, **kw)
            return run

        def start(thread, *a, **kw):
            if rec.active and getattr(thread, "_target", None) is not _pool_worker:
                thread.run = recorded(thread.run)
            return orig_start(thread, *a, **kw)

        def submit(pool, fn, /, *args, **kwargs):
            if rec.active:
                fn = recorded(fn)
            return orig_submit(pool, fn, *args, **kwargs)
        threading.Thread.start = start
        ThreadPoolExecutor.submit = submit
        self._patched.append((threading.Thread, "start", orig_start))
        self._patched.append((ThreadPoolExecutor, "submit", orig_submit))

    def __exit__(self, exc_type, exc, tb):
        try:
            if self._mode is not None:
                self._mode.__exit__(exc_type, exc, tb)
                self._mode = None
        finally:
            self.active = False
            self._unpatch_graphs()
            with self._lock:
                if self._capture is not None:
                    self._abort_capture()
                self._sweep()
                # Graphs still alive end with the recording, before the frees.
                for g in self._graphs:
                    self._graph_gone(g)
                self._sweep()
                for g in self._graphs:
                    if g.finalizer is not None:
                        g.finalizer.detach()
                for rec in sorted(self._live.values(), key=lambda r: r.memory):
                    self._free(rec)
            if self._file is not None:
                self._file.flush()
                if self._owns_file:
                    self._file.close()
                self._file = None
        return False

    # ------------------------------------------------------------ output
    def _emit(self, event: dict) -> None:
        if self._buffer is not None:
            # Inside a capture: held back until capture_end, when the pool
            # blocks are known (see _finish_capture).
            capture = self._capture
            if (capture is not None and event["op"] == "launch"
                    and event["outcome"] != "ok"
                    and event["stream"] % self.max_streams == capture.stream % self.max_streams):
                capture.doomed = True
            self._buffer.append(event)
            return
        self._write(event)

    def _write(self, event: dict) -> None:
        self._file.write(json.dumps(event, separators=(",", ":")) + "\n")
        op = event["op"]
        self.counts[op] = self.counts.get(op, 0) + 1
        outcome = event.get("outcome")
        if isinstance(outcome, dict):
            what = event.get("kernel", op)
            self.failed.append(f"{what} ({outcome['failed']['kind']})")

    def _note_error(self, func, exc) -> None:
        try:
            name = kernel_name(func)
        except Exception:
            name = str(func)
        msg = f"{name}: {type(exc).__name__}: {exc}"
        if self._cannot_record(msg):
            print(f"record_torch: could not record {msg}", file=sys.stderr)

    def _cannot_record(self, reason: str) -> bool:
        """Keeps ``reason`` among ``errors``, the first ``_ERRORS_KEPT``
        only; whether it was kept."""
        if len(self.errors) >= _ERRORS_KEPT:
            return False
        self.errors.append(reason)
        return True

    # ------------------------------------------------------------ streams
    def _stream(self) -> int:
        """Small stable id of the current stream (0 in cpu mode)."""
        if self.device != "cuda":
            return 0
        s = torch.cuda.current_stream()
        key = (s.device_index, s.stream_id)
        sid = self._streams.get(key)
        if sid is None:
            sid = len(self._streams)
            self._streams[key] = sid
            if sid == self.max_streams:
                print(f"record_torch: more than {self.max_streams} streams; ids fold onto "
                      "shared slots in replay", file=sys.stderr)
        return sid

    # ------------------------------------------------------------ memory
    def _is_device(self, t) -> bool:
        if not isinstance(t, torch.Tensor):
            return False
        if self._is_device_fn is not None:
            return bool(self._is_device_fn(t))
        return t.device.type == self.device and t.layout == torch.strided

    def _device_tensors(self, value) -> List[torch.Tensor]:
        """The device tensors inside an argument or return value, each
        sparse one as the tensors that hold its indices and values
        (``_storage_parts``): a sparse tensor's memory is theirs."""
        return [p for t in _flatten(value) for p in _storage_parts(t) if self._is_device(p)]

    def _in_use(self, rec: _Alloc) -> bool:
        """Whether a storage of ``rec`` still holds the bytes it had: alive
        and not moved away (a storage that moved gave its bytes back)."""
        return any(m.weak.place() == (m.ptr, m.nbytes) for m in rec.members)

    def _free(self, rec: _Alloc) -> None:
        if rec.freed:
            return
        rec.freed = True
        self._live.pop(rec.memory, None)
        for m in rec.members:
            if self._by_key.get(m.key) is m:
                del self._by_key[m.key]
        rec.members = []
        self._emit({"op": "free", "memory": rec.memory})

    def _drop_member(self, m: _Member) -> None:
        """Forget a storage that died or moved; free its allocation if that
        was the allocation's last storage and no graph holds it."""
        if self._by_key.get(m.key) is m:
            del self._by_key[m.key]
        rec = m.alloc
        if m in rec.members:
            rec.members.remove(m)
        if not rec.members and not rec.held():
            self._free(rec)

    def _sweep(self) -> None:
        """Write pending ``graph_destroy``s, then free every allocation whose
        storages have all died and that no live graph holds."""
        while self._gone:
            g = self._gone.pop(0)
            if g.gid is None:
                # Gone while its capture is open: its capture_end brings it
                # back here, so that its graph_destroy follows it.
                continue
            if not g.doomed:
                self._emit({"op": "graph_destroy", "graph": g.gid})
            # Done with: a program that captures graph after graph does not
            # make the recorder keep them all (the allocations of its pool
            # still name it while they live).
            if g in self._graphs:
                self._graphs.remove(g)
            if g.finalizer is not None:
                g.finalizer.detach()
        for rec in list(self._live.values()):
            if rec.freed:
                continue
            dead = [m for m in rec.members if m.weak.expired()]
            for m in dead:
                self._drop_member(m)
            if not rec.freed and not rec.members and not rec.held():
                self._free(rec)

    def _allocation(self, t: torch.Tensor, fresh: bool = False
                    ) -> Tuple[Optional[_Member], bool]:
        """The storage record behind ``t``'s storage; (member, made_now).

        ``fresh``: ``t`` is what the operator just made (a fresh output, or
        the result of ``empty``): made during a capture on its stream, it is
        pool memory of the graph.  A storage first met as an *input* during a
        capture was made before it (weights made before recording began) and
        is an ordinary allocation.

        A storage seen for the first time becomes a new allocation with a
        fresh id.  Before it is announced, every allocation that overlaps its
        bytes is freed: an expired storage whose address came back, or a
        storage that gave its memory up while still alive.  Two live
        allocations never overlap.  But a new storage over bytes that a live
        storage still holds (``torch.from_dlpack``, a slice of an
        ``UntypedStorage``) is another name for that memory: it joins the
        allocation as a pool block's storages do, and its bindings are
        offsets in it, so the taint on those bytes stays (one that overlaps
        such bytes without lying inside them cannot be recorded exactly,
        and is reported).

        A storage whose memory moved (``resize_`` that grows it, or an
        ``out=`` argument resized) becomes a new allocation too, and since
        PyTorch copied the old bytes across, a launch ``aten::resize_``
        that reads them and writes the new allocation's first bytes comes
        before the old allocation is freed: the bytes' taint moves with
        them.

        Pool blocks (memory a CUDA graph's capture allocated) are the
        exception to "freed": they stay live while their graph lives.  A new
        storage inside a live pool block joins it (no new allocation; its
        bindings are offsets in the block); one that overlaps blocks of the
        capture in progress gets a provisional allocation that
        ``_finish_capture`` merges with them.
        """
        try:
            st = t.untyped_storage()
            ptr = st.data_ptr()
            nbytes = st.nbytes()
            key = st._cdata
        except Exception:
            return None, False
        m = self._by_key.get(key)
        moved = None
        if m is not None:
            if not m.weak.expired():
                if m.ptr == ptr and m.nbytes == nbytes:
                    return m, False
                # The same storage, alive, its bytes elsewhere now: copied
                # below, then dropped.
                moved = m
            else:
                self._drop_member(m)
        self._sweep()
        # The allocation the moved storage leaves, which is not another name
        # for its new bytes.
        left = moved.alloc if moved is not None else None
        cap = self._capture
        stream = self._stream()
        pooled = fresh and cap is not None and stream == cap.stream
        end = ptr + nbytes
        if nbytes > 0:
            for other in [r for r in self._live.values()
                          if r.nbytes > 0 and r.ptr < end and ptr < r.ptr + r.nbytes]:
                if other.holders:
                    if other.ptr <= ptr and end <= other.ptr + other.nbytes:
                        # Inside a live pool block: the same allocation.
                        m = _Member(other, ptr, nbytes, _StorageRef(st), key)
                        other.members.append(m)
                        if pooled:
                            other.holders.add(cap)
                        self._by_key[key] = m
                        return m, True
                    if cap is not None and cap in other.holders and pooled:
                        continue  # merged at capture_end
                    print(f"record_torch: a storage overlaps pool block {other.memory} "
                          "of a live CUDA graph; the block is freed", file=sys.stderr)
                elif other is not left and self._in_use(other):
                    if other.ptr <= ptr and end <= other.ptr + other.nbytes:
                        # Another storage over bytes a live one holds: the
                        # same allocation, under a second name.
                        m = _Member(other, ptr, nbytes, _StorageRef(st), key)
                        other.members.append(m)
                        self._by_key[key] = m
                        if moved is not None:
                            self._copy_moved(moved, m)
                        return m, False
                    self._cannot_record(
                        f"a storage of {nbytes} bytes overlaps allocation {other.memory}, "
                        "whose storage still holds its bytes, without lying inside it: "
                        f"allocation {other.memory} is freed, and the taint of its bytes with it")
                self._free(other)
        memory = self._next_memory
        self._next_memory += 1
        rec = _Alloc(memory, stream, ptr, nbytes, (cap,) if pooled else ())
        m = _Member(rec, ptr, nbytes, _StorageRef(st), key)
        rec.members.append(m)
        self._live[memory] = rec
        self._by_key[key] = m
        if cap is not None:
            cap.allocs.append(rec)
        self._emit({"op": "alloc", "stream": rec.stream, "memory": memory, "size": nbytes})
        if moved is not None:
            self._copy_moved(moved, m)
        return m, True

    def _copy_moved(self, moved: _Member, now: _Member) -> None:
        """The storage of ``moved`` is ``now``, its bytes elsewhere: PyTorch
        copied its old bytes (as many as both places hold) across, written
        as a launch that reads them and writes the first bytes of the new
        place; then the old place is let go (its allocation freed if
        nothing else holds it)."""
        old, new = moved.alloc, now.alloc
        n = min(moved.nbytes, now.nbytes)
        if n > 0 and not old.freed:
            start, to = moved.ptr - old.ptr, now.ptr - new.ptr
            self._emit({"op": "launch", "kernel": "aten::resize_", "stream": self._stream(),
                        "bindings": [
                            {"stream": old.stream, "memory": old.memory,
                             "range": [start, start + n], "access": "read"},
                            {"stream": new.stream, "memory": new.memory,
                             "range": [to, to + n], "access": "write"}],
                        "outcome": "ok"})
        self._drop_member(moved)

    def _note_moves(self, pairs) -> None:
        """After an operator that launches nothing but may move what it
        changes (``resize_``): the storages it changed that the recorder
        knows are looked at again, so that one that moved is copied now,
        while the bytes it left are still the log's (``_allocation``)."""
        for arg, val in pairs:
            if arg.alias_info is None or not arg.alias_info.is_write:
                continue
            for t in self._device_tensors(val):
                try:
                    known = t.untyped_storage()._cdata in self._by_key
                except Exception:
                    continue
                if known:
                    self._allocation(t)

    def _binding(self, t: torch.Tensor, access: Optional[str]) -> Optional[dict]:
        m, _ = self._allocation(t)
        if m is None:
            return None
        rec = m.alloc
        base = m.ptr - rec.ptr
        isz = t.element_size()
        first, end = _span_elems(t)
        start, stop = base + first * isz, base + end * isz
        if stop > rec.nbytes or start > stop:
            # Cannot happen for a tensor PyTorch accepts; never write a range
            # replay would reject.
            start, stop = min(start, rec.nbytes), min(max(start, stop), rec.nbytes)
        b = {"stream": rec.stream, "memory": rec.memory, "range": [start, stop]}
        if access is not None:
            b["access"] = access
        return b

    # ------------------------------------------------------------ operators
    def _on_op(self, func, args, kwargs, out) -> None:
        with self._lock:
            if not self.active:
                return
            self._sweep()
            self._record(func, args, kwargs, out)

    def _on_failed_op(self, func, args, kwargs, exc) -> None:
        """An operator raised: what it would have launched is recorded with
        a failed outcome (``_record``'s ``failed``).  A sticky CUDA error is
        first recorded as the device's fault, once: from then on every read
        of the device answers with it (SPEC §6)."""
        with self._lock:
            if not self.active:
                return
            self._sweep()
            self._record(func, args, kwargs, None, failed=self._error_of(exc))

    def _error_of(self, exc) -> dict:
        """``error_of(exc)``, first written as the device's fault when the
        error is sticky and the device has not faulted yet (the first fault
        wins, SPEC §6)."""
        error, sticky = error_of(exc)
        if sticky and not self._faulted:
            self._faulted = True
            self._emit({"op": "device_fault", "error": error})
        return error

    def _bound_args(self, func, args, kwargs):
        """(schema argument, value) pairs for the call."""
        pairs = []
        for i, arg in enumerate(func._schema.arguments):
            if i < len(args):
                val = args[i]
            elif arg.name in kwargs:
                val = kwargs[arg.name]
            else:
                continue
            pairs.append((arg, val))
        return pairs

    def _record(self, func, args, kwargs, out, failed: Optional[dict] = None) -> None:
        """Turns one operator call into log events.  ``failed`` is the error
        of a call that raised (``out`` is then ``None``): its launch is
        recorded with that outcome and without fresh outputs, which were
        never made, so its write set is what it would have changed in place
        (its mutated and ``out=`` arguments); an allocation that failed, or a
        ``.to(device)`` that failed, is a failed launch binding nothing; a
        ``copy_`` from the host into a device tensor that failed is a failed
        ``host_write``; a view that failed is nothing; a read that failed is
        recorded only once the device has faulted (the host asked, and the
        answer is the fault)."""
        name = _base_name(func)
        schema = func._schema
        pairs = self._bound_args(func, args, kwargs)
        dev_inputs = [t for _, v in pairs for t in self._device_tensors(v)]
        outs = _flatten(out)
        dev_outs = self._device_tensors(outs)
        if not dev_inputs and not dev_outs and not (failed and self._on_device(pairs)):
            return  # host-only work

        mutated = [a for a, _ in pairs if a.alias_info is not None and a.alias_info.is_write]
        tags = getattr(func, "tags", ())

        # Views and metadata-only operators: no kernel runs (but ``resize_``
        # may have moved a storage, copying its bytes).
        if name in _NO_LAUNCH or torch.Tag.inplace_view in tags:
            if failed is None:
                self._note_moves(pairs)
            return
        returns = schema.returns
        if (not mutated and returns
                and all(r.alias_info is not None and not r.alias_info.is_write for r in returns)):
            return

        if name in _ALLOC_ONLY and failed is None:
            for t in dev_outs:
                self._allocation(t, fresh=True)
            return

        if name in _COPY_OPS and self._record_copy(func, name, pairs, out, failed):
            return

        if torch.Tag.data_dependent_output in tags and (failed is not None or not any(
                isinstance(o, torch.Tensor) for o in outs)):
            # .item(), torch.equal(...): the host reads the data.
            self._record_reads(dev_inputs, failed)
            return

        if (not mutated and failed is None
                and not any(isinstance(o, torch.Tensor) for o in outs)):
            # Returns no tensor and changes nothing (``is_same_size``-like):
            # only asserts still do device work.
            if not name.startswith("_assert"):
                return

        bindings = self._launch_bindings(func, name, pairs, out)
        outcome = "ok" if failed is None else {"failed": failed}
        self._emit({"op": "launch", "kernel": kernel_name(func), "stream": self._stream(),
                    "bindings": bindings, "outcome": outcome})

    @staticmethod
    def _named_device(pairs) -> Optional[str]:
        """The type of the device a call's ``device`` argument names as
        where its result goes, if it names one."""
        for arg, val in pairs:
            if arg.name == "device" and val is not None:
                try:
                    return torch.device(val).type
                except Exception:
                    return None
        return None

    def _copy_to_host(self, pairs) -> bool:
        """Whether a ``_to_copy`` call names a device other than the
        recorded one as its destination (``.cpu()``, ``.to("cpu")``)."""
        named = self._named_device(pairs)
        return named is not None and named != self.device

    def _on_device(self, pairs) -> bool:
        """Whether a call with no device tensor names the device as where its
        result goes (``torch.empty(n, device="cuda")``)."""
        return self._named_device(pairs) == self.device

    def _record_reads(self, tensors, failed: Optional[dict]) -> None:
        """The host reads ``tensors``: a ``read`` of each, unless the read
        failed while the device works (the host got an error, not bytes)."""
        if failed is not None and not self._faulted:
            return
        for t in tensors:
            b = self._binding(t, None)
            if b is not None:
                self._emit({"op": "read", "binding": b})

    def _access_for(self, func, name, arg, pairs) -> str:
        """Access of the tensors of one argument: schema first, then refinements."""
        is_write = arg.alias_info is not None and arg.alias_info.is_write
        if is_write:
            is_out = getattr(arg, "is_out", False) or arg.name.startswith("out")
            if is_out:
                access = "write"
            elif name in _OVERWRITE_SELF and arg.name == "self":
                access = "write"
            else:
                access = "read_write"
        else:
            access = "read"
        # Refinement: training batch norm updates its running statistics.
        if name in _BN_UPDATES_RUNNING and arg.name in _BN_RUNNING_ARGS:
            flag = _BN_UPDATES_RUNNING[name]
            training = True
            if flag is not None:
                training = any(a.name == flag and bool(v) for a, v in pairs)
            if training:
                access = "read_write"
        # Refinement: an RNN's backward writes its forward's workspace.
        if (name, arg.name) in _BACKWARD_WRITES_WORKSPACE:
            access = "read_write"
        # Refinement: the template of *_like / new_* factories is not read.
        if arg.name == "self" and (name.endswith("_like") or name.startswith("new_")):
            access = "dead"
        return access

    def _launch_bindings(self, func, name, pairs, out) -> List[dict]:
        bindings: List[dict] = []
        input_keys = set()
        for arg, val in pairs:
            tensors = self._device_tensors(val)
            if not tensors:
                continue
            access = self._access_for(func, name, arg, pairs)
            for t in tensors:
                try:
                    input_keys.add(t.untyped_storage()._cdata)
                except Exception:
                    pass
                a = access
                if a == "write" and not _covers_span(t):
                    a = "read_write"
                b = self._binding(t, a)
                if b is not None:
                    bindings.append(b)
        # Fresh outputs: returns without alias annotation.
        returns = func._schema.returns
        values = out if (len(returns) > 1 and isinstance(out, (tuple, list))) else (out,)
        for ret, val in zip(returns, values):
            if ret.alias_info is not None:
                continue  # the in-place / out= argument, already bound
            for t in self._device_tensors(val):
                try:
                    key = t.untyped_storage()._cdata
                except Exception:
                    continue
                if key in input_keys:
                    continue  # aliases an input (``_unsafe_view``-like)
                rec, made_now = self._allocation(t, fresh=True)
                if rec is None:
                    continue
                a = "write" if (made_now or _covers_span(t)) else "read_write"
                b = self._binding(t, a)
                if b is not None:
                    bindings.append(b)
        return bindings

    def _record_copy(self, func, name, pairs, out, failed: Optional[dict] = None) -> bool:
        """Host<->device copies.  Returns True when the copy was handled.
        A sparse tensor is copied as the tensors that hold its indices and
        values (``_storage_parts``)."""
        vals = {a.name: v for a, v in pairs}
        if name == "_to_copy":
            src, dst = vals.get("self"), out
            src_parts = self._device_tensors(src)
            if failed is not None and src_parts:
                # A copy off the device that failed: ``dst`` was never made.
                # A read of ``src`` if it was to reach the host, else a
                # failed launch reading it.
                to_host = self._copy_to_host(pairs)
                if to_host:
                    self._record_reads(src_parts, failed)
                return to_host
        else:
            dst, src = vals.get("self"), vals.get("src")
        if not isinstance(src, torch.Tensor) or not isinstance(dst, torch.Tensor):
            return False
        src_parts, dst_parts = self._device_tensors(src), self._device_tensors(dst)
        if src_parts and dst_parts:
            return False  # an ordinary device copy: a launch
        if src_parts:
            self._record_reads(src_parts, failed)
            return True
        if dst_parts and failed is not None:
            # A host copy that failed: the bytes it was to write are garbage.
            for part in dst_parts:
                b = self._binding(part, None)
                if b is not None:
                    self._emit({"op": "host_write", "binding": b, "outcome": {"failed": failed}})
            return True
        for part in dst_parts:
            rec, made_now = self._allocation(part, fresh=name == "_to_copy")
            if rec is None:
                continue
            if made_now or _covers_span(part):
                b = self._binding(part, None)
                self._emit({"op": "host_write", "binding": b, "outcome": "ok"})
            else:
                # A host copy into a view with gaps: record it as a launch that
                # reads and writes the span, so no unwritten byte is released.
                b = self._binding(part, "read_write")
                self._emit({"op": "launch", "kernel": kernel_name(func), "stream": self._stream(),
                            "bindings": [b], "outcome": "ok"})
        return True  # host to device, or host to host

    # ------------------------------------------------------------ graphs
    def _patch_graphs(self) -> None:
        cls = self._graph_class
        if cls is None:
            if self.device != "cuda":
                return
            cls = getattr(torch.cuda, "CUDAGraph", None)
            if cls is None:
                return
        rec = self

        def wrap(attr, after, on_error=None):
            if not hasattr(cls, attr):
                return
            orig = cls.__dict__.get(attr, None)
            bound_orig = getattr(cls, attr)

            def noted(hook, *args):
                # Recording must never break the program: an error of the
                # recorder's own is reported, not raised.
                try:
                    with rec._lock:
                        hook(*args)
                except Exception as exc:
                    rec._note_error(f"CUDAGraph.{attr}", exc)

            def wrapper(graph, *a, **kw):
                try:
                    result = bound_orig(graph, *a, **kw)
                except BaseException as exc:
                    if on_error is not None and rec.active:
                        noted(on_error, graph, exc)
                    raise
                if rec.active:
                    noted(after, graph)
                return result

            wrapper.__name__ = attr
            wrapper.__doc__ = getattr(bound_orig, "__doc__", None)
            self._patched.append((cls, attr, orig))
            setattr(cls, attr, wrapper)

        wrap("capture_begin", self._on_capture_begin)
        wrap("capture_end", self._on_capture_end, self._on_capture_error)
        wrap("replay", self._on_replay, self._on_replay_error)
        wrap("reset", self._on_reset)

    def _unpatch_graphs(self) -> None:
        for cls, attr, orig in reversed(self._patched):
            if orig is None:
                try:
                    delattr(cls, attr)
                except AttributeError:
                    pass
            else:
                setattr(cls, attr, orig)
        self._patched.clear()

    def _set_graph(self, graph, g: _Graph) -> None:
        """Remember the recorder's record of a graph on the graph object.

        An attribute dies with the graph; a dict keyed by ``id(graph)`` would
        either keep the graph (and its memory pool) alive or mistake a new
        graph at a recycled address for an old one.  A finalizer notices the
        graph's death (its pool is given back then: ``graph_destroy``).
        """
        try:
            graph._taintworld_graph = (id(self), g)
        except AttributeError:
            self._graph_ids[id(graph)] = g
            self._graph_objs[id(graph)] = graph  # kept alive: destroyed at the end
            return
        try:
            g.finalizer = weakref.finalize(graph, self._graph_gone, g)
            g.finalizer.atexit = False
        except TypeError:
            pass  # not weak-referenceable: destroyed when recording ends

    def _graph(self, graph) -> Optional[_Graph]:
        tag = getattr(graph, "_taintworld_graph", None)
        if tag is not None and tag[0] == id(self):
            return tag[1]
        return self._graph_ids.get(id(graph))

    def _graph_gone(self, g: _Graph) -> None:
        """The graph was reset or collected: its pool is released."""
        if g.alive:
            self._forget(g)

    def _forget(self, g: _Graph) -> None:
        """The graph goes at the next sweep, even if it was gone already
        while its capture was open (the sweep left it for its capture_end)."""
        g.alive = False
        if g not in self._gone:
            self._gone.append(g)

    def _on_capture_begin(self, graph) -> None:
        if self._capture is not None:
            # The open capture was left without its capture_end (the program
            # raised out of it): its window ends here, or this capture's
            # events would go into its buffer and both be lost.
            self._abort_capture()
        self._sweep()
        old = self._graph(graph)
        if old is not None and old.alive:
            # Capturing into a graph object again replaces its graph.
            self._graph_gone(old)
            self._sweep()
        stream = self._stream()
        self._emit({"op": "capture_begin", "stream": stream})
        g = _Graph(stream, self._next_memory)
        self._graphs.append(g)
        self._set_graph(graph, g)
        self._capture = g
        self._buffer = []

    def _on_capture_end(self, graph) -> None:
        self._sweep()
        g = self._capture
        if g is None:
            return
        self._finish_capture()
        gid = self._next_graph
        self._next_graph += 1
        g.gid = gid
        self._emit({"op": "capture_end", "stream": g.stream, "graph": gid})
        if not g.alive:
            # Reset or collected during its own capture.
            self._forget(g)
            self._sweep()

    def _on_capture_error(self, graph, exc) -> None:
        # Only the capturing graph's capture_end ends its window.
        if self._capture is not None and self._graph(graph) is self._capture:
            self._abort_capture()

    def _abort_capture(self) -> None:
        """A capture that never ended (its ``capture_end`` raised, or the
        recording stopped inside it): write what it did, then close its
        window and forget its graph at once — a ``capture_end`` and a
        ``graph_destroy`` — since PyTorch made no graph.  Left open, the
        window would take every later launch on the stream into it, and a
        later capture on the stream would open a second window, which is
        bad input."""
        g = self._capture
        if g is None:
            return
        self._finish_capture()
        g.gid = self._next_graph
        self._next_graph += 1
        self._emit({"op": "capture_end", "stream": g.stream, "graph": g.gid})
        self._forget(g)
        self._sweep()

    def _finish_capture(self) -> None:
        """Merge the capture's overlapping pool storages into pool blocks and
        write the capture's held-back events, renumbered.

        PyTorch's allocator hands a capture's allocations out of the graph's
        private pool and reuses an address within the capture once the
        storage there died: a later storage may take part of an earlier
        one's bytes, or span two coalesced ones.  The graph writes all of
        them at every replay and they stay reserved until the graph goes, so
        every set of capture storages connected by overlapping bytes is one
        allocation of the log (a *pool block*) spanning their union, made
        where the first of them was announced.  Memory ids are then
        renumbered so that they stay consecutive.
        """
        g = self._capture
        events = self._buffer or []
        self._capture = None
        self._buffer = None
        # Pool blocks: connected components of overlapping byte ranges.
        pool = sorted((r for r in g.allocs if g in r.holders and not r.freed and r.nbytes > 0),
                      key=lambda r: (r.ptr, r.memory))
        shift: Dict[int, Tuple[_Alloc, int]] = {}  # provisional id -> (block, offset)
        comps: List[List[_Alloc]] = []
        comp_end = None
        for r in pool:
            if comps and r.ptr < comp_end:
                comps[-1].append(r)
                comp_end = max(comp_end, r.ptr + r.nbytes)
            else:
                comps.append([r])
                comp_end = r.ptr + r.nbytes
        for comp in comps:
            if len(comp) == 1:
                continue
            block = min(comp, key=lambda r: r.memory)
            base = min(r.ptr for r in comp)
            top = max(r.ptr + r.nbytes for r in comp)
            for r in comp:
                shift[r.memory] = (block, r.ptr - base)
                if r is block:
                    continue
                for m in r.members:
                    m.alloc = block
                    block.members.append(m)
                block.holders |= r.holders
                r.members = []
                r.freed = True  # merged away: never announced, never freed
                self._live.pop(r.memory, None)
            block.ptr, block.nbytes = base, top - base
        # Renumber the allocations announced during the capture, in order.
        by_old = {r.memory: r for r in g.allocs}
        renum: Dict[int, int] = {}
        nxt = g.first_memory
        for ev in events:
            if ev["op"] == "alloc":
                old = ev["memory"]
                if old in shift and shift[old][0] is not by_old.get(old):
                    continue  # merged into an earlier block
                renum[old] = nxt
                nxt += 1
        for old, new in renum.items():
            r = by_old.get(old)
            if r is None:
                continue
            if self._live.get(old) is r:
                del self._live[old]
            r.memory = new
        for old, new in renum.items():
            r = by_old.get(old)
            if r is not None and not r.freed:
                self._live[new] = r
        self._next_memory = nxt

        def new_id(old: int) -> Tuple[int, int, Optional[_Alloc]]:
            if old in shift:
                blk, off = shift[old]
                return blk.memory, off, blk
            return renum.get(old, old), 0, None

        def fix(b: dict) -> dict:
            mem, off, blk = new_id(b["memory"])
            b = dict(b, memory=mem)
            if blk is not None:
                b["stream"] = blk.stream
            if off and "range" in b:
                b["range"] = [b["range"][0] + off, b["range"][1] + off]
            return b

        for ev in events:
            op = ev["op"]
            if op == "alloc":
                old = ev["memory"]
                if old in shift:
                    blk = shift[old][0]
                    if blk is not by_old.get(old):
                        continue  # merged into an earlier block
                    ev = dict(ev, memory=blk.memory, size=blk.nbytes)
                else:
                    ev = dict(ev, memory=renum.get(old, old))
            elif op == "free":
                ev = dict(ev, memory=new_id(ev["memory"])[0])
            elif op == "launch":
                ev = dict(ev, bindings=[fix(b) for b in ev["bindings"]])
            elif op in ("host_write", "read"):
                ev = dict(ev, binding=fix(ev["binding"]))
            self._emit(ev)

    def _on_replay(self, graph, failed: Optional[dict] = None) -> None:
        self._sweep()
        g = self._graph(graph)
        if g is None or g.gid is None:
            self._cannot_record("replay of a graph whose capture has not ended"
                                if g is not None and g is self._capture
                                else "replay of a graph captured before recording began")
            return
        if not g.alive or g.doomed:
            # Its capture failed, or it was reset: the log holds no such
            # graph, and a replay of it would be bad input.
            self._cannot_record(f"replay of graph {g.gid}, of which the log holds no graph: "
                                "its capture failed, a launch in it failed, or it was reset")
            return
        outcome = "ok" if failed is None else {"failed": failed}
        self._emit({"op": "replay", "graph": g.gid, "stream": self._stream(), "outcome": outcome})

    def _on_replay_error(self, graph, exc) -> None:
        """A replay that raised: a ``replay`` that failed, so that what the
        graph writes carries the error (SPEC §6), after a ``device_fault``
        when the error is sticky, as for an operator (``_error_of``).
        An interrupt is not the graph's failure and records nothing."""
        if isinstance(exc, Exception):
            self._on_replay(graph, failed=self._error_of(exc))

    def _on_reset(self, graph) -> None:
        g = self._graph(graph)
        if g is not None:
            self._graph_gone(g)
            self._sweep()


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # Everything after "--" belongs to the script; options may come before
    # or after the script's name.
    script_args: List[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, script_args = argv[:cut], argv[cut + 1:]
    p = argparse.ArgumentParser(
        description="Run a Python script under the taintworld recorder.",
        usage="%(prog)s SCRIPT.py -o LOG.jsonl[.gz] [--device auto|cuda|cpu] [--blocking] "
              "[-- SCRIPT_ARGS...]")
    p.add_argument("script", help="the Python program to run (as __main__)")
    p.add_argument("-o", "--output", required=True,
                   help="log to write (.jsonl, or .jsonl.gz for gzip)")
    p.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"),
                   help="which tensors are device memory (default: cuda if available)")
    p.add_argument("--max-streams", type=int, default=8)
    p.add_argument("--blocking", action="store_true",
                   help="set CUDA_LAUNCH_BLOCKING=1 before CUDA starts, so that an error a "
                        "kernel hits on the GPU is recorded at that kernel's launch rather "
                        "than at a later call (slower; on CUDA the header says "
                        "launch_blocking)")
    ns = p.parse_args(argv)
    if ns.blocking:
        # Read by CUDA when it starts, which nothing has asked of it yet:
        # torch starts CUDA lazily, at the first call that needs it.
        os.environ["CUDA_LAUNCH_BLOCKING"] = "1"
    old_argv = sys.argv
    sys.argv = [ns.script] + list(script_args)
    sys.path.insert(0, os.path.dirname(os.path.abspath(ns.script)))
    rec = Recorder(ns.output, device=ns.device, max_streams=ns.max_streams)
    try:
        with rec:
            runpy.run_path(ns.script, run_name="__main__")
    finally:
        sys.argv = old_argv
    summary = ", ".join(f"{k} {v}" for k, v in sorted(rec.counts.items()))
    print(f"record_torch: wrote {ns.output} ({rec.device}): {summary}", file=sys.stderr)
    if rec.failed:
        shown = ", ".join(rec.failed[:5]) + (", …" if len(rec.failed) > 5 else "")
        print(f"record_torch: {len(rec.failed)} operation(s) raised and are recorded as "
              f"failed: {shown}", file=sys.stderr)
    if rec.device == "cuda":
        streams = ", ".join(f"cuda:{d} stream_id {s} -> {i}"
                            for (d, s), i in sorted(rec.streams.items(), key=lambda kv: kv[1]))
        print(f"record_torch: streams: {streams}", file=sys.stderr)
    if rec.errors:
        # What was left out, not only how much: the first line of each of
        # the first few reasons.  The list keeps at most _ERRORS_KEPT.
        shown = "; ".join(e.splitlines()[0] for e in rec.errors[:5] if e)
        more = "; …" if len(rec.errors) > 5 else ""
        count = (f"{len(rec.errors)} or more" if len(rec.errors) >= _ERRORS_KEPT
                 else str(len(rec.errors)))
        print(f"record_torch: {count} operation(s) could not be recorded: {shown}{more}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
