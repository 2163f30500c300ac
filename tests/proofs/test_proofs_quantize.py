"""The quantization obligations (``proofs/quantize.py``): every one proved by Z3; deliberately
wrong statements refuted with readable counterexamples (so the checks can fail); the
executable definitions agree with the numpy reference on sample points; ``relay prove``."""

from __future__ import annotations

import re

import numpy as np
import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

import proofs
from proofs import quantize as Q
from proofs.core import PROVED, REFUTED, prove_valid
from relay.cli import main
from semantics import ops

NAMES = [name for name, _, _ in Q.OBLIGATIONS]


def test_the_obligations_name_their_rounding_mode():
    for mode in ("round", "floor", "ceil"):
        assert f"quantize.simq_error_bound_{mode}" in NAMES
    assert "quantize.simq_expectation_stochastic" in NAMES
    assert {"quantize.shift_round_half_up", "quantize.shift_matches_simq_nonnegative",
            "quantize.shift_negative_tie"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_obligation_is_proved(name):
    (ob,) = proofs.run(only=name)
    assert ob.status == PROVED, (ob.counterexample, ob.detail)


def test_run_selects_the_class():
    assert [o.name for o in proofs.run(only="quantize.simq_error_bound")] == [
        "quantize.simq_error_bound_round", "quantize.simq_error_bound_floor",
        "quantize.simq_error_bound_ceil"]


def test_a_tighter_bound_is_refuted():
    assert Q._error_bound(Q._round_half_away, "1/4")().status == REFUTED
    v = Q._error_bound(Q._floor, "1/2")()
    assert v.status == REFUTED and "v = " in v.counterexample


def test_claiming_no_negative_tie_difference_is_refuted_with_the_tie():
    v = Q._each_shift(lambda q, k: z3.Implies(q < 0, Q._shift(q, k) == Q._round_half_away(
        Q._ratio(q, k))))()
    assert v.status == REFUTED
    assert v.counterexample.startswith("k = 1, q = ")
    # (the model text may list solver-internal functions after q: read q's integer only)
    q = int(re.match(r"k = 1, q = (-?\d+)", v.counterexample).group(1))  # type: ignore[union-attr]
    assert q < 0 and q % 2 == 1                  # a negative tie of k = 1


def test_stochastic_expectation_without_the_clip_range_is_refuted():
    v, lo, hi, _ = Q._in_range()
    down = Q._floor(v)
    frac = v - z3.ToReal(down)
    mean = frac * z3.ToReal(Q._clip(down + 1, lo, hi)) + (1 - frac) * z3.ToReal(
        Q._clip(down, lo, hi))
    assert prove_valid(z3.Implies(lo <= hi, mean == v)).status == REFUTED


@settings(max_examples=100, deadline=None)
@given(v=st.fractions(-50, 50, max_denominator=64), rounding=st.sampled_from(
    ("round", "floor", "ceil")))
def test_the_z3_definitions_match_the_operator(v, rounding):
    """The formulas the obligations reason about are the operator's: at scale 1 with wide
    bounds, simQ of a float32-exact rational equals the Z3 term's value."""
    term = {"round": Q._round_half_away, "floor": Q._floor, "ceil": Q._ceil}[rounding]
    expect = z3.simplify(term(z3.RealVal(f"{v.numerator}/{v.denominator}"))).as_long()
    got = ops.get("annotation.simulated_quantize").reference(
        np.array([float(v)], np.float32), np.array(1.0, np.float32),
        np.array(-100.0, np.float32), np.array(100.0, np.float32), rounding=rounding)
    assert got.tolist() == [float(expect)]


@settings(max_examples=200, deadline=None)
@given(q=st.integers(-2 ** 31, 2 ** 31 - 1 - 2 ** 10), k=st.integers(1, 11))
def test_the_shift_realization_on_the_registry_operators(q, k):
    """The proved identities, evaluated with the registry's int32 add and right_shift."""
    x = np.array(q, np.int32)
    shifted = int(ops.get("right_shift").reference(
        ops.get("add").reference(x, np.array(2 ** (k - 1), np.int32)), np.array(k, np.int32)))
    assert shifted == (2 * q + 2 ** k) // 2 ** (k + 1)      # floor(q / 2**k + 1/2)
    away = -((-2 * q + 2 ** k) // 2 ** (k + 1)) if q < 0 else (2 * q + 2 ** k) // 2 ** (k + 1)
    tie = q < 0 and q % 2 ** k == 2 ** (k - 1)
    assert shifted - away == (1 if tie else 0)


def test_relay_prove_runs_the_class(capsys):
    assert main(["prove", "--only", "quantize"]) == 0
    out = capsys.readouterr().out
    assert "quantize.simq_expectation_stochastic" in out and "proved" in out
