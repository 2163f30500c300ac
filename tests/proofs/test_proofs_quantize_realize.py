"""Realize's requantizing shift (``proofs/quantize_realize.py``): the obligations are
proved; without the overflow precondition the 32-bit formula is refuted; the formula and
the clip bound are the ones realize emits, and they compute simQ's rounding on the
registry's int32 operators."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import proofs
from passes.quantize import QConfig
from passes.quantize.realize import _Realize
from proofs import quantize_realize as R
from proofs.core import PROVED, REFUTED
from relay.cli import main
from semantics import ops

NAMES = [name for name, _, _ in R.OBLIGATIONS]


@pytest.mark.parametrize("name", NAMES)
def test_obligation_is_proved(name):
    (ob,) = proofs.run(only=name)
    assert ob.status == PROVED, (ob.counterexample, ob.detail)


def test_they_belong_to_the_quantize_class():
    assert set(NAMES) <= {o for o in proofs.registered() if o.startswith("quantize.")}
    assert [o.name for o in proofs.run(only="quantize.realize_shift_round")] == [
        "quantize.realize_shift_round_away", "quantize.realize_shift_round_away_bv32"]


def test_without_the_precondition_the_int32_formula_wraps():
    v = R.bv32_check(precondition=False, ks=range(1, 3))()
    assert v.status == REFUTED and v.counterexample.startswith("k = 1, x = ")
    x = int(v.counterexample.split("x = ")[1])
    assert x > R.INT32_MAX - 1                       # only the top of int32 wraps for k = 1


def test_half_up_is_not_what_realize_proves():
    """TVM's half-up shift differs from simQ's rounding (a negative tie): the same check
    with it is refuted, so the obligation tells the two formulas apart."""
    def half_up(x, k):
        pre, _ = R._round_claim(x, k)
        return pre, (x + 2 ** (k - 1)) / (2 ** k) == R.round_half_away(R._ratio(x, k))
    assert R.each_k(half_up, range(1, 2))().status == REFUTED


@pytest.mark.parametrize("rounding", ["round", "ceil"])
@pytest.mark.parametrize("hi", [127.0, 255.0, 32767.0])
def test_realize_clip_bound_meets_the_preconditions(rounding, hi):
    r = _Realize(QConfig())
    for k in R.K_RANGE:
        room = r._shift_room(k, rounding, hi)
        bias = 2 ** k - 1 if rounding == "ceil" else 2 ** (k - 1)
        threshold = (hi - 1) * 2 ** k + 1 if rounding == "ceil" else hi * 2 ** k - bias
        if room is None:                             # shifted in int64 instead
            assert threshold > R.INT32_MAX - bias - 127
            continue
        assert 0 <= room <= R.INT32_MAX - bias       # the obligations' precondition
        assert threshold <= room                     # the saturation obligation applies
        assert float(np.float32(room)) == room       # the clip attribute is exact


@settings(max_examples=200, deadline=None)
@given(x=st.integers(R.INT32_MIN, R.INT32_MAX), k=st.integers(1, 30))
def test_the_formula_on_the_registry_operators(x, k):
    """Realize's formula evaluated with the registry's int32 add and right_shift (below
    the clip bound) is simQ's rounding of x / 2**k."""
    room = _Realize(QConfig())._shift_room(k, "round", 127.0) or R.INT32_MAX - 2 ** (k - 1)
    x = min(x, room)
    add, shift = ops.get("add").reference, ops.get("right_shift").reference
    v = np.array(x, np.int32)
    sign = shift(v, np.array(31, np.int32))
    got = int(shift(add(add(v, np.array(2 ** (k - 1), np.int32)), sign),
                    np.array(k, np.int32)))
    away = (abs(x) * 2 + 2 ** k) // 2 ** (k + 1)     # floor(|x| / 2**k + 1/2)
    assert got == (away if x >= 0 else -away)


def test_relay_prove_runs_them(capsys):
    assert main(["prove", "--only", "quantize.realize"]) == 0
    out = capsys.readouterr().out
    assert "quantize.realize_shift_clip_saturates" in out and "proved" in out
