"""The kernel compiler: a ``Primitive=1`` function compiled to a callable CPU kernel.

This is the interface the executors call (paper §3.1.3/§4.4.2: fused primitive functions are
lowered to TVM and compiled; an executor runs the rest of the program):

* :func:`compile_function` ``(func, arg_types, *, target=None, cache=None) -> Kernel``
  lowers the function specialized to the concrete argument types
  (:mod:`backends.tvm.te_build`), schedules it (:mod:`backends.tvm.schedules`), compiles it
  with ``tvm.compile`` for the host CPU (:mod:`backends.tvm.target`) and wraps it;
* :class:`Kernel` ``(*arrays, out=None)`` runs it on numpy arrays (one per flattened tensor
  parameter, exact Relay dtypes and shapes); ``out`` are optional preallocated result
  buffers (one per flattened output tensor) written in place; the result is an array, or a
  (nested) tuple of arrays when the function returns a tuple;
* :class:`NoLowering` is raised when some operator of the function has no lowering for the
  target or its rule declines the call (see :mod:`backends.tvm.lower`): the caller then runs
  the function through the operators' numpy references;
* :class:`KernelCache` keeps compiled kernels in memory and on disk.

Facts about apache-tvm 0.27 this module relies on (measured):

* a compiled function takes ``tvm_ffi`` tensors, and numpy arrays directly (converted through
  DLPack without a copy); ``bool`` arrays work;
* ``te.create_prim_func`` declares its buffers 64-byte aligned and LLVM then emits aligned
  vector loads: an unaligned array (numpy's allocations are typically only 16-byte aligned)
  **crashes the process**.  The kernel's buffers are therefore redeclared with element
  alignment (``align=1``, ``offset_factor=1``): each parameter ``Var`` of the ``PrimFunc``
  gets a new buffer type in place (the body refers to that very ``Var``), which is what
  rewriting the TVMScript signature and parsing it back gives (the fallback, about 0.2 s a
  kernel; tested structurally equal); should both fail, the kernel keeps the 64-byte
  buffers and copies every unaligned argument into an aligned one;
* the machine code is the expensive part of ``tvm.compile``'s output, and both TVM's JIT
  and ``export_library`` generate it: a kernel's object file is written once and linked
  with ``ld -shared`` (about ten times cheaper than the C compiler driver
  ``export_library`` runs), and the kernel runs from that library, which the cache keeps;
* ``tvm.runtime.load_module(path)`` loads a library back: that is the on-disk cache.

Cache key: the structural hash of the function (:func:`semantics.structural.hashing
.structural_hash`, alpha-invariant), a SHA-256 digest of its constants' bytes, the
arguments' shapes and dtypes, the target, :data:`CACHE_VERSION` and a digest of the
backend's own source files (:func:`code_digest`: a changed lowering rule or schedule never
meets a stale kernel).  The directory is ``$RELAY_TVM_CACHE`` or ``~/.cache/relay-ref/tvm``;
each kernel is ``<key>.so`` with ``<key>.json`` (its layout and its constants: small ones
inline, large ones as references to content-addressed ``<digest>.bin`` blobs, see
:mod:`backends.tvm.blobs`), written into temporary names and renamed into place (the
``.json`` last), so a reader never sees a partial entry; deleting the directory (or
:meth:`KernelCache.clear`) is always safe.  ``<key>.module`` files beside them are
``backends.tvm.build``'s memos of fused modules (pickles whose large arrays are blobs too:
a model's weights are on disk once, shared by its kernels and its memo).  Every file is
verified before it is used: the ``.json`` carries the SHA-256 of its own contents and the
size and SHA-256 of the library, checked before the library is mapped; a blob's bytes
must hash to its name; a memo carries the SHA-256 of its pickle. A file that fails (a
truncated, changed, deleted or unreadable one) is a cache miss: the kernel is compiled
again and its entry rewritten, never loaded (a truncated library would crash the process
with SIGBUS, a changed one run other code).  A loaded kernel's constants are views of the blobs'
memory maps, handed to TVM through DLPack: loading a model copies none of its weights.

Many kernels at once (:func:`compile_many`, what ``build`` uses): distinct keys only, shared
between this process and worker processes (:class:`_Worker`), which write cache entries
that this process loads.
"""

from __future__ import annotations

import atexit
import copyreg
import functools
import hashlib
import io
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from backends.tvm import blobs, kernel_cache
from backends.tvm.kernel_cache import cache_directory
from backends.tvm.lower.base import ALIGNMENT as BYTE_ALIGNMENT
from backends.tvm.lower.base import aligned_empty
from backends.tvm.sched import KernelInfo, Scheduler, ScheduleReport, pick_schedule
from backends.tvm.schedules import first_line
from backends.tvm.target import (
    Target,
    TargetSpec,
    as_target,
    host_target,
    normalize_target,
    target_key,
)
from backends.tvm.te_build import Layout, LoweringFailed, build_te, param_types
from semantics.expr import Attrs, Constant, Function
from semantics.ops.reference import concrete_shape
from semantics.structural.hashing import structural_hash
from semantics.types import TensorType, TupleType, Type
from semantics.visitor import post_order

__all__ = ["CACHE_VERSION", "Kernel", "KernelCache", "NoLowering", "compile_function",
           "compile_many", "default_cache", "host_target", "prestart_workers",
           "shutdown_workers"]

CACHE_VERSION = "2"
"""Part of every cache key, with :func:`code_digest` (bump it for changes outside
``backends/tvm`` that change what a kernel computes, e.g. in TVM's handling)."""


_KERNEL_SOURCES = ("kernels", "te_build", "schedules", "target", "blobs")


@functools.cache
def code_digest() -> str:
    """A digest of the sources that decide what a kernel is (lowering rules, TE builder,
    schedules, target, this module): editing any of them invalidates every cached kernel
    automatically. The executors' modules are not part of it."""
    root = Path(__file__).parent
    h = hashlib.sha256()
    own = [root / f"{name}.py" for name in _KERNEL_SOURCES]
    for path in sorted([*own, *(root / "lower").glob("*.py"), *(root / "sched").glob("*.py")]):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]

ALIGNMENT = BYTE_ALIGNMENT

COMPILE_FAILED = "<tvm>"
"""``NoLowering.op`` when every operator has a rule but TVM itself fails to build the kernel
(the executors fall back to the references; tests treat it as a bug to fix)."""


class NoLowering(Exception):
    """Some operator of the function cannot be compiled for the target.

    Attributes:
        op: the operator's name (or the kind of node that is not lowerable).
        reason: why (the declared reason of ``LOWERINGS.declare_none``, or the rule's).
    """

    def __init__(self, op: str, reason: str) -> None:
        super().__init__(f"no lowering for {op}: {reason}")
        self.op = op
        self.reason = reason


POOL_BYTES = 1 << 16
"""Results of at most this many bytes come from the kernel's output pool (see :class:`Kernel`);
larger ones are allocated per call (their computation dwarfs the allocation)."""
POOL_SIZE = 4
"""Buffers a kernel's output pool keeps per result."""

_TWINS: dict[int, Any] = {}
"""``id(array) -> TVM tensor over that array's memory`` for every buffer of every kernel's
output pool. A pooled array is kept alive by its pool, so its ``id`` names it alone while
the entry exists; the entries go with the kernel (:func:`_forget_twins`)."""


def _twin_or_self(a: Any) -> Any:
    """The twin of a pooled array, else ``a`` itself."""
    return _TWINS.get(id(a), a)


