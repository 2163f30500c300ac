"""Realize's requantizing shift (``proofs/quantize_realize.py``): the obligations are
proved; without the overflow precondition the 32-bit formula is refuted; realize emits
that formula in int32 exactly where the precondition follows from the clip range (int64
elsewhere), and it computes simQ's rounding on the registry's int32 operators."""

from __future__ import annotations

import numpy as np
import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

import proofs
from interpreter import evaluate
from passes.quantize import QConfig
from passes.quantize.realize import QValue, _Realize
from proofs import quantize_realize as R
from proofs.core import PROVED, REFUTED, prove_valid
from relay.cli import main
from semantics import ops
from semantics.expr import Call, Function, Op, Var
from semantics.types import TensorType
from semantics.visitor import post_order

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


def test_an_unclipped_bound_is_needed():
    """Without (clip_max + 1) * 2**k <= 2**31 an unclipped value can reach the overflow."""
    x, hi = z3.Ints("x clip_max")
    k = 24
    pre = z3.And(hi >= 0, x <= R.INT32_MAX, R.round_half_away(R._ratio(x, k)) <= hi)
    assert prove_valid(z3.Implies(pre, x <= R.INT32_MAX - 2 ** (k - 1))).status == REFUTED


@pytest.mark.parametrize(("hi", "k", "dtype"), [(127, 10, "int32"), (127, 24, "int32"),
                                                (127, 25, "int64"), (32767, 16, "int32"),
                                                (32767, 17, "int64")])
def test_realize_shifts_in_int64_where_the_precondition_could_fail(hi, k, dtype):
    """An int32 value requantized by 2**k to [-hi, hi]: int32 arithmetic exactly when
    (hi + 1) * 2**k <= 2**31 (the obligation realize_shift_unclipped_in_range)."""
    r = _Realize(QConfig())
    x = Var("x", TensorType((4,), "int32"))
    out = r.requantize(x, QValue(1.0, "int32"), float(2 ** k), -hi, hi, "round",
                       "int16" if hi > 127 else "int8")
    shifts = [n for n in post_order(out) if isinstance(n, Call) and isinstance(n.op, Op)
              and n.op.name == "right_shift"]
    assert shifts and {c.args[1].data.dtype.name for c in shifts} == {dtype}
    top = R.INT32_MAX if dtype == "int64" else min(hi * 2 ** k, R.INT32_MAX - 2 ** (k - 1))
    big = np.array([-(2 ** 31), max(-(2 ** k) * hi, -(2 ** 31)), 2 ** (k - 1) * 3, top],
                   np.int32)
    got = evaluate(Function((x,), out), big)
    expect = np.clip(np.sign(big) * np.floor(np.abs(big.astype(np.float64)) / 2 ** k + 0.5),
                     -hi, hi)
    np.testing.assert_array_equal(got, expect)


@settings(max_examples=200, deadline=None)
@given(x=st.integers(R.INT32_MIN, R.INT32_MAX), k=st.integers(1, 30))
def test_the_formula_on_the_registry_operators(x, k):
    """Realize's formula evaluated with the registry's int32 add and right_shift (below
    the clip bound) is simQ's rounding of x / 2**k."""
    x = min(x, R.INT32_MAX - 2 ** (k - 1))          # the precondition
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
    assert "quantize.realize_shift_unclipped_in_range" in out and "proved" in out
