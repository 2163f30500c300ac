"""Gradient and tangent rules of the ``tensor``, ``reduce``, ``transform`` and ``creation``
families: complete tables, declared reasons, finite differences, every dtype.

One parametrized set of properties over ``(family, operator)``; the per-family files
(``test_rules_<family>.py``) hold the worked examples. The ``nn`` family has its own file
(``test_nn_rules.py``: its cases need attribute-aware strategies).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rulecheck import check_gradient, check_rule_types, check_tangent, float64_cases

import ad.rules  # noqa: F401  (registers the rules)
from conformance.strategies.ops import op_call_args
from semantics.errors import RelayTypeError
from semantics.ops import get, list_ops
from semantics.ops.tables import GRADIENTS, TANGENTS, missing

FAMILIES = ("tensor", "reduce", "transform", "creation")

NO_DERIVATIVE = {
    **{n: "boolean" for n in ("equal", "not_equal", "less", "less_equal", "greater",
                               "greater_equal", "logical_and", "logical_or", "logical_not")},
    **{n: "" for n in ("argmax", "argmin", "all", "any", "shape_of")},
}
"""Operators whose rules are declared absent, with a word their reason must contain."""


def _members(family: str) -> list[str]:
    return [n for n in list_ops() if get(n).family == family]


DIFFERENTIABLE = [n for f in FAMILIES for n in _members(f) if n not in NO_DERIVATIVE]
DECLARED = [n for f in FAMILIES for n in _members(f) if n in NO_DERIVATIVE]


@pytest.mark.parametrize("family", FAMILIES)
def test_family_complete(family: str) -> None:
    assert _members(family), family
    assert missing(GRADIENTS, among=_members(family)) == []
    assert missing(TANGENTS, among=_members(family)) == []


@pytest.mark.parametrize("name", DECLARED)
def test_absent_rules_are_declared_with_a_reason(name: str) -> None:
    word = NO_DERIVATIVE[name]
    assert word in (GRADIENTS.reason(name) or "") and word in (TANGENTS.reason(name) or "")
    assert GRADIENTS.reason(name) and TANGENTS.reason(name)
    with pytest.raises(RelayTypeError, match=f"no gradient rule for operator {name}"):
        GRADIENTS.lookup(name)


@pytest.mark.parametrize("name", DIFFERENTIABLE)
@settings(max_examples=25)
@given(data=st.data())
def test_gradient_matches_finite_differences(name: str, data: st.DataObject) -> None:
    types, attrs, args, seed = data.draw(float64_cases(name))
    check_gradient(name, types, attrs, args, seed)


@pytest.mark.parametrize("name", DIFFERENTIABLE)
@settings(max_examples=25)
@given(data=st.data())
def test_tangent_matches_finite_differences(name: str, data: st.DataObject) -> None:
    types, attrs, args, seed = data.draw(float64_cases(name))
    check_tangent(name, types, attrs, args, seed)


@pytest.mark.parametrize("name", DIFFERENTIABLE)
@settings(max_examples=15)
@given(data=st.data())
def test_rules_typed_for_every_dtype(name: str, data: st.DataObject) -> None:
    """Any dtype: integers get no gradient, float16/32 keep their dtype."""
    types, attrs = data.draw(op_call_args(name))
    check_rule_types(name, types, attrs)
