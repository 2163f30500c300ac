"""Gradient and tangent rules of the ``creation`` family against finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rulecheck import (
    check_gradient,
    check_rule_types,
    check_tangent,
    float64_cases,
    run_gradient,
)

import ad.rules  # noqa: F401  (registers the rules)
from conformance.strategies.ops import op_call_args
from semantics.ops import get, list_ops
from semantics.ops.tables import GRADIENTS, TANGENTS, missing
from semantics.types import TensorType

FAMILY = [n for n in list_ops() if get(n).family == "creation"]


def test_family_complete() -> None:
    assert missing(GRADIENTS, among=FAMILY) == []
    assert missing(TANGENTS, among=FAMILY) == []


@pytest.mark.parametrize("name", FAMILY)
@settings(max_examples=25)
@given(data=st.data())
def test_gradient_matches_finite_differences(name: str, data: st.DataObject) -> None:
    types, attrs, args, seed = data.draw(float64_cases(name))
    check_gradient(name, types, attrs, args, seed)


@pytest.mark.parametrize("name", FAMILY)
@settings(max_examples=25)
@given(data=st.data())
def test_tangent_matches_finite_differences(name: str, data: st.DataObject) -> None:
    types, attrs, args, seed = data.draw(float64_cases(name))
    check_tangent(name, types, attrs, args, seed)


@pytest.mark.parametrize("name", FAMILY)
@settings(max_examples=15)
@given(data=st.data())
def test_rules_typed_for_every_dtype(name: str, data: st.DataObject) -> None:
    types, attrs = data.draw(op_call_args(name))
    check_rule_types(name, types, attrs)


def test_full_fill_value_gets_the_sum() -> None:
    fill = np.asarray(2.0, dtype=np.float32)
    attrs = {"shape": [2, 3], "dtype": "float64"}
    out = get("full").reference(fill, **attrs)
    (gf,) = run_gradient("full", [TensorType((), "float32")], attrs, [fill], out,
                         np.arange(6.0).reshape(2, 3))
    assert gf.dtype == np.float32 and gf.shape == ()
    assert float(gf) == 15.0


def test_arange_start_and_step() -> None:
    start, stop, step = (np.asarray(v) for v in (1.0, 4.5, 1.0))
    attrs = {"dtype": "float64"}
    out = get("arange").reference(start, stop, step, **attrs)
    f64 = TensorType((), "float64")
    g = np.array([1.0, 2.0, 3.0, 4.0])
    gs, gstop, gstep = run_gradient("arange", [f64, f64, f64], attrs, [start, stop, step], out,
                                    g)
    assert float(gs) == 10.0 and float(gstop) == 0.0
    assert float(gstep) == 0 * 1 + 1 * 2 + 2 * 3 + 3 * 4
