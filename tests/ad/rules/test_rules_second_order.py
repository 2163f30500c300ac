"""Gradients of gradients: each rule's output differentiated again by the rules (reverse over
reverse, reverse over forward) against finite differences."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rulecheck import float64_cases
from second_order import check_second_order

import ad.rules  # noqa: F401  (registers the rules)
from semantics.ops import get, list_ops
from semantics.ops.tables import GRADIENTS

FAMILIES = ("tensor", "reduce", "transform", "creation")
OPS = [n for n in list_ops() if get(n).family in FAMILIES and GRADIENTS.has(n)]


@pytest.mark.parametrize("name", OPS)
@settings(max_examples=10)
@given(data=st.data())
def test_rules_differentiate_again(name: str, data: st.DataObject) -> None:
    types, attrs, args, seed = data.draw(float64_cases(name))
    check_second_order(name, types, attrs, args, seed)
