"""Gradient and tangent rules of the ``reduce`` family against finite differences."""

from __future__ import annotations

from typing import Any

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

FAMILY = [n for n in list_ops() if get(n).family == "reduce"]
NONE = ["argmax", "argmin", "all", "any"]
DIFFERENTIABLE = [n for n in FAMILY if n not in NONE]


def test_family_complete() -> None:
    assert missing(GRADIENTS, among=FAMILY) == []
    assert missing(TANGENTS, among=FAMILY) == []


@pytest.mark.parametrize("name", NONE)
def test_index_and_boolean_results_declared(name: str) -> None:
    assert GRADIENTS.reason(name) and TANGENTS.reason(name)


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
    types, attrs = data.draw(op_call_args(name))
    check_rule_types(name, types, attrs)


# --- examples --------------------------------------------------------------------------------

def _f64(*shape: int) -> TensorType:
    return TensorType(shape, "float64")


def _grad(name: str, x: np.ndarray, attrs: dict[str, Any], g: Any) -> np.ndarray:
    out = get(name).reference(x, **attrs)
    (gx,) = run_gradient(name, [_f64(*x.shape)], attrs, [x], out, g)
    return np.asarray(gx)


def test_max_ties_share_the_adjoint_equally() -> None:
    x = np.array([[3.0, 1.0, 3.0], [0.0, 2.0, 1.0]])
    gx = _grad("max", x, {"axis": [1]}, np.array([1.0, 5.0]))
    np.testing.assert_allclose(gx, [[0.5, 0.0, 0.5], [0.0, 5.0, 0.0]])


def test_min_keepdims_exclude() -> None:
    x = np.array([[3.0, 1.0], [0.0, 2.0]])
    gx = _grad("min", x, {"axis": [1], "exclude": True, "keepdims": True}, np.ones((1, 2)))
    np.testing.assert_allclose(gx, [[0.0, 1.0], [1.0, 0.0]])


def test_prod_with_one_and_two_zeros() -> None:
    x = np.array([[2.0, 0.0, 3.0], [0.0, 4.0, 0.0], [1.0, 2.0, 5.0]])
    gx = _grad("prod", x, {"axis": 1}, np.ones(3))
    np.testing.assert_allclose(gx, [[0.0, 6.0, 0.0], [0.0, 0.0, 0.0], [10.0, 5.0, 2.0]])


def test_mean_over_no_axis_is_identity() -> None:
    x = np.arange(6.0).reshape(2, 3)
    g = np.full((2, 3), 2.0)
    gx = _grad("mean", x, {"axis": [0, 1], "exclude": True}, g)
    np.testing.assert_allclose(gx, g)


def test_variance_of_own_mean() -> None:
    x = np.array([1.0, 2.0, 6.0])
    m = np.array([3.0])
    out = get("variance").reference(x, m, unbiased=True)
    gx, gm = run_gradient("variance", [_f64(3), _f64(1)], {"unbiased": True}, [x, m], out,
                          np.array(1.0))
    np.testing.assert_allclose(gx, 2 * (x - 3.0) / 2)
    np.testing.assert_allclose(gm, [0.0], atol=1e-12)
