"""Worked examples of the ``creation`` family's gradient and tangent rules (the properties over
every operator of the family are in ``test_rules_families.py``)."""

from __future__ import annotations

import numpy as np
from rulecheck import (
    run_gradient,
)

import ad.rules  # noqa: F401  (registers the rules)
from semantics.ops import get
from semantics.types import TensorType


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
