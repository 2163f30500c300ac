"""Operator slips: the wrong operator, swapped operands, a wrong attribute.

Each is a plausible bug in a pass that rebuilds operator calls (a lowering, a
canonicalization, a fusion): ``maximum`` emitted for ``minimum``, ``nn.relu`` lowered
to ``abs``, operands of a non-commutative operator swapped, a comparison's strictness
lost, a reduction's kind, axis or ``keepdims`` mixed up, an off-by-one in a slice or an
index, a broadcast aligned from the wrong side.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from conformance.mutants.core import (
    Mutant,
    call_op,
    is_op,
    op_name,
    rewrite_sites,
    scalar_like,
    tensor_type,
)
from semantics.expr import Call, Constant, Expr, Op, Tuple
from semantics.module import IRModule

f32 = np.float32
i32 = np.int32


def _rename(src: str, dst: str) -> Callable[[IRModule], IRModule]:
    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not is_op(old, src):
            return None
        assert isinstance(new, Call)
        return Call(Op(dst), new.args, new.attrs, new.type_args)

    def fn(mod: IRModule) -> IRModule:
        return rewrite_sites(mod, rewrite, every=True)

    fn.__name__ = f"{src}_to_{dst}"
    return fn


def _swap_operands(name: str) -> Callable[[IRModule], IRModule]:
    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not is_op(old, name):
            return None
        assert isinstance(new, Call)
        return Call(new.op, (new.args[1], new.args[0], *new.args[2:]), new.attrs)

    def fn(mod: IRModule) -> IRModule:
        return rewrite_sites(mod, rewrite, every=True)

    fn.__name__ = f"swap_{name}_operands"
    return fn


def _drop_call(*names: str) -> Callable[[IRModule], IRModule]:
    """``op(x, ...)`` becomes ``x`` (where that is well typed)."""

    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not is_op(old, *names):
            return None
        assert isinstance(new, Call)
        return new.args[0]

    def fn(mod: IRModule) -> IRModule:
        return rewrite_sites(mod, rewrite, every=True)

    fn.__name__ = "drop_" + "_".join(n.replace(".", "_") for n in names)
    return fn


def _attr(name: str, change: Callable[[Call, Call], dict | None]
          ) -> Callable[[IRModule], IRModule]:
    """Change attributes of ``name`` calls (``change(new, old)`` gives the updates)."""

    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not is_op(old, name):
            return None
        assert isinstance(new, Call) and isinstance(old, Call)
        updates = change(new, old)
        if updates is None:
            return None
        return Call(new.op, new.args, new.attrs.replace(**updates), new.type_args)

    def fn(mod: IRModule) -> IRModule:
        return rewrite_sites(mod, rewrite, every=True)

    return fn


# --- attribute slips --------------------------------------------------------------------------

_REDUCTIONS = ("sum", "mean", "max", "min", "prod", "argmax", "argmin", "all", "any")


def _reduce_wrong_axis(mod: IRModule) -> IRModule:
    """A reduction over the neighbouring axis (axis ``a`` becomes ``a + 1`` mod rank)."""

    def rewrite(new: Expr, old: Expr) -> Expr | None:
        name = op_name(old)
        if name not in _REDUCTIONS and name != "nn.softmax" and name != "nn.log_softmax":
            return None
        assert isinstance(new, Call) and isinstance(old, Call)
        t = tensor_type(old.args[0])
        if t is None or len(t.shape) < 2:
            return None
        axis = new.attrs.get("axis")
        if name in ("nn.softmax", "nn.log_softmax"):
            axis = -1 if axis is None else axis
            return Call(new.op, new.args, new.attrs.replace(axis=(axis + 1) % len(t.shape)))
        if axis is None:
            return None
        axes = axis if isinstance(axis, tuple) else (axis,)
        if len(axes) != 1:
            return None
        moved = (axes[0] + 1) % len(t.shape)
        return Call(new.op, new.args,
                    new.attrs.replace(axis=moved if not isinstance(axis, tuple) else (moved,)))

    return rewrite_sites(mod, rewrite, every=True)


def _flip_keepdims(mod: IRModule) -> IRModule:
    """keepdims inverted (on reductions of rank >= 1, where it matters)."""

    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if op_name(old) not in _REDUCTIONS:
            return None
        assert isinstance(new, Call) and isinstance(old, Call)
        t = tensor_type(old.args[0])
        if t is None or not t.shape:
            return None
        return Call(new.op, new.args, new.attrs.replace(keepdims=not new.attrs.get("keepdims",
                                                                                   False)))

    return rewrite_sites(mod, rewrite, every=True)


def _slice_off_by_one(mod: IRModule) -> IRModule:
    """``strided_slice``: the window shifted one element (begin and end both + 1)."""

    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not is_op(old, "strided_slice"):
            return None
        assert isinstance(new, Call)
        begin, end = new.attrs.get("begin"), new.attrs.get("end")
        if not begin or end is None or len(begin) != len(end):
            return None
        strides = tuple(new.attrs.get("strides") or ())
        strides += (1,) * (len(begin) - len(strides))
        # A missing begin is the first element (stride > 0) or the last (stride < 0: one
        # past it clamps back, so it stays).
        shifted = tuple(b + 1 if b is not None else 1 if s > 0 else None
                        for b, s in zip(begin, strides, strict=False))
        ends = tuple(e + 1 if e is not None and e >= 0 else e for e in end)
        if shifted == tuple(begin) and ends == tuple(end):
            return None
        return Call(new.op, new.args, new.attrs.replace(begin=shifted, end=ends))

    return rewrite_sites(mod, rewrite, every=True)


def _take_off_by_one(mod: IRModule) -> IRModule:
    """``take(data, indices)`` with every index one too large."""

    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not is_op(old, "take"):
            return None
        assert isinstance(new, Call) and isinstance(old, Call)
        it = tensor_type(old.args[1])
        if it is None:
            return None
        shifted = call_op("add", new.args[1], scalar_like(1, it.dtype))
        return Call(new.op, (new.args[0], shifted), new.attrs)

    return rewrite_sites(mod, rewrite, every=True)


def _broadcast_from_left(mod: IRModule) -> IRModule:
    """A binary elementwise call whose lower-rank operand is aligned with the *leading*
    dimensions (a reshape appending 1s) instead of the trailing ones."""
    binary = ("add", "subtract", "multiply", "maximum", "minimum", "divide", "equal", "less",
              "greater", "logical_and", "logical_or", "not_equal", "power")

    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if op_name(old) not in binary:
            return None
        assert isinstance(new, Call) and isinstance(old, Call)
        ta, tb = tensor_type(old.args[0]), tensor_type(old.args[1])
        if ta is None or tb is None or len(ta.shape) == len(tb.shape):
            return None
        small, big = (1, ta) if len(tb.shape) < len(ta.shape) else (0, tb)
        ts = tb if small == 1 else ta
        if len(ts.shape) == 0:
            return None
        shape = tuple(ts.shape) + (1,) * (len(big.shape) - len(ts.shape))
        args = list(new.args)
        args[small] = call_op("reshape", args[small], newshape=shape)
        return Call(new.op, tuple(args), new.attrs)

    return rewrite_sites(mod, rewrite, every=True)


def _concat_swapped(mod: IRModule) -> IRModule:
    """``concatenate((a, b, ...))`` with its first two parts swapped."""

    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not is_op(old, "concatenate", "stack"):
            return None
        assert isinstance(new, Call)
        parts = new.args[0]
        if not isinstance(parts, Tuple) or len(parts.fields) < 2:
            return None
        f = parts.fields
        return Call(new.op, (Tuple((f[1], f[0], *f[2:])),), new.attrs)

    return rewrite_sites(mod, rewrite, every=True)


def _leaky_relu_slope(mod: IRModule) -> IRModule:
    """``nn.leaky_relu`` lowered with the slope applied to the positive side too:
    ``alpha * x`` for ``x < 0`` is kept but the attribute is taken as ``1 - alpha``."""

    def change(new: Call, old: Call) -> dict | None:
        return {"alpha": 1.0 - float(new.attrs.get("alpha", 0.25))}

    return _attr("nn.leaky_relu", change)(mod)


def _transpose_axes_reversed(mod: IRModule) -> IRModule:
    def change(new: Call, old: Call) -> dict | None:
        axes = new.attrs.get("axes")
        if not axes or len(axes) < 2 or tuple(reversed(axes)) == tuple(axes):
            return None
        return {"axes": tuple(reversed(axes))}

    return _attr("transpose", change)(mod)


def _clip_bounds_swapped(mod: IRModule) -> IRModule:
    """``clip`` emitted as ``maximum(minimum(x, a_min), a_max)``... i.e. with its bounds
    swapped (the result is then constant where ``a_min < a_max``)."""

    def change(new: Call, old: Call) -> dict | None:
        lo, hi = new.attrs.get("a_min"), new.attrs.get("a_max")
        if lo is None or hi is None or lo == hi:
            return None
        return {"a_min": hi, "a_max": lo}

    return _attr("clip", change)(mod)


def _where_swapped(mod: IRModule) -> IRModule:
    return _swap_operands_3("where")(mod)


def _swap_operands_3(name: str) -> Callable[[IRModule], IRModule]:
    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not is_op(old, name):
            return None
        assert isinstance(new, Call)
        c, x, y = new.args
        return Call(new.op, (c, y, x), new.attrs)

    def fn(mod: IRModule) -> IRModule:
        return rewrite_sites(mod, rewrite, every=True)

    return fn


def _t(text: str, *inputs: object) -> tuple[str, tuple[object, ...]]:
    return text, inputs


MAIN_XY = "def @main(%x: Tensor[(3,), {d}], %y: Tensor[(3,), {d}]) {{ {body} }}"


def _xy(body: str, x: list, y: list, dtype: str = "float32") -> tuple[str, tuple[object, ...]]:
    return _t(MAIN_XY.format(d=dtype, body=body), np.array(x, dtype), np.array(y, dtype))


def _x(body: str, x: list, dtype: str = "float32", shape: str = "(3,)"
       ) -> tuple[str, tuple[object, ...]]:
    return _t(f"def @main(%x: Tensor[{shape}, {dtype}]) {{ {body} }}", np.array(x, dtype))


MUTANTS = [
    Mutant("add->subtract", "operator", "add emitted as subtract",
           _rename("add", "subtract"), _xy("add(%x, %y)", [1, 2, 3], [1, 1, 1])),
    Mutant("multiply->add", "operator", "multiply emitted as add",
           _rename("multiply", "add"), _xy("multiply(%x, %y)", [1, 2, 3], [3, 3, 3])),
    Mutant("subtract operands swapped", "operator", "subtract(a, b) emitted as subtract(b, a)",
           _swap_operands("subtract"), _xy("subtract(%x, %y)", [1, 2, 3], [0, 0, 0])),
    Mutant("divide operands swapped", "operator", "divide(a, b) emitted as divide(b, a)",
           _swap_operands("divide"), _xy("divide(%x, %y)", [1, 2, 4], [2, 2, 2])),
    Mutant("power operands swapped", "operator", "power(a, b) emitted as power(b, a)",
           _swap_operands("power"), _xy("power(%x, %y)", [2, 2, 2], [3, 3, 3])),
    Mutant("floor_mod operands swapped", "operator", "floor_mod(a, b) as floor_mod(b, a)",
           _swap_operands("floor_mod"), _xy("floor_mod(%x, %y)", [7, 5, 3], [2, 2, 2], "int32")),
    Mutant("maximum->minimum", "operator", "maximum emitted as minimum",
           _rename("maximum", "minimum"), _xy("maximum(%x, %y)", [1, 5, 3], [2, 2, 2])),
    Mutant("minimum->maximum", "operator", "minimum emitted as maximum",
           _rename("minimum", "maximum"), _xy("minimum(%x, %y)", [1, 5, 3], [2, 2, 2])),
    Mutant("relu->abs", "operator", "nn.relu lowered to abs",
           _rename("nn.relu", "abs"), _x("nn.relu(%x)", [-1, 0, 2])),
    Mutant("floor->ceil", "operator", "floor emitted as ceil",
           _rename("floor", "ceil"), _x("floor(%x)", [0.5, 1, -1.5])),
    Mutant("ceil->floor", "operator", "ceil emitted as floor",
           _rename("ceil", "floor"), _x("ceil(%x)", [0.5, 1, -1.5])),
    Mutant("round->trunc", "operator", "round emitted as trunc",
           _rename("round", "trunc"), _x("round(%x)", [0.75, 1, -1.75])),
    Mutant("less->less_equal", "operator", "strict comparison made non-strict",
           _rename("less", "less_equal"), _xy("less(%x, %y)", [1, 2, 3], [2, 2, 2])),
    Mutant("greater_equal->greater", "operator", "non-strict comparison made strict",
           _rename("greater_equal", "greater"),
           _xy("greater_equal(%x, %y)", [1, 2, 3], [2, 2, 2])),
    Mutant("less_equal->greater_equal", "operator", "comparison direction flipped",
           _rename("less_equal", "greater_equal"),
           _xy("less_equal(%x, %y)", [1, 2, 3], [2, 2, 2])),
    Mutant("logical_and->logical_or", "operator", "logical_and emitted as logical_or",
           _rename("logical_and", "logical_or"),
           _xy("logical_and(%x, %y)", [True, False, True], [False, False, True], "bool")),
    Mutant("negation dropped", "operator", "negative(x) simplified to x",
           _drop_call("negative"), _x("negative(%x)", [1, 0, 2])),
    Mutant("floor_divide->divide", "operator", "floor division emitted as truncating division",
           _rename("floor_divide", "divide"),
           _xy("floor_divide(%x, %y)", [-7, 7, 3], [2, 2, 2], "int32")),
    Mutant("floor_mod->mod", "operator", "floor_mod emitted as (truncating) mod",
           _rename("floor_mod", "mod"), _xy("floor_mod(%x, %y)", [-7, 7, 3], [2, 2, 2], "int32")),
    Mutant("sum->mean", "operator", "sum reduction emitted as mean",
           _rename("sum", "mean"), _x("sum(%x)", [1, 2, 3])),
    Mutant("max->min (reduce)", "operator", "max reduction emitted as min",
           _rename("max", "min"), _x("max(%x)", [1, 2, 3])),
    Mutant("argmax->argmin", "operator", "argmax emitted as argmin",
           _rename("argmax", "argmin"), _x("argmax(%x)", [1, 2, 3])),
    Mutant("reduction wrong axis", "operator", "reduction/softmax over the neighbouring axis",
           _reduce_wrong_axis,
           _x("sum(%x, axis=[0])", [[1, 2], [3, 4]], shape="(2, 2)")),
    Mutant("keepdims flipped", "operator", "a reduction's keepdims inverted",
           _flip_keepdims, _x("sum(%x, axis=[0])", [[1, 2], [3, 4]], shape="(2, 2)")),
    Mutant("strided_slice off by one", "operator", "slice window shifted by one",
           _slice_off_by_one,
           _x("strided_slice(%x, begin=[0], end=[2])", [1, 2, 3, 4], shape="(4,)")),
    Mutant("take off by one", "operator", "take with indices one too large",
           _take_off_by_one,
           _t("def @main(%x: Tensor[(3,), float32], %i: Tensor[(1,), int32]) "
              "{ take(%x, %i, axis=0) }", np.array([1, 2, 3], f32), np.array([0], i32))),
    Mutant("broadcast from the left", "operator",
           "lower-rank operand aligned with the leading dims",
           _broadcast_from_left,
           _t("def @main(%x: Tensor[(2, 2), float32], %y: Tensor[(2,), float32]) "
              "{ add(%x, %y) }", np.array([[0, 0], [0, 0]], f32), np.array([1, 2], f32))),
    Mutant("concatenate parts swapped", "operator", "concatenate/stack parts reordered",
           _concat_swapped,
           _xy("concatenate((%x, %y))", [1, 2, 3], [4, 5, 6])),
    Mutant("leaky_relu slope", "operator", "leaky_relu's alpha taken as 1 - alpha",
           _leaky_relu_slope, _x("nn.leaky_relu(%x, alpha=0.1f)", [-1, 0, 2])),
    Mutant("transpose axes reversed", "operator", "transpose with its permutation reversed",
           _transpose_axes_reversed,
           _t("def @main(%x: Tensor[(2, 2, 2), float32]) { transpose(%x, axes=[1, 0, 2]) }",
              np.arange(8, dtype=f32).reshape(2, 2, 2))),
    Mutant("clip bounds swapped", "operator", "clip's a_min and a_max swapped",
           _clip_bounds_swapped, _x("clip(%x, a_min=0f, a_max=2f)", [-1, 1, 3])),
    Mutant("where branches swapped", "operator", "where(c, x, y) emitted as where(c, y, x)",
           _where_swapped,
           _t("def @main(%c: Tensor[(2,), bool], %x: Tensor[(2,), float32]) "
              "{ where(%c, %x, negative(%x)) }", np.array([True, False]),
              np.array([1, 2], f32))),
]

_ = Constant  # re-exported names used by sibling modules