def register_constant(a: np.ndarray) -> None:
    """Give the read-only program constant ``a`` a twin over its (writable) memory, so that
    kernels receive it without a failed DLPack export (numpy refuses read-only arrays) and
    a retry. The twin goes when ``a`` does. Nothing happens when ``a`` is writable, empty,
    or its memory cannot be made writable (the kernels' careful lane copies it then)."""
    if type(a) is not np.ndarray or a.flags.writeable or not a.size or id(a) in _TWINS:
        return
    view = a.view()
    try:
        view.flags.writeable = True
        twin = _dlpack_twin(view)
    except (ValueError, BufferError, TypeError, RuntimeError, ImportError):
        return
    if view.base is a:                   # the twin would keep ``a`` alive: never collected
        return
    _TWINS[id(a)] = twin
    weakref.finalize(a, _TWINS.pop, id(a), None)


def _forget_twins(ids: list[int]) -> None:
    for i in ids:
        _TWINS.pop(i, None)


class Kernel:
    """A compiled primitive function (see the module docstring for the calling convention).

    Invariants: ``input_types``/``output_types`` are concrete tensor types (flattened);
    ``layout`` maps the flat outputs to the function's result structure.

    The call path (issue 16 §3: executor overhead) has two lanes:

    * the **fast lane** (kernels with element-aligned buffers, i.e. almost all): the compiled
      function is called directly with the caller's arrays, the constants (converted to TVM
      tensors once, at construction) and the result buffers. Nothing is checked in Python:
      TVM's generated entry checks the number of arguments, every array's dtype, rank, shape
      and strides, and numpy's DLPack export refuses read-only arrays; any failure raises
      before the kernel writes anything, and the call is then retried in
    * a read-only argument (numpy's DLPack export refuses those) is passed as a writable
      view of the same memory (kernels never write their inputs), still in the fast lane;
    * the **careful lane**: every argument checked (``ValueError`` with a clear message for
      a wrong count, dtype or shape), non-contiguous or read-only arrays copied, unaligned
      arrays copied into 64-byte aligned ones for kernels that need it, and ``out`` buffers
      validated.

    **Output pool** (fast lane, results of at most :data:`POOL_BYTES`): converting a numpy
    array for the call (DLPack, about 0.2 µs an array) and allocating the result cost more
    than a small kernel's work. So each result of a small kernel comes from a pool of at
    most :data:`POOL_SIZE` numpy arrays owned by the kernel, each with its *twin* — a TVM
    tensor over the same memory, made once — that the compiled function receives instead of
    the array. A pooled array is reused only when nothing but the pool refers to it: its
    reference count is the pool's own (measured when the buffer is made), so no register,
    tuple, closure, reference cell, numpy view (a view's ``base`` is the array, which owns
    its memory) or caller still holds it — CPython counts every one of them. The count is
    taken after the array is bound to a local, so two threads never take the same buffer.
    Arguments that are pooled arrays (the results of other kernels) are passed as their
    twins too (:data:`_TWINS`). Larger results are allocated with ``np.empty`` per call.

    Measured here (``bench/backend.py`` table 4, a scalar ``int32`` add, best of ten blocks):
    the careful lane costs 7–10 µs per call, the fast lane 0.8 µs, of which 0.5 µs is the
    compiled function's own call with numpy arrays (DLPack conversions included; 0.14 µs
    with TVM tensors). On this machine (AMD EPYC Zen 3, same run, a chain of ``add`` kernels
    on ``(1, 650)`` float32 feeding each other): 1.8 µs a call with ``np.empty`` results
    and numpy arguments, 1.1 µs from the pool with twins, 0.27 µs for the compiled function
    alone called with TVM tensors.
    """

    __slots__ = ("name", "input_types", "output_types", "layout", "_fn", "_module",
                 "_constants", "_needs_alignment", "_in_sig", "_out_sig", "_fast_consts",
                 "_single", "_out_shape", "_out_dtype", "careful_calls", "_pools",
                 "_pool_base", "_pool_ids", "_bare", "ops", "schedule", "__weakref__")

    def __init__(self, name: str, fn: Any, module: Any, input_types: list[TensorType],
                 output_types: list[TensorType], layout: Layout, constants: list[np.ndarray],
                 needs_alignment: bool) -> None:
        self.name = name
        self._fn = fn
        self._module = module          # keeps the loaded library alive
        self.input_types = input_types
        self.output_types = output_types
        self.layout = layout
        self._constants = [_owned_constant(c, needs_alignment) for c in constants]
        self._needs_alignment = needs_alignment
        self._in_sig = [(np.dtype(t.dtype), concrete_shape(t)) for t in input_types]
        self._out_sig = [(np.dtype(t.dtype), concrete_shape(t)) for t in output_types]
        # The fast lane: constants as TVM tensors (no DLPack conversion per call); None when
        # the kernel needs 64-byte aligned arrays or has an empty buffer (careful lane only).
        self._fast_consts: tuple[Any, ...] | None = None
        if not needs_alignment and all(c.size for c in self._constants) and all(
                int(np.prod(s, dtype=np.int64)) for _, s in self._out_sig):
            self._fast_consts = tuple(_tvm_tensor(c) for c in self._constants)
        self._single = isinstance(layout, int) and len(self._out_sig) == 1
        self._out_dtype: np.dtype[Any] | None = self._out_sig[0][0] if self._out_sig else None
        self._out_shape: tuple[int, ...] = self._out_sig[0][1] if self._out_sig else ()
        self.careful_calls = 0   # calls that took the careful lane (tests, benchmarks)
        self.ops: tuple[str, ...] = ()       # the fused operators, in post-order
        # How it was scheduled (``backends.tvm.sched.ScheduleReport``; None: unknown, a
        # custom schedule or a cache entry written before reports were kept).
        self.schedule: ScheduleReport | None = None
        # The output pools (class docstring): one list of (array, twin) per result.
        self._bare = not self._constants
        self._pools: list[list[tuple[np.ndarray, Any]]] | None = None
        self._pool_base = -1
        self._pool_ids: list[int] = []
        if self._fast_consts is not None and self._out_sig and all(
                int(np.prod(s, dtype=np.int64)) * d.itemsize <= POOL_BYTES
                for d, s in self._out_sig):
            self._pools = [[] for _ in self._out_sig]
            weakref.finalize(self, _forget_twins, self._pool_ids)

    def __repr__(self) -> str:
        return f"<Kernel {self.name}: {len(self.input_types)} in, {len(self.output_types)} out>"

    def __call__(self, *args: np.ndarray, out: list[np.ndarray] | None = None
                 ) -> np.ndarray | tuple[Any, ...]:
        """Run the kernel.

        Args:
            args: one ndarray per flattened tensor parameter, of exactly its dtype and shape.
            out: optional result buffers (C-contiguous, exact dtype and shape), written in
                place and returned.
        Returns:
            The result array, or a (nested) tuple of arrays for a tuple result.
        Raises:
            ValueError: wrong number, dtype or shape of arguments or buffers.
        """
        pools = self._pools
        if pools is not None and out is None and self._single:
            # The common case, inlined: a small result from the pool (class docstring).
            base = self._pool_base
            for o, twin in pools[0]:  # noqa: B007 - the pair found is used below
                if _refcount(o) == base:
                    break
            else:
                o, twin = self._grow(0)
            get = _TWINS.get
            try:
                if self._bare:
                    if len(args) == 2:
                        a, b = args
                        self._fn(get(id(a), a), get(id(b), b), twin)
                    else:
                        self._fn(*map(_twin_or_self, args), twin)
                else:
                    consts = self._fast_consts
                    assert consts is not None      # (a pool implies the fast lane)
                    self._fn(*map(_twin_or_self, args), *consts, twin)
                return o
            except Exception:  # noqa: BLE001 - the general path below says what is wrong
                pass
        consts = self._fast_consts
        if consts is not None:
            try:
                if out is None and self._single:
                    o = np.empty(self._out_shape, self._out_dtype)
                    self._fn(*map(_twin_or_self, args), *consts, o)
                    return o
                return self._fast(args, consts, out)
            except BufferError:
                # A read-only argument (a program constant or a converted input): numpy's
                # DLPack export refuses it. A writable view of the same memory serves
                # (kernels never write their inputs) when the memory is writable at all.
                views = _writable_views(args)
                if views is not None:
                    try:
                        return self._fast(views, consts, out)
                    except Exception:  # noqa: BLE001 - the careful lane says what is wrong
                        pass
            except Exception:  # noqa: BLE001 - TVM rejected the call before running: retry
                pass
        return self._careful(args, out)

    def _grow(self, i: int) -> tuple[np.ndarray, Any]:
        """A new buffer (and its twin) for result ``i``, kept in the pool when it has room."""
        dtype, shape = self._out_sig[i]
        o = np.empty(shape, dtype)
        pools = self._pools
        assert pools is not None
        if len(pools[i]) >= POOL_SIZE:
            return o, o           # every pooled buffer is held: a plain array, no twin
        twin = _dlpack_twin(o)
        pair = (o, twin)
        pools[i].append(pair)
        _TWINS[id(o)] = twin
        self._pool_ids.append(id(o))
        # What the count of a free pooled array is, seen from the loops that look for one:
        # the pool's tuple, the twin, a local name and getrefcount's argument.
        self._pool_base = _refcount(o)
        return pair

    def _take(self, i: int) -> tuple[np.ndarray, Any]:
        """A free buffer of result ``i`` and its twin (see :meth:`_grow`)."""
        pools = self._pools
        assert pools is not None
        base = self._pool_base
        for o, twin in pools[i]:
            if _refcount(o) == base:
                return o, twin
        return self._grow(i)

    def _fast(self, args: Sequence[Any], consts: tuple[Any, ...],
              out: list[np.ndarray] | None) -> np.ndarray | tuple[Any, ...]:
        """The fast lane (see the class docstring); raises whatever TVM raises."""
        if out is None:
            if self._pools is not None:
                pairs = [self._take(i) for i in range(len(self._out_sig))]
                self._fn(*map(_twin_or_self, args), *consts, *[p[1] for p in pairs])
                outs = [p[0] for p in pairs]
                del pairs
                return outs[0] if self._single else _assemble(self.layout, outs)
            if self._single:
                o = np.empty(self._out_shape, self._out_dtype)
                self._fn(*args, *consts, o)
                return o
            outs = [np.empty(shape, dtype) for dtype, shape in self._out_sig]
            self._fn(*args, *consts, *outs)
            return _assemble(self.layout, outs)
        if len(out) != len(self._out_sig) or not all(type(o) is np.ndarray for o in out):
            raise ValueError("out= does not fit")
        self._fn(*args, *consts, *out)
        return _assemble(self.layout, list(out))

    def _careful(self, args: Sequence[Any], out: list[np.ndarray] | None
                 ) -> np.ndarray | tuple[Any, ...]:
        """The careful lane of :meth:`__call__` (see the class docstring)."""
        self.careful_calls += 1
        if len(args) != len(self._in_sig):
            raise ValueError(f"kernel {self.name} takes {len(self._in_sig)} arrays, "
                             f"got {len(args)}")
        arrays = []
        for i, (a, (dtype, shape)) in enumerate(zip(args, self._in_sig)):
            if type(a) is not np.ndarray or a.dtype != dtype or a.shape != shape:
                a = np.asarray(a)
                if a.dtype != dtype or a.shape != shape:
                    raise ValueError(f"kernel {self.name}: argument {i} must be {dtype}"
                                     f"{list(shape)}, got {a.dtype}{list(a.shape)}")
            if not a.flags.c_contiguous or not a.flags.writeable:
                a = np.array(a, order="C")     # DLPack cannot export a read-only array
            if self._needs_alignment and a.ctypes.data % ALIGNMENT:
                a = _aligned_copy(a)
            arrays.append(a)
        if out is None:
            outs = [_empty(shape, dtype, self._needs_alignment) for dtype, shape in self._out_sig]
            targets = outs
        else:
            if len(out) != len(self._out_sig):
                raise ValueError(f"kernel {self.name} writes {len(self._out_sig)} buffers, "
                                 f"got {len(out)}")
            outs = list(out)
            targets = []
            for i, (o, (dtype, shape)) in enumerate(zip(outs, self._out_sig)):
                if not isinstance(o, np.ndarray) or o.dtype != dtype or o.shape != shape \
                        or not o.flags.c_contiguous or not o.flags.writeable:
                    raise ValueError(f"kernel {self.name}: out[{i}] must be a writable "
                                     f"C-contiguous {dtype}{list(shape)} array")
                if self._needs_alignment and o.ctypes.data % ALIGNMENT:
                    o = _empty(shape, dtype, True)
                targets.append(o)
        self._fn(*[_empty_safe(a) for a in arrays], *[_empty_safe(c) for c in self._constants],
                 *[_empty_safe(t) for t in targets])
        for o, t in zip(outs, targets):
            if o is not t:
                np.copyto(o, t)
        return _assemble(self.layout, outs)


