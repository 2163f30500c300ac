"""The type-directed generator: expressions have the requested type; modules use every construct."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.strategies.programs import (
    Program,
    ProgramConfig,
    TypingContext,
    well_typed_exprs,
    well_typed_modules,
)
from semantics import types_equal
from semantics.expr import (
    Call,
    Constructor,
    Function,
    GlobalVar,
    Let,
    Match,
    PatternConstructor,
    PatternTuple,
    RefRead,
    RefWrite,
    Var,
)
from semantics.module import IRModule
from semantics.types import FuncType, RefType, TensorType, TupleType, Type
from semantics.visitor import count_uses, post_order
from typechecker import type_of

X = Var("x", TensorType((2,), "int32"))
R = Var("r", RefType(TensorType((), "float32")))
TARGETS: list[Type] = [
    TensorType((), "int32"), TensorType((2, 3), "float32"), TensorType((), "bool"),
    TupleType((TensorType((2,), "int32"), TupleType(()))),
    FuncType((TensorType((), "int64"),), TensorType((2,), "int32")),
    RefType(TensorType((3,), "uint8")),
]


@settings(max_examples=100)
@given(st.data())
def test_exprs_have_the_requested_type(data: st.DataObject) -> None:
    target = data.draw(st.sampled_from(TARGETS))
    ctx = TypingContext(((X, X.type_annotation), (R, R.type_annotation)))
    e = data.draw(well_typed_exprs(target, ctx, config=ProgramConfig(max_depth=2)))
    fn_type = type_of(Function((X, R), e))
    assert isinstance(fn_type, FuncType)
    assert types_equal(fn_type.ret_type, target)


def test_modules_use_every_construct() -> None:
    """A random sample uses every construct; a rare one it misses (which one depends on the
    sample) must then turn up in a directed search with the generator restricted to the
    constructs around it (ADTs and matches)."""
    seen: set[str] = set()
    _collect_constructs(well_typed_modules(), seen)
    expected = {"polymorphic ADT", "polymorphic global", "sharing", "self call", "global call",
                "constructor", "let-bound function", "closure call", "match", "match?",
                "tuple pattern", "nested pattern", "ref write", "ref read", "ref alias",
                "higher-order parameter"}
    directed = [
        ProgramConfig(max_adts=2, min_op_bindings=0).with_features(
            "adt", "match", "partial_match", "tuple", "let", "global", "poly", "recursion"),
        ProgramConfig(min_op_bindings=0, max_let_chain=3).with_features(
            "let", "ref", "tuple", "closure", "higher_order", "let_rec", "sharing", "op"),
    ]
    for config in directed:
        if expected <= seen:
            break
        _collect_constructs(well_typed_modules(config), seen)
    assert expected <= seen, expected - seen


def _collect_constructs(strategy, seen: set[str]) -> None:  # type: ignore[no-untyped-def]
    @settings(max_examples=200, database=None)
    @given(strategy)
    def collect(program: Program) -> None:
        mod: IRModule = program.module
        for td in mod.types.values():
            if td.type_vars:
                seen.add("polymorphic ADT")
        for name, fn in mod.functions.items():
            if fn.type_params:
                seen.add("polymorphic global")
            uses = count_uses(fn.body)
            if any(n > 1 for n in uses.values()):
                seen.add("sharing")
            for node in post_order(fn):
                if isinstance(node, Call) and isinstance(node.op, GlobalVar):
                    seen.add("self call" if node.op.name_hint == name else "global call")
                if isinstance(node, Call) and isinstance(node.op, Constructor):
                    seen.add("constructor")
                if isinstance(node, Let) and isinstance(node.value, Function):
                    seen.add("let-bound function")
                if isinstance(node, Call) and isinstance(node.op, Var):
                    seen.add("closure call")
                if isinstance(node, Call) and isinstance(node.op, Function):
                    seen.add("immediate closure call")
                if isinstance(node, Match):
                    seen.add("match" if node.complete else "match?")
                    for c in node.clauses:
                        if isinstance(c.lhs, PatternTuple):
                            seen.add("tuple pattern")
                        if isinstance(c.lhs, PatternConstructor) and any(
                                isinstance(p, (PatternConstructor, PatternTuple))
                                for p in c.lhs.patterns):
                            seen.add("nested pattern")
                if isinstance(node, RefWrite):
                    seen.add("ref write")
                if isinstance(node, RefRead):
                    seen.add("ref read")
                if isinstance(node, Let) and isinstance(node.value, Var) and isinstance(
                        node.var.type_annotation, RefType):
                    seen.add("ref alias")
                if isinstance(node, Function) and any(
                        isinstance(p.type_annotation, FuncType) for p in node.params):
                    seen.add("higher-order parameter")

    collect()


def test_inputs_match_main() -> None:
    @settings(max_examples=50, database=None)
    @given(well_typed_modules())
    def check(program: Program) -> None:
        assert len(program.inputs) == len(program.module["main"].params)
        assert "def @main" in repr(program)

    check()


def test_without_finite_extremes_float_edge_cases_are_nan_inf_and_negative_zero() -> None:
    """``finite_extremes=False`` (the backend properties): no ±max, 0.75·max or subnormal in
    inputs or constants, so a reduction's value does not depend on its order; NaN and ±inf
    remain."""
    import numpy as np

    from semantics.expr import Constant
    from semantics.visitor import post_order

    seen_special = []

    def float_leaves(value: object) -> list[np.ndarray]:
        out, stack = [], [value]
        while stack:
            v = stack.pop()
            if isinstance(v, np.ndarray) and v.dtype.kind == "f":
                out.append(v)
            elif isinstance(v, (tuple, list)):
                stack.extend(v)
        return out

    @settings(max_examples=60, database=None)
    @given(well_typed_modules(finite_extremes=False))
    def check(program: Program) -> None:
        arrays = float_leaves([program.inputs, list(program.alternates)])
        for fn in program.module.functions.values():
            arrays += [n.data for n in post_order(fn)
                       if isinstance(n, Constant) and n.data.dtype.kind == "f"]
        for a in arrays:
            finite = np.abs(a[np.isfinite(a)].astype(np.float64))
            # At most the chains' rounding probe 2**(p+1) (where the float gap is 2).
            limit = max(8.0, float(2 ** (np.finfo(a.dtype).nmant + 1)))
            assert not finite.size or finite.max() <= limit, finite
            tiny = float(np.finfo(a.dtype).tiny)                   # the smallest normal
            assert not (finite[finite > 0] < tiny).any(), finite   # no subnormals
            seen_special.append(bool((~np.isfinite(a)).any()))

    check()
    assert any(seen_special)
