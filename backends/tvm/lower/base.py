"""The lowering-rule contract and the expression helpers every family shares.

A lowering rule turns one operator call of a primitive function into TVM tensor
expressions (``tvm.te``), the way TVM's ``FTVMCompute`` does (attributes, inputs, output
type).  Rules are registered in :data:`semantics.ops.tables.LOWERINGS` under the target
``"llvm"`` with :func:`lowering`; an operator that deliberately has no rule is declared with
:func:`no_lowering` and a reason.

Signature of a rule: ``rule(call: OpCall) -> te.Tensor | tuple[te.Tensor, ...]``.

* ``call.inputs``: one ``te.Tensor`` per argument (a tuple of them for a tuple argument, as
  ``concatenate``/``stack`` take);
* ``call.attrs``: the normalized attributes (defaults filled in);
* ``call.arg_types`` / ``call.out_type``: the *concrete* types of this call (every dim an
  int) — the lowering of a function specializes it to its arguments' shapes;
* the result: a tensor of exactly ``out_type``'s shape and dtype (a tuple for a tuple type).

Build-time constants: ``call.constant(i)`` is the array of argument ``i`` when that argument
is a constant of the kernel (a bound weight), and ``call.add_constant(array)`` makes a new
hidden constant of the kernel from an array the rule prepared at build time (a weight in
the layout its schedule streams: TVM's AlterOpLayout followed by FoldConstant, within one
kernel); a constant no output reads any more is dropped from the kernel. ``call.target`` is
the :class:`~backends.tvm.target.Target` being compiled for (vector lanes differ between
AVX2 and AVX-512, and a user may force them).

A rule may refuse a particular call by raising :class:`Unsupported` with the reason (integer
division, whose zero divisor must trap; ``take`` in mode ``fast``...).  The kernel compiler
turns that into :class:`backends.tvm.kernel.NoLowering`, and the executors run the
primitive function through the operators' numpy references instead, which raise the
oracle's ``RelayRuntimeError``.  So a compiled kernel never has to report an error: every
call a rule accepts is total.

Helpers here: broadcasting (:func:`broadcast_compute`), constants of a dtype (:func:`const`),
NaN-propagating ``max``/``min`` (numpy's convention, which the references follow; LLVM's
``maxnum`` would drop the NaN), and dtype predicates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from backends.tvm.target import Target
from semantics.expr import Attrs
from semantics.ops.reference import concrete_shape
from semantics.ops.tables import LOWERINGS
from semantics.types import TensorType, Type

TARGET = "llvm"

TeResult = Any  # te.Tensor | tuple[te.Tensor, ...] (tvm is imported lazily by the families)


class Unsupported(Exception):
    """A rule declines this particular call (the reason is shown in ``NoLowering``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class OpCall:
    """One operator call to lower: see the module docstring for the fields."""

    op: str
    inputs: tuple[Any, ...]
    attrs: Attrs
    arg_types: tuple[Type, ...]
    out_type: Type
    constants: tuple[Any, ...] = ()
    """Per argument: its array when it is a constant of the kernel, else None."""
    target: Target | None = None
    """The build's target (``build_te`` always sets it; None: the host)."""
    hide: Callable[[Any, str], Any] | None = field(default=None, compare=False, repr=False)
    """Adds a hidden constant to the kernel being built (see :meth:`add_constant`)."""
    arg_exprs: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    """The Relay argument expressions inside the kernel (for :meth:`range_of`)."""

    def constant(self, i: int) -> Any:
        """The array of argument ``i`` if it is a constant of the kernel, else None."""
        return self.constants[i] if i < len(self.constants) else None

    def range_of(self, i: int) -> tuple[float, float] | None:
        """The bounds every element of integer argument ``i`` is known to lie in inside the
        kernel (:func:`passes.value_range.value_range`), or None."""
        if i >= len(self.arg_exprs):
            return None
        from passes.value_range import value_range

        return value_range(self.arg_exprs[i])

    def add_constant(self, array: Any, name: str) -> Any:
        """A placeholder for a new hidden constant of the kernel holding ``array``.

        Raises:
            Unsupported: the call is not being built into a kernel (no constants to add).
        """
        if self.hide is None:
            raise Unsupported("no kernel to hold a prepared constant")
        return self.hide(array, name)

    @property
    def out_shape(self) -> tuple[int, ...]:
        """The concrete shape of a tensor result."""
        return concrete_shape(self.out_type)

    @property
    def out_dtype(self) -> str:
        """The dtype of a tensor result."""
        t = self.out_type
        assert isinstance(t, TensorType)
        return t.dtype

    def in_dtype(self, i: int = 0) -> str:
        """The dtype of tensor argument ``i``."""
        t = self.arg_types[i]
        assert isinstance(t, TensorType)
        return t.dtype

    def in_shape(self, i: int = 0) -> tuple[int, ...]:
        """The concrete shape of tensor argument ``i``."""
        return concrete_shape(self.arg_types[i])


Rule = Callable[[OpCall], TeResult]


def lowering(*ops: str) -> Callable[[Rule], Rule]:
    """Decorator: the decorated rule lowers every operator of ``ops`` for ``llvm``."""
    def deco(rule: Rule) -> Rule:
        for op in ops:
            LOWERINGS.add(op, rule, TARGET)
        return rule
    return deco


def no_lowering(op: str, reason: str) -> None:
    """Declare that ``op`` has no ``llvm`` lowering on purpose (executors run its reference)."""
    LOWERINGS.declare_none(op, reason, TARGET)


# --- dtypes -------------------------------------------------------------------------------

def is_float(dtype: str) -> bool:
    return dtype.startswith("float")


def is_int(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))