_refcount = sys.getrefcount


def _dlpack_twin(a: np.ndarray) -> Any:
    """A TVM tensor over the memory of ``a`` (DLPack, no copy; it keeps ``a`` alive)."""
    import tvm_ffi

    return tvm_ffi.from_dlpack(a, require_alignment=0)


def _writable_views(args: Sequence[Any]) -> list[Any] | None:
    """``args`` with every read-only ndarray replaced by a writable view of its memory;
    None when some memory is not writable (an array over a read-only buffer)."""
    out = []
    for a in args:
        if type(a) is np.ndarray and not a.flags.writeable:
            a = a.view()
            try:
                a.flags.writeable = True
            except ValueError:
                return None
        out.append(a)
    return out


def _owned_constant(c: np.ndarray, aligned: bool) -> np.ndarray:
    """The array a :class:`Kernel` keeps for the constant ``c``: ``c`` itself when it is an
    ndarray that is C-contiguous, writable (numpy's DLPack export refuses read-only arrays)
    and 64-byte aligned where the kernel needs it, else a copy that is.

    The kernel takes the array over (its callers hand it fresh arrays: the lowering's
    copies, or views of the cache's memory-mapped blobs) and never writes it.
    """
    if type(c) is np.ndarray and c.flags.c_contiguous and c.flags.writeable and (
            not aligned or c.ctypes.data % ALIGNMENT == 0):
        return c
    return _aligned_copy(c) if aligned else np.array(c, order="C")


def _tvm_tensor(a: np.ndarray) -> Any:
    """A TVM tensor of ``a`` (writable, C-contiguous): over ``a``'s own memory (DLPack, no
    copy: a model's weights are not copied when its kernels load) when it is 64-byte
    aligned, else a copy into memory TVM allocates (aligned)."""
    import tvm

    if a.size and a.ctypes.data % ALIGNMENT == 0:
        try:
            import tvm_ffi

            return tvm_ffi.from_dlpack(a, require_alignment=ALIGNMENT,
                                       require_contiguous=True)
        except Exception:  # noqa: BLE001 - no DLPack import: copy
            pass
    t = tvm.runtime.empty(a.shape, a.dtype.name)   # tvm.runtime.tensor makes 0-d arrays 1-d
    t.copyfrom(np.array(a, order="C"))   # (np.ascontiguousarray makes 0-d arrays 1-d)
    return t


def _empty_safe(a: np.ndarray) -> Any:
    """``a``, or a TVM-allocated tensor of its shape when it is empty (numpy gives empty
    arrays strides that TVM's compactness check rejects; their contents are never read)."""
    if a.size:
        return a
    import tvm

    return tvm.runtime.empty(a.shape, a.dtype.name)


