"""The interpreter's fast paths are the rules they stand for.

* an operator call node keeps the relation's verdict for the last argument signature
  (the call node's :class:`semantics.ops.bound.BoundOp`): a call at the same node with
  other shapes or dtypes (an unchecked program) is decided again — right values, right
  errors;
* numpy's error state is installed once per evaluation, restored afterwards, and an
  operator called on its own (``OpDef.impl``) still silences numpy itself;
* a flat constructor pattern (variables and wildcards) is matched by an unrolled loop that
  fires the same rules on the same nodes, in the same order, as the general matcher;
* equal-section ``split`` slices directly: the same views as ``np.split``;
* a tuple-typed result is checked against the relation by the wrapper's fast check too;
* a node the driver meets often gets its generated block (interpreter.codegen), which the
  driver then runs: the same value, the same errors with the same spans.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import interpreter.matching as interpreter_matching
from interpreter import evaluate, evaluate_recorded
from semantics import RelayRuntimeError, ops, parse
from semantics.errors import InternalError
from semantics.ops.reference import reference
from semantics.types import TensorType, TupleType

F32 = np.float32

TWICE = """
def @twice(%x) { add(%x, %x) }
def @main(%a, %b) { (@twice(%a), @twice(%b)) }
"""


def test_a_call_site_decides_again_for_new_shapes_and_dtypes() -> None:
    mod = parse(TWICE)
    a = np.arange(3, dtype=F32)
    b = np.arange(6, dtype=np.int32).reshape(2, 3)
    for _ in range(2):  # the second round starts from the verdicts the first one left
        ra, rb = evaluate(mod, a, b, check=False)
        assert ra.dtype == F32 and ra.shape == (3,) and np.array_equal(ra, a + a)
        assert rb.dtype == np.int32 and rb.shape == (2, 3) and np.array_equal(rb, b + b)


def test_a_call_site_reports_a_relation_failure_after_a_success() -> None:
    mod = parse("def @f(%x, %y) { add(%x, %y) }\n"
                "def @main(%a, %b, %c) { (@f(%a, %b), @f(%a, %c)) }\n")
    a, b, c = np.ones(3, F32), np.ones(3, F32), np.ones(4, F32)
    with pytest.raises(RelayRuntimeError, match="operator add") as info:
        evaluate(mod, a, b, c, check=False)
    assert info.value.span is not None


def test_a_replaced_impl_is_called() -> None:
    """Wrapping ``OpDef.impl`` (as the bench does) takes effect at call sites seen before."""
    mod = parse("def @main(%x: Tensor[(2), float32]) { negative(%x) }")
    x = np.ones(2, F32)
    evaluate(mod, x)
    opdef = ops.get("negative")
    saved = opdef.impl
    calls: list[int] = []

    def counted(*args: Any, **attrs: Any) -> Any:
        calls.append(1)
        return saved(*args, **attrs)

    object.__setattr__(opdef, "impl", counted)
    try:
        assert np.array_equal(evaluate(mod, x), -x)
    finally:
        object.__setattr__(opdef, "impl", saved)
    assert calls == [1]


def test_numpy_error_state_is_silenced_during_and_restored_after() -> None:
    before = np.geterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="warn"):
            out = evaluate("def @main(%x: Tensor[(2), float32]) { divide(%x, 0f) }",
                           np.array([1, -1], F32))
            assert np.geterr()["divide"] == "warn"
            # An operator on its own silences numpy itself.
            alone = ops.get("divide").impl(np.array([1, 0], F32), np.array(0, F32))
    assert list(out) == [np.inf, -np.inf]
    assert np.isinf(alone[0]) and np.isnan(alone[1])
    assert np.geterr() == before


def test_a_trace_callback_failure_restores_the_error_state() -> None:
    before = np.geterr()

    def trace(name: str, node: Any) -> None:
        raise KeyError("stop")

    with pytest.raises(KeyError):
        evaluate("def @main() { add(1, 2) }", trace=trace)
    assert np.geterr() == before


PATTERNS = """
type Triple { T(int32, int32, int32) }
def @main(%v: int32) {
  let %xs = Cons(T(%v, 2, 3), Cons(T(4, 5, 6), Nil));
  match (%xs) {
    Nil => 0,
    Cons(T(%a, _, %c), Cons(%t, _)) => match (%t) { T(_, %b, _) => add(add(%a, %b), %c) },
    Cons(_, _) => 1,
  }
}
"""


class _Rules:
    """A recorder keeping the rule applications (rule name, node id)."""

    def __init__(self) -> None:
        self.rules: list[tuple[str, int]] = []

    def open(self, node: Any) -> None:
        pass

    def rule(self, rule: Any, node: Any) -> None:
        self.rules.append((rule.value, id(node)))

    def close(self, value: Any) -> None:
        pass


def test_flat_patterns_fire_the_rules_of_the_general_matcher(monkeypatch: Any) -> None:
    mod = parse(PATTERNS)
    traced: list[tuple[str, int]] = []
    out = evaluate(mod, 1, trace=lambda name, node: traced.append((name, id(node))))
    log = _Rules()
    assert evaluate_recorded(mod, 1, recorder=log) == out == 9
    pattern_rules = [r for r in traced if r[0].startswith("Semantics-Pattern")]
    assert [r[0] for r in pattern_rules].count("Semantics-Pattern-Wildcard") == 4
    assert traced[1:] == log.rules[1:]   # the entry's @main reference is made per evaluation
    # The general matcher alone (no pattern is flat): the same rules on the same nodes.
    monkeypatch.setattr(interpreter_matching, "_flat_pattern", lambda p: None)
    interpreter_matching._FLAT.clear()
    general: list[tuple[str, int]] = []
    try:
        evaluate(mod, 1, trace=lambda name, node: general.append((name, id(node))))
    finally:
        interpreter_matching._FLAT.clear()
    assert general[1:] == traced[1:]


def test_flat_pattern_rules_count_against_fuel() -> None:
    mod = parse(PATTERNS)
    count: list[int] = []
    evaluate(mod, 1, trace=lambda name, node: count.append(1))
    evaluate(mod, 1, fuel=len(count))
    with pytest.raises(RelayRuntimeError, match="out of fuel"):
        evaluate(mod, 1, fuel=len(count) - 1)


@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.data())
def test_equal_sections_split_like_numpy(dims: list[int], data: st.DataObject) -> None:
    ndim = len(dims)
    axis = data.draw(st.integers(-ndim, ndim - 1))
    sections = data.draw(st.integers(1, 3))
    shape = list(dims)
    shape[axis] *= sections
    x = np.arange(int(np.prod(shape)), dtype=F32).reshape(shape)
    got = ops.get("split").impl(x, indices_or_sections=sections, axis=axis)
    want = np.split(x, sections, axis=axis)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape and np.array_equal(g, w)
        assert np.shares_memory(g, x) or g.size == 0   # views, as np.split's


def _pair_relation(types: Any, attrs: Any) -> Any:
    t = types[0]
    return TupleType((t, t))


_pair_relation.name = "Pair"  # type: ignore[attr-defined]


@pytest.mark.parametrize("result, message", [
    (lambda x: (x, x.astype(np.float64)), "dtype"),
    (lambda x: (x, x[:1]), "shape"),
    (lambda x: (x,), "2-tuple"),
])
def test_a_wrong_tuple_result_is_an_internal_error(result: Any, message: str) -> None:
    impl = reference("pair", _pair_relation, lambda out, x: result(x))
    x = np.ones(3, F32)
    with pytest.raises(InternalError, match=message):
        impl(x)
    with pytest.raises(InternalError, match=message):   # the memoized verdict too
        impl(x)


def test_a_right_tuple_result_passes_both_checks() -> None:
    impl = reference("pair", _pair_relation, lambda out, x: (x, x + 1))
    x = np.ones((2, 2), F32)
    for _ in range(2):
        a, b = impl(x)
        assert a is x and np.array_equal(b, x + 1)
    assert isinstance(_pair_relation((TensorType((2, 2), "float32"),), None), TupleType)


COUNT = """
def @count(%i: int32, %n: int32) -> int32 {
  if (%i < %n) { @count(%i + 1, %n) } else { %i }
}
"""


def test_a_hot_node_gets_its_block_and_the_driver_runs_it() -> None:
    from interpreter import codegen
    from interpreter.eval import Interpreter
    from semantics.expr import If

    mod = parse(COUNT)
    body = mod["count"].body
    assert isinstance(body, If)
    assert evaluate(mod, 0, 3 * codegen.HOT, entry="count") == 3 * codegen.HOT
    block = codegen.step_cache(False).get(body)
    assert block is not None and block is not Interpreter.CASES_BY_TYPE[If]
    assert evaluate(mod, 0, 200, entry="count") == 200
    # a failure inside a block (at the last iteration: the block exists by then): the
    # case's error, with the node's span
    bad = parse(COUNT.replace("%i + 1", "%i + 1 + 0 * (1 / (%n - %i - 1))"))
    spans = set()
    for _ in range(2):
        with pytest.raises(RelayRuntimeError, match="division by zero") as info:
            evaluate(bad, 0, 50, entry="count", check=False)
        spans.add(str(info.value.span))
    assert codegen.step_cache(False).get(bad["count"].body) is not None
    assert len(spans) == 1 and None not in spans