def is_signed(dtype: str) -> bool:
    return dtype.startswith("int")


def bits(dtype: str) -> int:
    return 8 if dtype == "bool" else int(dtype.lstrip("uintfloa"))


# --- expressions --------------------------------------------------------------------------

ALIGNMENT = 64
"""Bytes: TVM's buffers are 64-byte aligned; a constant at such an address is passed to the
kernels without a copy (DLPack)."""


def aligned_empty(shape: Sequence[int], dtype: Any) -> np.ndarray:
    """An uninitialized C-contiguous array of ``shape`` whose data starts at a multiple of
    :data:`ALIGNMENT` bytes."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    raw = np.empty(n + ALIGNMENT, np.uint8)
    start = (-raw.ctypes.data) % ALIGNMENT
    return raw[start:start + n].view(dt).reshape(tuple(shape))


def const(value: Any, dtype: str) -> Any:
    """A TIR constant of ``dtype`` (floats rounded to the dtype first; bools as 0/1)."""
    import numpy as np
    from tvm import tirx

    if dtype == "bool":
        return tirx.const(bool(value), "bool")
    if is_float(dtype):
        with np.errstate(all="ignore"):   # rounding to float16 may overflow to inf
            rounded = float(np.asarray(value, dtype=np.float64).astype(dtype))
        return tirx.const(rounded, dtype)
    return tirx.const(int(value), dtype)


def padding_zero(call: OpCall, dtype: str) -> Any:
    """The zero a lowering pads with before a multiplication: a load of a hidden constant 0
    for floats, a literal otherwise.

    TVM's simplifier folds ``0.0 * w`` to ``0.0`` (it treats floats as reals), so a tap it
    proves to lie in the padding would contribute 0 where IEEE arithmetic (the oracle's)
    gives NaN for ``w`` = ±inf or NaN. A value loaded from a buffer is not a constant to the
    simplifier, and LLVM keeps the IEEE product (it folds ``0 * w`` only under fast-math).
    Without a kernel to hold the constant (a lowering outside a build), the literal."""
    if not is_float(dtype) or call.hide is None:
        return const(0, dtype)
    return call.add_constant(np.zeros(1, dtype), "padding_zero")[0]


def nan_max(a: Any, b: Any, dtype: str) -> Any:
    """``max(a, b)``, NaN if either is NaN (for floats); plain ``max`` otherwise."""
    from tvm import tirx

    if not is_float(dtype):
        return tirx.max(a, b)
    return tirx.Select(tirx.isnan(a), a, tirx.Select(a >= b, a, b))


def nan_min(a: Any, b: Any, dtype: str) -> Any:
    """``min(a, b)``, NaN if either is NaN (for floats); plain ``min`` otherwise."""
    from tvm import tirx

    if not is_float(dtype):
        return tirx.min(a, b)
    return tirx.Select(tirx.isnan(a), a, tirx.Select(a <= b, a, b))


def float_div(a: Any, b: Any) -> Any:
    """IEEE ``a / b`` for floats.  A divisor that is a constant zero is written ``a * ±inf``
    (the same IEEE result): TVM's constant folder refuses to build a division by a constant
    zero (``Check failed: fb->value != 0``)."""
    import math

    from tvm import tirx

    if isinstance(b, tirx.FloatImm) and float(b.value) == 0.0:
        inf = math.copysign(math.inf, float(b.value))
        return a * tirx.const(inf, str(b.ty.dtype))
    return tirx.Div(a, b)


def fmod(a: Any, b: Any, dtype: str) -> Any:
    """C ``fmod`` (exact) of float operands: a call of libm's ``fmodf``/``fmod``.

    TVM 0.27's LLVM code generator has no lowering for the ``tirx.fmod`` intrinsic ("unknown
    intrinsic"), so the C function is called directly (float16 through ``fmodf``: the
    remainder of two float16 values is exactly representable in float16).
    """
    from tvm import tirx

    if dtype == "float16":
        return tirx.Cast("float16", fmod(tirx.Cast("float32", a), tirx.Cast("float32", b),
                                         "float32"))
    name = "fmodf" if dtype == "float32" else "fmod"
    return tirx.call_pure_extern(dtype, name, a, b)


def broadcast_index(in_shape: Sequence[int], out_shape: Sequence[int],
                    idx: Sequence[Any]) -> list[Any]:
    """The index into an input of ``in_shape`` broadcast (numpy rules) to ``out_shape``."""
    lead = len(out_shape) - len(in_shape)
    out = []
    for k, d in enumerate(in_shape):
        out.append(0 if d == 1 and out_shape[lead + k] != 1 else idx[lead + k])
    return out


def broadcast_compute(call: OpCall, fn: Callable[..., Any], name: str | None = None) -> Any:
    """``te.compute`` of ``fn(*elements)`` over the broadcast of the call's tensor inputs."""
    from tvm import te

    shape = call.out_shape
    shapes = [call.in_shape(i) for i in range(len(call.inputs))]

    def body(*idx: Any) -> Any:
        vals = [x[tuple(broadcast_index(s, shape, idx))] for x, s in zip(call.inputs, shapes)]
        return fn(*vals)

    return te.compute(shape, body, name=name or call.op.replace(".", "_"))


def map_compute(x: Any, fn: Callable[[Any], Any], name: str) -> Any:
    """``te.compute`` of ``fn(x[i])`` over ``x``'s shape."""
    from tvm import te

    return te.compute(x.shape, lambda *i: fn(x[i]), name=name)
