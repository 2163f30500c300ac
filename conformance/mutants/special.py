"""Special-value slips: rewrites that are right for ordinary numbers and wrong at the edges.

Algebraic simplifications that forget NaN and the infinities (``x - x → 0``,
``x * 0 → 0``, ``x / x → 1``, ``x == x → True``), lowerings that differ at NaN or
``-inf`` (``minimum`` as a select, ``relu`` as ``x * (x > 0)``, ``floor`` through an
integer cast), a reduction started from 0 instead of its identity, float16 sums
accumulated in float32 (no intermediate overflow), saturating instead of wrapping
integer arithmetic and casts, and an off-by-one folded integer constant.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from conformance.mutants.core import Mutant, call_op, is_op, rewrite_sites, scalar_like, tensor_type
from semantics.expr import Call, Constant, Expr, Var
from semantics.module import IRModule

f16 = np.float16
f32 = np.float32
i8 = np.int8
i32 = np.int32

_WIDER = {"int8": "int32", "int16": "int32", "uint8": "int32", "uint16": "int32",
          "int32": "int64", "uint32": "int64"}


def _same(a: Expr, b: Expr) -> bool:
    return a is b or (isinstance(a, Var) and a is b)


def _self_op(name: str, make: str) -> Callable[[IRModule], IRModule]:
    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not is_op(old, name):
            return None
        assert isinstance(old, Call) and isinstance(new, Call)
        if not _same(old.args[0], old.args[1]):
            return None
        # The fold keeps the operand (same type as the result: both operands are one node);
        # a comparison's fold keeps the call (its result is bool).
        return call_op(make, new if name == "equal" else new.args[0])

    def fn(mod: IRModule) -> IRModule:
        return rewrite_sites(mod, rewrite, every=True)

    return fn


def _times_zero(mod: IRModule) -> IRModule:
    """``x * 0`` (a constant zero operand) folded to zeros."""

    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not is_op(old, "multiply"):
            return None
        assert isinstance(old, Call) and isinstance(new, Call)
        if not any(isinstance(a, Constant) and a.data.size and not np.any(a.data)
                   for a in old.args):
            return None
        return call_op("zeros_like", new)

    return rewrite_sites(mod, rewrite, every=True)


def _minimum_as_select(mod: IRModule) -> IRModule:
    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not is_op(old, "minimum"):
            return None
        assert isinstance(new, Call)
        a, b = new.args
        return call_op("where", call_op("less", a, b), a, b)

    return rewrite_sites(mod, rewrite, every=True)


def _relu_as_mask(mod: IRModule) -> IRModule:
    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not is_op(old, "nn.relu"):
            return None
        assert isinstance(new, Call)
        t = tensor_type(old)
        if t is None:
            return None
        x = new.args[0]
        mask = call_op("cast", call_op("greater", x, scalar_like(0, t.dtype)), dtype=t.dtype)
        return call_op("multiply", x, mask)

    return rewrite_sites(mod, rewrite, every=True)


def _floor_via_cast(mod: IRModule) -> IRModule:
    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not is_op(old, "floor"):
            return None
        assert isinstance(new, Call)
        t = tensor_type(old)
        if t is None:
            return None
        return call_op("cast", call_op("cast", new.args[0], dtype="int64"), dtype=t.dtype)

    return rewrite_sites(mod, rewrite, every=True)


def _max_from_zero(mod: IRModule) -> IRModule:
    """A ``max`` reduction whose accumulator starts at 0 instead of the lowest value."""

    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not is_op(old, "max"):
            return None
        t = tensor_type(old)
        if t is None or t.dtype == "bool":
            return None
        return call_op("maximum", new, scalar_like(0, t.dtype))

    return rewrite_sites(mod, rewrite, every=True)


_ARITH = ("add", "subtract", "multiply")


def _f16_chain_in_f32(mod: IRModule) -> IRModule:
    """Two fused float16 arithmetic operations computed in float32 and rounded once: the
    intermediate result no longer overflows to infinity."""

    def is_f16_arith(e: Expr) -> bool:
        t = tensor_type(e)
        return is_op(e, *_ARITH) and t is not None and t.dtype == "float16"

    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not is_f16_arith(old):
            return None
        assert isinstance(old, Call) and isinstance(new, Call)
        if not any(is_f16_arith(a) for a in old.args):
            return None
        args = []
        for a_old, a_new in zip(old.args, new.args, strict=True):
            if is_f16_arith(a_old) and isinstance(a_new, Call):
                args.append(Call(a_new.op, tuple(call_op("cast", x, dtype="float32")
                                                 for x in a_new.args), a_new.attrs))
            else:
                args.append(call_op("cast", a_new, dtype="float32"))
        return call_op("cast", Call(new.op, tuple(args), new.attrs), dtype="float16")

    return rewrite_sites(mod, rewrite, every=True)


def _saturating_add(mod: IRModule) -> IRModule:
    """Integer ``add``/``subtract``/``multiply`` computed wider and clipped, not wrapped."""

    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not is_op(old, "add", "subtract", "multiply"):
            return None
        assert isinstance(new, Call)
        t = tensor_type(old)
        if t is None or t.dtype not in _WIDER:
            return None
        wide = _WIDER[t.dtype]
        info = np.iinfo(t.dtype)
        inner = Call(new.op, tuple(call_op("cast", a, dtype=wide) for a in new.args), new.attrs)
        clipped = call_op("clip", inner, a_min=float(info.min), a_max=float(info.max))
        return call_op("cast", clipped, dtype=t.dtype)

    return rewrite_sites(mod, rewrite, every=True)


def _saturating_cast(mod: IRModule) -> IRModule:
    """A narrowing integer ``cast`` that saturates instead of wrapping."""

    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not is_op(old, "cast"):
            return None
        assert isinstance(new, Call) and isinstance(old, Call)
        src, dst = tensor_type(old.args[0]), tensor_type(old)
        if src is None or dst is None or dst.dtype == "bool" or src.dtype == "bool":
            return None
        sk, dk = np.dtype(src.dtype), np.dtype(dst.dtype)
        if sk.kind not in "iu" or dk.kind not in "iu" or dk.itemsize > sk.itemsize and \
                sk.kind == dk.kind:
            return None
        info = np.iinfo(dk)
        lo, hi = max(int(info.min), int(np.iinfo(sk).min)), min(int(info.max),
                                                                 int(np.iinfo(sk).max))
        clipped = call_op("clip", new.args[0], a_min=float(lo), a_max=float(hi))
        return Call(new.op, (clipped,), new.attrs)

    return rewrite_sites(mod, rewrite, every=True)


def _off_by_one_constant(mod: IRModule) -> IRModule:
    """The first scalar ``int32`` constant folded one too large."""

    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not isinstance(old, Constant) or old.data.dtype != np.int32 or old.data.ndim != 0:
            return None
        return Constant(np.array(int(old.data) + 1, dtype=np.int32))

    return rewrite_sites(mod, rewrite)


def _w(text: str, *inputs: object) -> tuple[str, tuple[object, ...]]:
    return text, inputs


_X3 = "def @main(%x: Tensor[(3,), float32]) {{ {} }}"

MUTANTS = [
    Mutant("x - x -> 0", "special-value", "subtract of a node from itself folded to zeros",
           _self_op("subtract", "zeros_like"),
           _w(_X3.format("let %y = add(%x, 1f); subtract(%y, %y)"),
              np.array([1, np.inf, np.nan], f32))),
    Mutant("x / x -> 1", "special-value", "divide of a node by itself folded to ones",
           _self_op("divide", "ones_like"),
           _w(_X3.format("let %y = add(%x, 1f); divide(%y, %y)"), np.array([1, -1, 0], f32))),
    Mutant("x == x -> True", "special-value", "equal of a node with itself folded to True",
           _self_op("equal", "ones_like"),
           _w(_X3.format("let %y = add(%x, 1f); equal(%y, %y)"), np.array([1, 2, np.nan], f32))),
    Mutant("x * 0 -> 0", "special-value", "multiply by a constant zero folded to zeros",
           _times_zero, _w(_X3.format("multiply(%x, 0f)"), np.array([1, np.inf, np.nan], f32))),
    Mutant("minimum as select", "special-value", "minimum(a, b) lowered to where(a < b, a, b)",
           _minimum_as_select,
           _w("def @main(%x: Tensor[(2,), float32]) { minimum(%x, 1f) }",
              np.array([np.nan, 0], f32))),
    Mutant("relu as x * (x > 0)", "special-value", "relu lowered to a multiplication by a mask",
           _relu_as_mask, _w(_X3.format("nn.relu(%x)"), np.array([-np.inf, 1, -1], f32))),
    Mutant("floor via int cast", "special-value", "floor lowered to a cast through int64",
           _floor_via_cast, _w(_X3.format("floor(%x)"), np.array([-0.5, 1.5, 2], f32))),
    Mutant("max reduction from 0", "special-value", "max reduction's accumulator starts at 0",
           _max_from_zero, _w(_X3.format("max(%x)"), np.array([-3, -2, -1], f32))),
    Mutant("float16 chain in float32", "special-value",
           "fused float16 arithmetic computed in float32 (no intermediate overflow)",
           _f16_chain_in_f32,
           _w("def @main(%x: Tensor[(2,), float16]) { subtract(add(%x, %x), %x) }",
              np.array([40000, 1], f16))),
    Mutant("saturating int arithmetic", "special-value",
           "integer add/subtract/multiply saturate instead of wrapping",
           _saturating_add,
           _w("def @main(%x: Tensor[(2,), int8]) { add(%x, 100i8) }", np.array([100, 1], i8))),
    Mutant("saturating narrowing cast", "special-value",
           "a narrowing integer cast saturates instead of wrapping",
           _saturating_cast,
           _w("def @main(%x: Tensor[(2,), int32]) { cast(%x, dtype=\"int8\") }",
              np.array([300, 1], i32))),
    Mutant("off-by-one constant", "special-value", "a folded int32 scalar constant off by one",
           _off_by_one_constant, _w("def @main(%x: int32) { add(%x, 2) }", np.int32(1))),
]
