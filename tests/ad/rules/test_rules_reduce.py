"""Worked examples of the ``reduce`` family's gradient and tangent rules (the properties over
every operator of the family are in ``test_rules_families.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from rulecheck import (
    run_gradient,
)

import ad.rules  # noqa: F401  (registers the rules)
from semantics.ops import get
from semantics.types import TensorType

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