def _assemble(layout: Layout, outs: list[np.ndarray]) -> Any:
    if isinstance(layout, int):
        return outs[layout]
    return tuple(_assemble(part, outs) for part in layout)


def _empty(shape: tuple[int, ...], dtype: np.dtype, aligned: bool) -> np.ndarray:
    return aligned_empty(shape, dtype) if aligned else np.empty(shape, dtype)


def _aligned_copy(a: np.ndarray) -> np.ndarray:
    out = _empty(a.shape, a.dtype, True)
    np.copyto(out, a)
    return out


# --- compilation --------------------------------------------------------------------------

_BUFFER_RE = re.compile(r'T\.Buffer\((\([^()]*\)), "(\w+)"\)')


def _relax_alignment(prim: Any, notes: list[tuple[str, str]] | None = None
                     ) -> tuple[Any, bool]:
    """``prim`` with element-aligned parameter buffers, and whether it still needs 64 bytes.

    The fast way (:func:`_relax_alignment_in_place`) gives each parameter buffer a new buffer
    type with ``align=1, offset_factor=1`` and a free ``elem_offset``; should that fail, the
    signature's ``T.Buffer`` annotations are rewritten in the function's TVMScript, which is
    parsed back (:func:`_relax_alignment_by_script`, about 0.2 s a kernel).  Both give
    structurally equal functions (tested). Each way that fails is appended to ``notes`` as
    ``(step, error)`` (the kernel's schedule report keeps them: a TVM upgrade that breaks the
    fast way shows there, as does a kernel left needing 64-byte aligned arrays).
    """
    try:
        return _relax_alignment_in_place(prim), False
    except Exception as err:  # noqa: BLE001 - any failure (TVM's reflection API is private):
        if notes is not None:  # the slow, printed way
            notes.append(("relax buffer alignment in place", first_line(err)))
        return _relax_alignment_by_script(prim, notes)


def _relax_alignment_in_place(prim: Any) -> Any:
    """``prim`` (just created by ``te.create_prim_func``, not shared) with relaxed buffers.

    In TVM 0.27 a parameter buffer is a ``Var`` whose type (a ``BufferType``) carries the
    alignment, and the body refers to that very ``Var``: replacing the type of each parameter
    ``Var`` relaxes the buffer everywhere without rebuilding the body.  The ``Var`` fields are
    frozen for Python code, so the type goes in through the field's reflection setter; the new
    type comes from ``decl_buffer`` (the parameter's shape, dtype, strides and scope, a fresh
    ``elem_offset`` variable), exactly what the TVMScript parser makes of
    ``T.Buffer(shape, dtype, align=1, offset_factor=1)``.
    """
    from tvm import tirx

    setter = None
    for param in prim.params:
        ty = param.ty
        if not isinstance(ty, tirx.buffer.BufferType) or ty.layout is not None \
                or list(ty.allocated_addr):
            raise ValueError("not a plain buffer parameter")
        fresh = tirx.decl_buffer(ty.shape, ty.dtype, param.name,
                                 strides=list(ty.strides) or None,
                                 scope=ty.storage_scope, data_alignment=1, offset_factor=1,
                                 layout=None)
        if setter is None:
            fields = _type_fields(type(param))
            setter = fields["ty"].setter
        setter(param, fresh.ty)
    return prim


def _type_fields(cls: type) -> dict[str, Any]:
    """The reflected fields of a TVM object class, its ancestors' included, by name."""
    out: dict[str, Any] = {}
    info = getattr(cls, "__tvm_ffi_type_info__", None)
    while info is not None:
        for f in info.fields:
            out.setdefault(f.name, f)
        info = info.parent_type_info
    return out


def _relax_alignment_by_script(prim: Any, notes: list[tuple[str, str]] | None = None
                               ) -> tuple[Any, bool]:
    """The TVMScript round trip of :func:`_relax_alignment` (the fallback)."""
    import tvm

    try:
        text = prim.script()
        head, sep, body = text.partition("):\n")
        if not sep:
            return prim, True
        new_head = _BUFFER_RE.sub(r'T.Buffer(\1, "\2", align=1, offset_factor=1)', head)
        parsed = tvm.script.from_source(new_head + sep + body)
        return parsed, False
    except Exception as err:  # noqa: BLE001 - any failure: keep the aligned buffers
        if notes is not None:
            notes.append(("relax buffer alignment through TVMScript (the kernel keeps 64-byte "
                          "aligned buffers: its calls take the careful lane)", first_line(err)))
        return prim, True


def _constants_digest(func: Function) -> str:
    h = hashlib.sha256()
    for node in post_order(func.body, descend=lambda n: not isinstance(n, Function)):
        if isinstance(node, Constant):
            h.update(node.data.dtype.str.encode())
            h.update(repr(node.data.shape).encode())
            h.update(_byte_view(node.data))
    return h.hexdigest()


def _byte_view(a: np.ndarray) -> Any:
    """The bytes of ``a`` in C order as a flat ``uint8`` array (no copy when contiguous)."""
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def kernel_key(func: Function, arg_types: Sequence[Type], target: Target) -> str:
    """The cache key of ``func`` compiled for ``arg_types`` and ``target`` (hex digest)."""
    types = [(t.dtype, [int(d) if type(d) is int else str(d) for d in t.shape])
             for t in _flat_types(func, arg_types)]
    text = json.dumps([CACHE_VERSION, code_digest(), structural_hash(func),
                       _constants_digest(func), types, target_key(target)])
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def _flat_types(func: Function, arg_types: Sequence[Type]) -> list[TensorType]:
    from backends.tvm.te_build import flatten_types

    return flatten_types(param_types(func, arg_types))


def compile_function(func: Function, arg_types: Sequence[Type], *, target: TargetSpec = None,
                     cache: KernelCache | None = None,
                     schedule: Callable[[Any], Any] | None = None) -> Kernel:
    """Compile a ``Primitive=1`` function for concrete argument types.

    Args:
        func: the primitive function (any ``fuse_opt_level``), over tensor or
            tuple-of-tensor parameters.
        arg_types: the concrete types of the call's arguments — one per parameter (tuple
            types for tuple parameters) or one per flattened tensor; ``Any``/symbolic dims
            resolved by the caller.
        target: a :class:`~backends.tvm.target.Target`, or what ``Target.of`` takes (None
            and ``"llvm"``: the host; a string; a dict).
        cache: the kernel cache (None: :func:`default_cache`).
        schedule: the scheduling function ``PrimFunc -> IRModule`` (default
            :func:`backends.tvm.sched.pick_schedule`: the kernel's anchor operator's registered
            recipe, else the default one); kernels built with a custom
            schedule are not cached.
    Returns:
        The compiled :class:`Kernel`.
    Raises:
        NoLowering: an operator without a lowering for the target, a call its rule declines,
            or a function that is not a primitive dataflow function.
    """
    spec = normalize_target(target)
    store = default_cache() if cache is None else cache
    fast = None
    if schedule is None:
        fast = store.by_identity(func, arg_types, spec)
        if fast.kernel is not None:
            return fast.kernel
    try:
        key = store.key_of(func, arg_types, spec)
    except LoweringFailed as err:
        raise NoLowering(err.op, err.reason) from None
    if fast is not None:
        kernel = store.get(key)
        if kernel is not None:
            fast.remember(kernel)
            return kernel
        failed = store.failure(key)
        if failed is not None:
            raise NoLowering(*failed)
    workdir = store.workdir() if fast is not None else None
    try:
        kernel, artifact, meta = _compile(func, arg_types, spec, key, schedule, workdir)
    except NoLowering as err:
        if fast is not None:
            store.remember_failure(key, err)
        _discard(workdir)
        raise
    except BaseException:
        _discard(workdir)
        raise
    if fast is not None:
        store.put(key, kernel, artifact, meta, workdir)
        fast.remember(kernel)
    else:
        _discard(workdir)
    return kernel


