"""The slips a student makes writing an algebraic simplifier or a CSE (issue 31 §3).

Each is right on ordinary numbers and shapes and wrong at an edge the generator has to
reach: ``x + 0 -> x`` is wrong at ``x = -0.0`` (``-0.0 + 0.0`` is ``+0.0``); ``x * 1 -> x``
is wrong when the constant of ones has a bigger shape (the product broadcasts ``x``);
``max_pool2d`` lowered as ``avg_pool2d``; and a common-subexpression elimination that
merges two allocations ``ref(c)`` with the same initial value into one reference (their
writes are no longer independent). ``x - x -> 0``, ``x / x -> 1`` and ``clip`` with its
bounds swapped are in :mod:`.special` and :mod:`.operators` already.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from conformance.mutants.core import Mutant, is_op, rewrite_sites
from semantics.expr import Call, Constant, Expr, Op, RefCreate
from semantics.module import IRModule
from semantics.visitor import post_order


def _is_filled(node: Expr, value: float) -> bool:
    return isinstance(node, Constant) and node.data.size > 0 and \
        bool(np.all(node.data == value))


def _drop_unit(op: str, unit: float) -> Callable[[IRModule], IRModule]:
    """``op(x, u)`` and ``op(u, x)`` with ``u`` a constant filled with ``unit`` -> ``x``,
    whatever the shapes (the slip: the constant's shape is not looked at). Applied at every
    site even when the result no longer type-checks (a student's pass would emit it: the
    harness then reports that the transformed program is ill-typed)."""

    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not is_op(old, op):
            return None
        assert isinstance(new, Call) and isinstance(old, Call)
        a, b = old.args
        if _is_filled(b, unit):
            return new.args[0]
        if _is_filled(a, unit) and op != "subtract":
            return new.args[1]
        return None

    def fn(mod: IRModule) -> IRModule:
        from conformance.mutants.core import _annotated, _apply

        ann = _annotated(mod)
        if ann is None:
            return mod
        sites = {name: [id(n) for n in post_order(ann[name]) if rewrite(n, n) is not None]
                 for name in ann.functions}
        targets = {i for ids in sites.values() for i in ids}
        if not targets:
            return mod
        return _apply(ann, targets, {n for n, ids in sites.items() if ids}, rewrite)

    return fn


def _max_pool_as_avg(mod: IRModule) -> IRModule:
    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not is_op(old, "nn.max_pool2d"):
            return None
        assert isinstance(new, Call)
        return Call(Op("nn.avg_pool2d"), new.args, new.attrs)

    return rewrite_sites(mod, rewrite, every=True)


def _cse_merges_refs(mod: IRModule) -> IRModule:
    """Hash-consing CSE: a ``ref(c)`` equal to an earlier ``ref(c)`` (same constant, same
    dtype and shape) becomes that very node, so both bindings share one reference."""
    from conformance.mutants.core import _annotated

    ann = _annotated(mod)
    if ann is None:
        return mod
    first: dict[tuple[str, tuple[int, ...], bytes], RefCreate] = {}
    later: dict[int, RefCreate] = {}
    for name in sorted(ann.functions):
        for node in post_order(ann[name]):
            if isinstance(node, RefCreate) and isinstance(node.value, Constant):
                data = node.value.data
                key = (data.dtype.name, tuple(data.shape), data.tobytes())
                if key in first and first[key] is not node:
                    later[id(node)] = first[key]
                else:
                    first.setdefault(key, node)

    def rewrite(new: Expr, old: Expr) -> Expr | None:
        return later.get(id(old))

    return rewrite_sites(mod, rewrite, every=True) if later else mod


def _broadcast_witness() -> str:
    """``multiply(%x, <a (2, 3) constant of ones>)`` as text (the constant in metadata)."""
    from semantics import pretty
    from semantics.expr import Function, Var
    from semantics.types import TensorType

    x = Var("x", TensorType((3,), "float32"))
    ones = Constant(np.ones((2, 3), np.float32))
    return pretty(IRModule({"main": Function((x,), Call(Op("multiply"), (x, ones)))}))


_F3 = "def @main(%x: Tensor[(3,), float32]) {{ {} }}"

MUTANTS = [
    Mutant("x + 0 -> x", "special-value", "add of a constant zero folded to the other operand "
           "(wrong at -0.0, and when the zeros broadcast x)",
           _drop_unit("add", 0.0),
           (_F3.format("add(%x, 0f)"), (np.array([-0.0, 1, 2], np.float32),))),
    Mutant("x * 1 -> x (broadcast)", "special-value",
           "multiply by a constant of ones folded to the other operand whatever its shape",
           _drop_unit("multiply", 1.0),
           (_broadcast_witness(), (np.array([1, 2, 3], np.float32),))),
    Mutant("max_pool2d as avg_pool2d", "operator", "nn.max_pool2d lowered as nn.avg_pool2d",
           _max_pool_as_avg,
           ("def @main(%x: Tensor[(1, 1, 2, 2), float32]) "
            "{ nn.max_pool2d(%x, pool_size=[2, 2]) }",
            (np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2),))),
    Mutant("CSE merges two ref allocations", "structural",
           "two ref(c) with the same constant merged into one reference by a CSE",
           _cse_merges_refs,
           ("def @main() { let %a = ref(0); let %b = ref(0); %a := 1; (!%a, !%b) }", ())),
]
