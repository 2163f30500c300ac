"""Worked examples of the ``tensor`` family's gradient and tangent rules (the properties over
every operator of the family are in ``test_rules_families.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from rulecheck import (
    gradient_exprs,
    prepare,
    rule_var,
    run_gradient,
)

import ad.rules  # noqa: F401  (registers the rules)
from semantics.types import TensorType

# --- examples --------------------------------------------------------------------------------

def _grads(name: str, types: list[TensorType], attrs: dict[str, Any], args: list[Any],
           out: Any, g: Any) -> list[Any]:
    return run_gradient(name, types, attrs, args, out, g)


def test_broadcast_add_sums_back() -> None:
    x = np.ones((2, 3))
    y = np.ones((3,))
    g = np.arange(6.0).reshape(2, 3)
    gx, gy = _grads("add", [TensorType((2, 3), "float64"), TensorType((3,), "float64")], {},
                    [x, y], x + y, g)
    np.testing.assert_array_equal(gx, g)
    np.testing.assert_array_equal(gy, g.sum(axis=0))


def test_maximum_ties_go_to_x() -> None:
    x = np.array([1.0, 2.0, 3.0])
    y = np.array([1.0, 5.0, 0.0])
    g = np.ones(3)
    gx, gy = _grads("maximum", [TensorType((3,), "float64")] * 2, {}, [x, y],
                    np.maximum(x, y), g)
    np.testing.assert_array_equal(gx, [1.0, 0.0, 1.0])
    np.testing.assert_array_equal(gy, [0.0, 1.0, 0.0])


def test_power_gradients_at_zero_base_and_exponent() -> None:
    x = np.array([0.0, 2.0, 0.0])
    y = np.array([2.0, 3.0, 0.0])
    gx, gy = _grads("power", [TensorType((3,), "float64")] * 2, {}, [x, y], x ** y,
                    np.ones(3))
    np.testing.assert_allclose(gx, [0.0, 12.0, 0.0])
    np.testing.assert_allclose(gy, [0.0, 8.0 * np.log(2.0), 0.0])


def test_cast_between_float_dtypes_casts_back() -> None:
    x = np.array([1.5, -2.0], dtype=np.float32)
    (gx,) = _grads("cast", [TensorType((2,), "float32")], {"dtype": "float64"}, [x],
                   x.astype(np.float64), np.array([0.25, 4.0]))
    assert gx.dtype == np.float32
    np.testing.assert_array_equal(gx, [0.25, 4.0])


def test_integer_operands_get_no_gradient() -> None:
    run = prepare("multiply", [TensorType((2,), "int32")] * 2, {})
    assert gradient_exprs(run, rule_var("g", run.out_type)) == [None, None]


def test_floor_has_zero_gradient() -> None:
    x = np.array([0.5, -1.5, 2.25])
    (gx,) = _grads("floor", [TensorType((3,), "float64")], {}, [x], np.floor(x), np.ones(3))
    np.testing.assert_array_equal(gx, np.zeros(3))


def test_clip_passes_inside_bounds_only() -> None:
    x = np.array([-2.0, 0.0, 0.5, 1.0, 3.0])
    (gx,) = _grads("clip", [TensorType((5,), "float64")], {"a_min": 0.0, "a_max": 1.0}, [x],
                   np.clip(x, 0.0, 1.0), np.ones(5))
    np.testing.assert_array_equal(gx, [0.0, 1.0, 1.0, 1.0, 0.0])