def _discard(workdir: Path | None) -> None:
    if workdir is not None:
        shutil.rmtree(workdir, ignore_errors=True)


def _build_library(func: Function, arg_types: Sequence[Type], spec: Target, key: str,
                   schedule: Callable[[Any], Any] | None
                   ) -> tuple[Any, Any, str, bool, dict[str, Any] | None]:
    """Lower, schedule and ``tvm.compile`` a function (no machine code yet: see :func:`_link`).

    Returns:
        ``(library, lowered, name, needs_alignment, schedule)``: TVM's executable, the
        :class:`~backends.tvm.te_build` lowering, the kernel's symbol, whether its
        buffers kept the 64-byte alignment, and the
        :class:`~backends.tvm.sched.ScheduleReport` as JSON (None for a caller's own
        ``schedule`` function).
    Raises:
        NoLowering: see :func:`compile_function`.
    """
    import tvm
    from tvm import te

    try:
        lowered = build_te(func, arg_types, spec)
    except LoweringFailed as err:
        raise NoLowering(err.op, err.reason) from None
    if schedule is None:
        schedule = pick_schedule(KernelInfo(tuple(lowered.ops), func, tuple(arg_types), spec))
    name = f"relay_kernel_{key[:16]}"
    try:
        prim = te.create_prim_func([*lowered.inputs, *lowered.constants, *lowered.outputs])
        notes: list[tuple[str, str]] = []
        prim, needs_alignment = _relax_alignment(prim, notes)
        prim = prim.with_attr("global_symbol", name)
        mod = schedule(prim)
        report = schedule.report.to_json() if isinstance(schedule, Scheduler) else None
        if report is not None:
            report["refused"] = [list(n) for n in notes] + report["refused"]
        if name not in [g.name_hint for g in mod.get_global_vars()]:
            mod = tvm.IRModule({name: mod[mod.get_global_vars()[0]]})
        lib = tvm.compile(mod, target=as_target(spec))
    except Exception as err:  # noqa: BLE001 - TVM's errors have no common public base
        raise _compile_failed(lowered.ops, err) from err
    return lib, lowered, name, needs_alignment, report


def _compile_failed(ops: Sequence[str], err: BaseException) -> NoLowering:
    first = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
    return NoLowering(COMPILE_FAILED, f"TVM could not compile the kernel of "
                      f"{', '.join(sorted(set(ops)))}: {first}")


def _meta(lowered: Any, name: str, needs_alignment: bool,
          schedule: dict[str, Any] | None) -> dict[str, Any]:
    return {"name": name, "inputs": [kernel_cache.type_json(t) for t in lowered.input_types],
            "outputs": [kernel_cache.type_json(t) for t in lowered.output_types],
            "layout": lowered.layout, "needs_alignment": needs_alignment,
            "ops": lowered.ops, "constants": lowered.constant_arrays, "schedule": schedule}


def _compile(func: Function, arg_types: Sequence[Type], spec: Target, key: str,
             schedule: Callable[[Any], Any] | None, workdir: Path | None = None
             ) -> tuple[Kernel, Any, dict[str, Any]]:
    """Compile in this process: ``(kernel, artifact, meta)``.

    With a ``workdir`` the machine code is generated once, into ``workdir/kernel.so``
    (:func:`_link`), and the kernel runs from that library (the artifact: the cache moves it
    into place); without one, or should linking fail, TVM's JIT runs the kernel and the
    artifact is TVM's module (the cache exports it).
    """
    lib, lowered, name, needs_alignment, report = _build_library(func, arg_types, spec, key,
                                                                 schedule)
    meta = _meta(lowered, name, needs_alignment, report)
    artifact: Any = lib
    module: Any = None
    if workdir is not None:
        so = workdir / "kernel.so"
        try:
            _link(lib, so)
            import tvm

            module = tvm.runtime.load_module(str(so))
            artifact = so
        except Exception as err:  # noqa: BLE001 - no linker, a full disk: TVM's JIT instead
            module = None
            if report is not None:      # recorded with the kernel (``--show-kernels``)
                report["refused"].append(["link the kernel into a shared library (TVM's JIT "
                                          "runs it instead)", first_line(err)])
    try:
        if module is None:
            module = lib.jit()
        fn = module[name]
    except Exception as err:  # noqa: BLE001 - TVM's errors have no common public base
        raise _compile_failed(lowered.ops, err) from err
    kernel = Kernel(name, fn, module, lowered.input_types, lowered.output_types,
                    lowered.layout, lowered.constant_arrays, needs_alignment)
    kernel.ops = tuple(lowered.ops)
    kernel.schedule = ScheduleReport.from_json(report)
    return kernel, artifact, meta


