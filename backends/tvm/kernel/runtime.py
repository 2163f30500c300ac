"""A compiled kernel as the executors call it: :class:`Kernel` and the arrays it is given.

A ``Primitive=1`` function compiled by :mod:`backends.tvm.kernel.compile` becomes a
:class:`Kernel` ``(*arrays, out=None)``: one numpy array per flattened tensor parameter (exact
Relay dtypes and shapes); ``out`` are optional preallocated result buffers (one per flattened
output tensor) written in place; the result is an array, or a (nested) tuple of arrays when the
function returns a tuple. :class:`NoLowering` is raised when some operator of the function has
no lowering for the target or its rule declines the call (see :mod:`backends.tvm.lower`): the
caller then runs the function through the operators' numpy references.

Facts about apache-tvm 0.27 this module relies on (measured):

* a compiled function takes ``tvm_ffi`` tensors, and numpy arrays directly (converted through
  DLPack without a copy); ``bool`` arrays work;
* a kernel whose buffers stay 64-byte aligned (see :mod:`backends.tvm.kernel.compile`) would
  crash on an unaligned array (numpy's allocations are typically only 16-byte aligned): such a
  kernel copies every unaligned argument into an aligned one (the careful lane).
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from backends.tvm.lower.base import ALIGNMENT as BYTE_ALIGNMENT
from backends.tvm.lower.base import aligned_empty
from backends.tvm.sched import ScheduleReport
from backends.tvm.te_build import Layout
from semantics.ops.reference import concrete_shape
from semantics.types import TensorType

__all__ = ["ALIGNMENT", "COMPILE_FAILED", "Kernel", "NoLowering", "POOL_BYTES", "POOL_SIZE",
           "register_constant"]


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
                 "_single", "_flat", "_out_shape", "_out_dtype", "careful_calls", "_pools",
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
        self._flat = layout == tuple(range(len(self._out_sig)))
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
                    if len(args) == 1:
                        a = args[0]
                        self._fn(get(id(a), a), *consts, twin)
                    else:
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
                if self._single:
                    return outs[0]
                # (a flat tuple of results, e.g. a split: no walk of the layout)
                return tuple(outs) if self._flat else _assemble(self.layout, outs)
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
    and 64-byte aligned, else a copy that is.

    The kernel takes the array over (its callers hand it fresh arrays: the lowering's
    copies, or views of the cache's memory-mapped blobs) and never writes it. Aligned even
    where the kernel does not need it: the fast lane's TVM tensor is then this very memory
    (:func:`_tvm_tensor`), where an unaligned array would be copied once more (a cold
    ResNet-18 build copied 78 MB of weights twice, ~0.5 s; issue 35). An empty array is kept
    as it is where the kernel does not need alignment (it has no fast lane).
    """
    if type(c) is np.ndarray and c.flags.c_contiguous and c.flags.writeable and (
            c.ctypes.data % ALIGNMENT == 0 or (not aligned and not c.size)):
        return c
    return _aligned_copy(c)


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
