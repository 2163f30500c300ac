"""Worked examples of the ``transform`` family's gradient and tangent rules (the properties over
every operator of the family are in ``test_rules_families.py``)."""

from __future__ import annotations

import numpy as np
import pytest
from rulecheck import (
    run_gradient,
)

import ad.rules  # noqa: F401  (registers the rules)
from semantics.ops import get
from semantics.types import TensorType, TupleType

# --- examples --------------------------------------------------------------------------------

def _f64(*shape: int) -> TensorType:
    return TensorType(shape, "float64")


def test_take_accumulates_repeated_indices() -> None:
    x = np.arange(4.0)
    idx = np.array([[1, 1], [3, 7]], dtype=np.int32)        # clip mode: 7 -> 3
    out = get("take").reference(x, idx, axis=0)
    (gx,) = run_gradient("take", [_f64(4), TensorType((2, 2), "int32")], {"axis": 0},
                         [x, idx], out, np.array([[1.0, 2.0], [4.0, 8.0]]))
    np.testing.assert_array_equal(gx, [0.0, 3.0, 0.0, 12.0])


def test_take_wrap_flattened() -> None:
    x = np.arange(6.0).reshape(2, 3)
    idx = np.array([-1, 6], dtype=np.int64)                  # wrap: 5 and 0
    attrs = {"mode": "wrap"}
    out = get("take").reference(x, idx, **attrs)
    (gx,) = run_gradient("take", [_f64(2, 3), TensorType((2,), "int64")], attrs, [x, idx], out,
                         np.array([1.0, 10.0]))
    np.testing.assert_array_equal(gx, [[10.0, 0, 0], [0, 0, 1.0]])


def test_strided_slice_scatters_into_zeros() -> None:
    x = np.arange(10.0)
    attrs = {"begin": [8], "end": [1], "strides": [-3]}
    out = get("strided_slice").reference(x, **attrs)
    (gx,) = run_gradient("strided_slice", [_f64(10)], attrs, [x], out, np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(gx, [0, 0, 3.0, 0, 0, 2.0, 0, 0, 1.0, 0])


def test_concatenate_gradient_is_a_tuple() -> None:
    a, b = np.ones((2, 1)), np.ones((2, 3))
    ty = TupleType((_f64(2, 1), _f64(2, 3)))
    g = np.arange(8.0).reshape(2, 4)
    ((ga, gb),) = run_gradient("concatenate", [ty], {"axis": 1}, [(a, b)],
                               np.concatenate([a, b], 1), g)
    np.testing.assert_array_equal(ga, g[:, :1])
    np.testing.assert_array_equal(gb, g[:, 1:])


def test_split_gradient_concatenates() -> None:
    x = np.arange(5.0)
    attrs = {"indices_or_sections": [2], "axis": 0}
    out = get("split").reference(x, **attrs)
    (gx,) = run_gradient("split", [_f64(5)], attrs, [x], out,
                         (np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0])))
    np.testing.assert_array_equal(gx, [1.0, 2.0, 3.0, 4.0, 5.0])


def test_take_with_batch_dims_matches_numpy_scatter() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4, 2))
    idx = np.array([[0, 3, 3], [1, 1, 2]], dtype=np.int32)
    attrs = {"axis": 2, "batch_dims": 1}
    out = get("take").reference(x, idx, **attrs)
    g = rng.standard_normal(out.shape)
    (gx,) = run_gradient("take", [_f64(2, 3, 4, 2), TensorType((2, 3), "int32")], attrs,
                         [x, idx], out, g)
    want = np.zeros_like(x)
    for b in range(2):
        for k in range(3):
            want[b, :, idx[b, k], :] += g[b, :, k, :]
    np.testing.assert_allclose(gx, want)


@pytest.mark.parametrize(("mode", "want"), [("clip", [0.0, 0.0, 1.0]),
                                            ("wrap", [0.0, 1.0, 0.0])])
def test_take_huge_unsigned_indices(mode: str, want: list[float]) -> None:
    x = np.arange(3.0)
    idx = np.array([2**64 - 3], dtype=np.uint64)          # clip: 2, wrap: (2**64 - 3) % 3 = 1
    attrs = {"axis": 0, "mode": mode}
    out = get("take").reference(x, idx, **attrs)
    (gx,) = run_gradient("take", [_f64(3), TensorType((1,), "uint64")], attrs, [x, idx], out,
                         np.ones(1))
    np.testing.assert_array_equal(gx, want)