def _link(lib: Any, so: Path) -> None:
    """Generate the machine code of ``lib`` and link it into the shared library ``so``.

    TVM's JIT and ``export_library`` would each generate the machine code (the most
    expensive step of a compilation after lowering); the object file is written once here
    and linked with ``ld -shared`` directly (the C compiler driver TVM calls costs about
    ten times as much). A host module that imports others (none do today), or a failing
    ``ld``, goes through ``export_library``.

    Raises:
        OSError, RuntimeError, subprocess.CalledProcessError: the library cannot be made.
    """
    mod = lib.mod if hasattr(lib, "mod") else lib
    ld = _linker()
    if ld is None or mod.kind != "llvm" or len(mod.imports):
        lib.export_library(str(so))
        return
    obj = so.with_suffix(".o")
    mod.write_to_file(str(obj))
    try:
        subprocess.run([ld, "-shared", "-o", str(so), str(obj), "-lm"], check=True,
                       capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        lib.export_library(str(so))
    finally:
        obj.unlink(missing_ok=True)


@functools.cache
def _linker() -> str | None:
    """``ld`` on the PATH (None: link through TVM's ``export_library``)."""
    return shutil.which("ld")


# --- compiling many kernels at once (in parallel) -----------------------------------------

def compile_many(requests: Sequence[tuple[Function, Sequence[Type]]], *,
                 target: TargetSpec = None, cache: KernelCache | None = None,
                 jobs: int | None = None,
                 progress: Callable[[int, int], None] | None = None) -> int:
    """Compile every kernel of ``requests`` that the cache does not hold, in parallel.

    The kernels go into ``cache`` (memory, and its directory): a following
    :func:`compile_function` for any of the requests finds them there. Requests with
    equal keys (the same kernel twice in a model) are compiled once; kernels already on
    disk are not loaded here (the executors load them when they ask for them).

    Parallelism: ``jobs`` compilations at a time (default ``$RELAY_TVM_JOBS``, else 1, see
    :func:`_default_jobs`): this process compiles, and
    ``jobs - 1`` worker processes (:class:`_Worker`: started once, kept for later builds)
    compile the others, each writing its kernel's library into the cache directory (a
    temporary one for a memory-only cache) where this process loads it from. The workers
    compile for the :class:`~backends.tvm.target.Target` computed here, with the same code,
    so their kernels are the
    ones this process would build (tested byte for byte). A request the workers cannot take
    (a function too deep to pickle, a worker that died) is compiled here.

    Args:
        requests: ``(primitive function, argument types)`` pairs, as for
            :func:`compile_function`.
        target: as for :func:`compile_function`.
        cache: the kernel cache (None: :func:`default_cache`).
        jobs: the number of simultaneous compilations (1: all in this process).
        progress: called as ``progress(done, total)`` once before the first compilation
            (``done`` 0) and after each one, failed or not (``total``: the distinct
            kernels the cache did not hold); from this process's threads, one at a time.
    Returns:
        The number of kernels compiled (not counting those the cache held, nor failures).
    """
    spec = normalize_target(target)
    store = default_cache() if cache is None else cache
    todo: dict[str, tuple[Function, Sequence[Type]]] = {}
    for func, types in requests:
        if store.by_identity(func, types, spec).kernel is not None:
            continue
        try:
            key = store.key_of(func, types, spec)
        except LoweringFailed:
            continue
        if key in todo or store.holds(key):
            continue
        todo[key] = (func, types)
    if not todo:
        return 0
    jobs = _default_jobs() if jobs is None else max(1, int(jobs))
    work = list(todo.items())
    tick = _Progress(progress, len(work))
    if jobs <= 1 or len(work) < 2:
        compiled = 0
        for _, (func, types) in work:
            compiled += _compile_here(func, types, spec, store)
            tick()
        return compiled
    return _compile_parallel(work, spec, store, jobs, tick)


class _Progress:
    """Counts finished compilations for a ``progress(done, total)`` callback (thread-safe)."""

    def __init__(self, callback: Callable[[int, int], None] | None, total: int):
        self.callback = callback
        self.total = total
        self.done = 0
        self.lock = threading.Lock()
        if callback is not None:
            callback(0, total)

    def __call__(self) -> None:
        if self.callback is None:
            return
        with self.lock:
            self.done += 1
            self.callback(self.done, self.total)


def prestart_workers(cache: KernelCache | None = None, jobs: int | None = None) -> int:
    """Start the compile workers now when a build is likely to compile (the number started).

    A worker takes seconds to import TVM; ``build`` calls this before its pass pipeline
    runs, so that the import overlaps the passes. It starts workers only when the cache's
    directory holds no kernel at all (a first build: everything will compile); otherwise
    :func:`compile_many` starts them when it finds kernels to compile.
    """
    store = default_cache() if cache is None else cache
    jobs = _default_jobs() if jobs is None else max(1, int(jobs))
    if jobs <= 1 or not store.disk:
        return 0
    try:
        with os.scandir(store.directory) as entries:
            if any(e.name.endswith(".json") for e in entries):
                return 0
    except OSError:
        pass                              # no directory yet: a first build
    return len(_workers(jobs - 1))


def _default_jobs() -> int:
    """``$RELAY_TVM_JOBS``, else 1 (every kernel compiled in this process).

    Measured on a shared 2-CPU machine (load 1.5 to 6): a worker costs seconds of CPU to
    start (it imports ``semantics`` and TVM) and gave no gain on models of 7 to 44
    kernels, whose compilation in one process takes 1.5 to 20 s; on an idle machine with
    more CPUs, or for larger models, set ``jobs`` (or the variable) to use workers.
    """
    env = os.environ.get("RELAY_TVM_JOBS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    return 1


def _compile_here(func: Function, types: Sequence[Type], spec: Target,
                  store: KernelCache) -> bool:
    try:
        compile_function(func, types, target=spec, cache=store)
    except NoLowering:
        return False
    return True


def _compile_parallel(work: list[tuple[str, tuple[Function, Sequence[Type]]]],
                      spec: Target, store: KernelCache, jobs: int,
                      tick: Callable[[], None]) -> int:
    """Share ``work`` between this process (from the back of the queue) and ``jobs - 1``
    worker processes (from the front), each fed by a thread of this process."""
    import collections

    directory, scratch = store.shared_directory()
    queue = collections.deque(work)
    lock = threading.Lock()
    results: dict[str, tuple[Any, ...]] = {}

    def feed(worker: _Worker) -> None:
        while True:
            with lock:
                if not queue:
                    return
                key, item = queue.popleft()
            payload = _payload(item[0], item[1], spec, key, directory)
            outcome = worker.run(payload) if payload is not None else None
            with lock:
                if outcome is None:         # not picklable, or the worker died: do it here
                    queue.append((key, item))
                    if payload is not None:
                        return
                else:
                    results[key] = outcome
            if outcome is not None:
                tick()

    feeders = [threading.Thread(target=feed, args=(w,), daemon=True,
                                name="relay-kernel-feeder") for w in _workers(jobs - 1)]
    for t in feeders:
        t.start()
    compiled = 0
    try:
        while True:
            with lock:
                item = queue.pop() if queue else None
            if item is None:
                break
            compiled += _compile_here(item[1][0], item[1][1], spec, store)
            tick()
        for t in feeders:
            t.join()
        while queue:                        # handed back by a worker that died at the end
            key, (func, types) = queue.pop()
            compiled += _compile_here(func, types, spec, store)
            tick()
        for key, outcome in results.items():
            if outcome[0] == "ok":
                compiled += store.adopt(key, directory) is not None
            elif outcome[0] == "failed":
                store.remember_failure(key, NoLowering(outcome[1], outcome[2]))
    finally:
        if scratch is not None:
            for t in feeders:
                t.join()
            shutil.rmtree(scratch, ignore_errors=True)
    return compiled


class _FunctionPickler(pickle.Pickler):
    """Pickles Relay functions (``Attrs`` by its items: its ``__getattr__`` defeats pickle)."""

    dispatch_table = copyreg.dispatch_table.copy()
    dispatch_table[Attrs] = lambda a: (Attrs, (a._items,))


def _payload(func: Function, types: Sequence[Type], spec: Target, key: str,
             directory: Path) -> bytes | None:
    """The pickled request for a worker, or None when the function is too deep to pickle."""
    buf = io.BytesIO()
    try:
        _FunctionPickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(
            (func, list(types), spec, key, str(directory), code_digest()))
    except (RecursionError, pickle.PicklingError, TypeError, AttributeError):
        return None
    return buf.getvalue()


def _worker_compile(payload: bytes) -> tuple[Any, ...]:
    """In a worker: compile one request into its directory as a cache entry.

    Returns ``("ok",)``, or ``("failed", op, reason)`` for :class:`NoLowering`.
    """
    func, types, spec, key, directory, digest = pickle.loads(payload)
    if digest != code_digest():
        # The backend's sources changed since the requesting process read them: this
        # worker would build another kernel than the key names. The requester compiles it.
        return ("error", "the backend's sources differ from the requesting process's")
    workdir = Path(tempfile.mkdtemp(dir=directory))
    try:
        lib, lowered, name, needs_alignment, report = _build_library(func, types, spec, key,
                                                                     None)
        so = workdir / "kernel.so"
        try:
            _link(lib, so)
        except Exception as err:  # noqa: BLE001 - TVM's errors have no common public base
            raise _compile_failed(lowered.ops, err) from err
        kernel_cache.write_entry(Path(directory), key, so,
                                 _meta(lowered, name, needs_alignment, report))
    except NoLowering as err:
        return ("failed", err.op, err.reason)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return ("ok",)


_HEADER = 8


def _read_exactly(stream: Any, n: int) -> bytes | None:
    chunks = []
    while n:
        chunk = stream.read(n)
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _worker_main() -> None:
    """The loop of a compile worker process (see :class:`_Worker`).

    Reads length-prefixed pickled requests on stdin and answers each with a pickled
    outcome on the original stdout; anything else written to stdout (by TVM, say) goes to
    stderr. ``tvm_ffi`` imports torch when it can (about 1.5 s); a worker never converts
    torch tensors, so that import is refused here. Ends at the end of its input.
    """
    sys.modules.setdefault("torch", None)  # type: ignore[arg-type]
    inp = os.fdopen(os.dup(0), "rb")
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    import tvm  # noqa: F401 - imported before the first request arrives

    while True:
        head = _read_exactly(inp, _HEADER)
        if head is None:
            return
        body = _read_exactly(inp, int.from_bytes(head, "little"))
        if body is None:
            return
        try:
            outcome = _worker_compile(body)
        except Exception as err:  # noqa: BLE001 - report, and stay alive for the next one
            outcome = ("error", f"{type(err).__name__}: {err}")
        data = pickle.dumps(outcome)
        out.write(len(data).to_bytes(_HEADER, "little") + data)
        out.flush()


class _Worker:
    """A compile worker: a ``python`` process running :func:`_worker_main`.

    It is started with the same interpreter, ``sys.path`` (as ``PYTHONPATH``) and
    environment as this process, plus ``TVM_NUM_THREADS=1`` (it runs no kernels), so it
    imports the same lowering rules and schedules; the target comes with each request.
    Unlike ``multiprocessing``'s ``spawn``, it never re-imports the user's main module.
    """

    def __init__(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        env["TVM_NUM_THREADS"] = "1"
        self.lock = threading.Lock()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from backends.tvm.kernels import _worker_main; "
                                   "_worker_main()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env, close_fds=True)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(self, payload: bytes) -> tuple[Any, ...] | None:
        """Send one request and wait for its outcome (None: the worker is gone)."""
        stdin, stdout = self.proc.stdin, self.proc.stdout
        assert stdin is not None and stdout is not None
        with self.lock:
            try:
                stdin.write(len(payload).to_bytes(_HEADER, "little") + payload)
                stdin.flush()
                head = _read_exactly(stdout, _HEADER)
                body = _read_exactly(stdout, int.from_bytes(head, "little")) if head else None
            except (OSError, ValueError):
                return None
        if body is None:
            return None
        outcome = pickle.loads(body)
        return None if outcome[0] == "error" else outcome

    def stop(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()


_WORKERS: list[_Worker] = []
_WORKERS_LOCK = threading.Lock()


def _workers(n: int) -> list[_Worker]:
    """``n`` live compile workers (started on first use, kept for later builds).

    A forked child does not share its parent's workers (their pipes are the parent's):
    it starts its own.
    """
    with _WORKERS_LOCK:
        if _OWNER and _OWNER[0] != os.getpid():
            _WORKERS.clear()
        _OWNER[:] = [os.getpid()]
        _WORKERS[:] = [w for w in _WORKERS if w.alive()]
        while len(_WORKERS) < n:
            try:
                _WORKERS.append(_Worker())
            except OSError:
                break
        if _WORKERS and not _EXIT_HOOK:
            atexit.register(shutdown_workers)
            _EXIT_HOOK.append(True)
        return list(_WORKERS[:n])


_EXIT_HOOK: list[bool] = []
_OWNER: list[int] = []


def shutdown_workers() -> None:
    """Stop the compile worker processes (they start again when needed)."""
    with _WORKERS_LOCK:
        workers, _WORKERS[:] = list(_WORKERS), []
        if _OWNER and _OWNER[0] != os.getpid():
            return                        # a forked child: the workers are the parent's
    for w in workers:
        w.stop()


# --- the cache ----------------------------------------------------------------------------

class KernelCache:
    """Compiled kernels by key (see :func:`kernel_key`), in memory and in a directory.

    Args:
        directory: where kernels are stored (default :func:`cache_directory`, read when the
            cache is created); ``disk=False`` keeps them in memory only.
    Attributes:
        hits_memory, hits_disk, misses: counters (for tests and benchmarks).

    A directory that cannot be written is not an error: the kernel stays in memory only.
    The cache also remembers, for this process, the functions that failed to compile
    (by key: they are not tried again) and the key of each function object it has seen.
    """

    def __init__(self, directory: str | Path | None = None, *, disk: bool = True) -> None:
        self.directory = Path(directory) if directory is not None else cache_directory()
        self.disk = disk
        self._memory: dict[str, Kernel] = {}
        self._lock = threading.Lock()
        self._pending: list[Future[None]] = []
        self._identity: dict[Any, tuple[Function, Kernel]] = {}
        self._keys: dict[Any, tuple[Function, str]] = {}
        self._failed: dict[str, tuple[str, str]] = {}
        self.hits_memory = 0
        self.hits_disk = 0
        self.misses = 0

    def __repr__(self) -> str:
        where = str(self.directory) if self.disk else "memory only"
        return f"<KernelCache {where}: {len(self._memory)} kernels in memory>"

    def __len__(self) -> int:
        return len(self._memory)

    def by_identity(self, func: Function, arg_types: Sequence[Type], target: Target
                    ) -> _IdentityEntry:
        """The kernel compiled for this very function object and argument types, if any.

        A lookup by key hashes the whole function (about 0.2 ms); an executor that calls
        :func:`compile_function` again with the same function object gets its kernel from this
        table in microseconds.  The entry keeps ``func`` alive, so its ``id`` stays unique.
        """
        sig = (id(func), _types_signature(arg_types), target_key(target))
        with self._lock:
            hit = self._identity.get(sig)
        if hit is not None and hit[0] is func:
            self.hits_memory += 1
            return _IdentityEntry(self, sig, func, hit[1])
        return _IdentityEntry(self, sig, func, None)

    def key_of(self, func: Function, arg_types: Sequence[Type], target: Target) -> str:
        """:func:`kernel_key`, remembered per function object (hashing the constants of a
        large kernel costs milliseconds; a build asks twice: to compile, then to run)."""
        sig = (id(func), _types_signature(arg_types), target_key(target))
        with self._lock:
            hit = self._keys.get(sig)
        if hit is not None and hit[0] is func:
            return hit[1]
        key = kernel_key(func, arg_types, target)
        with self._lock:
            if len(self._keys) >= _IDENTITY_LIMIT:
                self._keys.clear()
            self._keys[sig] = (func, key)
        return key

    def seed_key(self, func: Function, arg_types: Sequence[Type], target: Target,
                 key: str) -> None:
        """Tell :meth:`key_of` the key of ``func`` (known from a memo of the same input)."""
        sig = (id(func), _types_signature(arg_types), target_key(target))
        with self._lock:
            if len(self._keys) >= _IDENTITY_LIMIT:
                self._keys.clear()
            self._keys[sig] = (func, key)

    def get(self, key: str) -> Kernel | None:
        """The kernel of ``key`` from memory, else from disk (then kept in memory), else None."""
        with self._lock:
            kernel = self._memory.get(key)
            if kernel is not None:
                self.hits_memory += 1
                return kernel
        if self.disk:
            kernel = _load_entry(self.directory, key)
            if kernel is not None:
                with self._lock:
                    self._memory[key] = kernel
                    self.hits_disk += 1
                return kernel
        with self._lock:
            self.misses += 1
        return None

    def holds(self, key: str) -> bool:
        """Whether ``get(key)`` would find a kernel (or the key is known to fail), without
        loading anything."""
        with self._lock:
            if key in self._memory or key in self._failed:
                return True
        if not self.disk:
            return False
        so, js = kernel_cache.entry_paths(self.directory, key)
        return js.is_file() and so.is_file()

    def failure(self, key: str) -> tuple[str, str] | None:
        """``(op, reason)`` of the :class:`NoLowering` this key failed with, if it did."""
        with self._lock:
            return self._failed.get(key)

    def remember_failure(self, key: str, err: NoLowering) -> None:
        """Record that ``key`` does not compile (for this process: a changed TVM or lowering
        rule may compile it later)."""
        with self._lock:
            self._failed[key] = (err.op, err.reason)

    def workdir(self) -> Path | None:
        """A fresh directory where a compilation may leave its library for :meth:`put`.

        Inside the cache directory (so the library is renamed into place) when the cache
        is on disk and writable, else a system temporary directory; None when neither can
        be made (the kernel then runs from TVM's JIT).
        """
        if self.disk:
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                return Path(tempfile.mkdtemp(dir=self.directory))
            except OSError:
                pass
        try:
            return Path(tempfile.mkdtemp(prefix="relay-kernel-"))
        except OSError:
            return None

    def shared_directory(self) -> tuple[Path, Path | None]:
        """Where worker processes write kernels for this cache: ``(directory, scratch)``.

        The cache directory itself when it is on disk and writable (``scratch`` None);
        otherwise a temporary directory, ``scratch``, which the caller removes.
        """
        if self.disk:
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                probe = Path(tempfile.mkdtemp(dir=self.directory))
                probe.rmdir()
                return self.directory, None
            except OSError:
                pass
        scratch = Path(tempfile.mkdtemp(prefix="relay-kernels-"))
        return scratch, scratch

    def adopt(self, key: str, directory: Path) -> Kernel | None:
        """Load the entry a worker wrote for ``key`` into ``directory`` and keep it in memory
        (the entry is the disk copy when ``directory`` is the cache's own)."""
        kernel = _load_entry(directory, key)
        if kernel is not None:
            with self._lock:
                self._memory[key] = kernel
        return kernel

    def put(self, key: str, kernel: Kernel, artifact: Any, meta: dict[str, Any],
            workdir: Path | None = None) -> None:
        """Keep ``kernel`` in memory and (best effort) its library on disk.

        ``artifact`` is the linked library (a path, inside ``workdir``) or TVM's module
        (exported, which links with the C compiler). The disk copy is written by a
        background thread; :meth:`flush` waits for it, and so does the interpreter's exit.
        ``workdir`` is removed afterwards.
        """
        with self._lock:
            self._memory[key] = kernel
            if self.disk:
                self._pending.append(_writer().submit(self._store, key, artifact, meta,
                                                      workdir))
                return
        _discard(workdir)

    def load_module(self, key: str) -> Any:
        """The object pickled by :meth:`save_module` under ``key``, or None (no entry, an
        unreadable one, or a memory-only cache)."""
        if not self.disk:
            return None
        try:
            payload = kernel_cache.module_payload((self.directory / f"{key}.module").read_bytes())
            if payload is None:
                return None
            return blobs.BlobUnpickler(io.BytesIO(payload), self.directory).load()
        except Exception:  # noqa: BLE001 - a damaged or stale memo (or blob) is a miss
            return None

    def save_module(self, key: str, module: Any) -> None:
        """Pickle ``module`` (an immutable IR module) as ``<key>.module`` in the background
        (best effort: too deep to pickle, or an unwritable directory, writes nothing).

        The file is :data:`~backends.tvm.kernel_cache.MODULE_MAGIC`, the SHA-256 of the pickle,
        and the pickle (whose large arrays are blobs): :meth:`load_module` returns None for
        any file whose pickle is not the one written, so a loaded memo is exactly what was
        saved."""
        if not self.disk:
            return
        with self._lock:
            self._pending.append(_writer().submit(kernel_cache.write_module, self.directory,
                                                  key, module))

    def flush(self) -> None:
        """Wait until every kernel compiled so far is written to disk."""
        with self._lock:
            pending, self._pending = self._pending, []
        me = os.getpid()
        for job in pending:
            if getattr(job, "relay_pid", me) == me or job.done():
                job.result()
            # else: submitted by the process this one was forked from, whose writer
            # thread does not exist here (that process writes the file)

    def clear(self) -> None:
        """Forget every kernel, in memory and on disk (only this cache's files are removed)."""
        self.flush()
        with self._lock:
            self._memory.clear()
            self._identity.clear()
            self._failed.clear()
        if self.directory.is_dir():
            for path in self.directory.iterdir():
                if path.name.startswith("tmp"):                     # an interrupted write
                    if path.is_dir():
                        shutil.rmtree(path, ignore_errors=True)
                    elif path.suffix == ".partial":
                        path.unlink(missing_ok=True)
                    continue
                if path.suffix in (".so", ".json", ".module", blobs.SUFFIX) and re.fullmatch(
                        r"[0-9a-f]{40}", path.stem):
                    path.unlink(missing_ok=True)

    def entry_files(self, key: str) -> list[Path]:
        """The files of ``key``'s entry on disk, the ``.json`` last (it marks an entry
        complete): the blobs of its constants, its library, its metadata. Empty when the
        entry is not complete on disk."""
        so, js = kernel_cache.entry_paths(self.directory, key)
        try:
            meta = kernel_cache.read_sealed(js)
            files = [blobs.blob_path(self.directory, d) for d in kernel_cache.entry_blobs(meta)]
        except (OSError, ValueError, TypeError, AttributeError, KeyError):
            return []
        files += [so, js]
        return files if all(f.is_file() for f in files) else []

    def _store(self, key: str, artifact: Any, meta: dict[str, Any],
               workdir: Path | None) -> None:
        try:
            kernel_cache.write_entry(self.directory, key, artifact, meta)
        finally:
            _discard(workdir)

    def _load(self, key: str) -> Kernel | None:
        return _load_entry(self.directory, key)


def _load_entry(directory: Path, key: str) -> Kernel | None:
    """The kernel of a complete cache entry in ``directory``, or None (no entry, or a
    damaged one: see :func:`backends.tvm.kernel_cache.read_entry`)."""
    try:
        entry = kernel_cache.read_entry(directory, key)
        if entry is None:
            return None
        meta, constants, lib = entry
        name = meta["name"]
        kernel = Kernel(name, lib[name], lib,
                        [kernel_cache.type_from_json(t) for t in meta["inputs"]],
                        [kernel_cache.type_from_json(t) for t in meta["outputs"]],
                        kernel_cache.layout_from_json(meta["layout"]), constants,
                        bool(meta["needs_alignment"]))
        kernel.ops = tuple(str(op) for op in meta.get("ops", ()))
        kernel.schedule = ScheduleReport.from_json(meta.get("schedule"))
        return kernel
    except (OSError, ValueError, KeyError, RuntimeError, TypeError, AttributeError):
        return None


class _IdentityEntry:
    """A slot of :meth:`KernelCache.by_identity`: the kernel found, or where to remember one."""

    __slots__ = ("cache", "sig", "func", "kernel")

    def __init__(self, cache: KernelCache, sig: Any, func: Function, kernel: Kernel | None
                 ) -> None:
        self.cache, self.sig, self.func, self.kernel = cache, sig, func, kernel

    def remember(self, kernel: Kernel) -> None:
        with self.cache._lock:
            if len(self.cache._identity) >= _IDENTITY_LIMIT:
                self.cache._identity.clear()
            self.cache._identity[self.sig] = (self.func, kernel)


_IDENTITY_LIMIT = 65536


def _types_signature(types: Sequence[Type]) -> Any:
    out: list[Any] = []
    for t in types:
        if isinstance(t, TupleType):
            out.append(("tuple", _types_signature(t.fields)))
        elif isinstance(t, TensorType):
            out.append((t.dtype, tuple(t.shape)))
        else:
            out.append(repr(t))
    return tuple(out)


_WRITER: tuple[int, ThreadPoolExecutor] | None = None


def _writer() -> ThreadPoolExecutor:
    """The one background thread that writes kernels to disk (joined at interpreter exit).

    One per process: a forked child does not inherit its parent's thread, and a job
    submitted to the parent's executor there would never run (its futures are marked
    with the submitting process's id, see :meth:`KernelCache.flush`)."""
    global _WRITER
    pid = os.getpid()
    if _WRITER is None or _WRITER[0] != pid:
        _WRITER = (pid, _PidExecutor(max_workers=1, thread_name_prefix="relay-kernel-cache"))
    return _WRITER[1]


class _PidExecutor(ThreadPoolExecutor):
    """A thread pool whose futures carry the id of the process that submitted them."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        future = super().submit(fn, *args, **kwargs)
        future.relay_pid = os.getpid()  # type: ignore[attr-defined]
        return future


_DEFAULT: KernelCache | None = None


def default_cache() -> KernelCache:
    """The process-wide cache used when ``compile_function`` gets no ``cache``."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = KernelCache()
    return _DEFAULT
