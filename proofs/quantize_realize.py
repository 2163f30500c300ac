"""Obligations for realize's requantizing shift as it is emitted (issue 29): class
``quantize``, names ``quantize.realize_*``.

:mod:`proofs.quantize` proves TVM's half-up shift ``(x + 2**(k-1)) >> k``. Realize
(:mod:`passes.quantize.realize`, [R-Requantize]) emits another formula for
``rounding="round"``: ``(x + 2**(k-1) + (x >> 31)) >> k`` on int32, where ``x >> 31`` is
``-1`` for a negative ``x`` and ``0`` otherwise — one less bias below zero, so a negative
tie rounds away from zero as simQ's ``round`` does. For ``rounding="ceil"`` it emits
``(x + 2**k - 1) >> k``. The obligations, for each ``k`` in ``1..30``:

* ``quantize.realize_shift_round_away``: over the integers, ``>>`` being ``right_shift``'s
  definition ``floor(x / 2**k)``: for every ``x`` with ``-2**31 <= x <= 2**31 - 1 -
  2**(k-1)`` (the precondition) both additions stay in
  int32 and the result equals ``round_half_away(x / 2**k)`` — what simQ computes for the
  value ``x * 2**a`` at step ``2**(a+k)``, before its clip;
* ``quantize.realize_shift_round_away_bv32``: the same in 32-bit two's-complement
  arithmetic (wrapping ``bvadd``, arithmetic ``bvashr``), compared with the half-away
  rounding computed on 64 bits: no wrap-around can change the result under the
  precondition;
* ``quantize.realize_shift_ceil``: ``(x + 2**k - 1) >> k = ceil(x / 2**k)`` without
  overflow for ``-2**31 <= x <= 2**31 - 2**k``;
* ``quantize.realize_shift_unclipped_in_range``: where the precondition comes from: an
  int32 ``x`` that the simQ does not clip (``rnd(x / 2**k) <= clip_max``, ``rnd`` round or
  ceil) meets it whenever ``(clip_max + 1) * 2**k <= 2**31`` — realize shifts in int64
  otherwise. The global_scale sweep picks scales under which no simQ clips on its dataset.

Realize does not clip before the shift (a clip bound near 2**31 would keep the conv/dense
epilogue off VTA's 16-bit ALU immediates), so a value that is clipped anyway *and* lies
within ``bias`` of int32's top (an accumulator about to wrap itself) is outside what is
proved.

Without the precondition the 32-bit formula is wrong (``x = 2**31 - 1`` wraps to a negative
sum): ``tests/proofs/test_proofs_quantize_realize.py`` shows the solver's counterexample.
"""

from __future__ import annotations

from collections.abc import Callable

import z3

from proofs.core import PROVED, Verdict, obligation, prove_valid

INT32_MIN = -(2 ** 31)
INT32_MAX = 2 ** 31 - 1
K_RANGE = range(1, 31)


def round_half_away(v: z3.ArithRef) -> z3.ArithRef:
    """simQ's ``round`` (half away from zero) of a real, as an integer term."""
    half = z3.RealVal("1/2")
    return z3.If(v >= 0, z3.ToInt(v + half), -z3.ToInt(-v + half))


def ceil_of(v: z3.ArithRef) -> z3.ArithRef:
    return -z3.ToInt(-v)


def _ratio(x: z3.ArithRef, k: int) -> z3.ArithRef:
    return z3.ToReal(x) / z3.RealVal(2 ** k)


def _in_int32(e: z3.ArithRef) -> z3.BoolRef:
    return z3.And(e >= INT32_MIN, e <= INT32_MAX)


def realized_round(x: z3.ArithRef, k: int) -> tuple[z3.ArithRef, list[z3.ArithRef]]:
    """Realize's half-away shift over the integers, and its intermediate sums."""
    sign = x / (2 ** 31)                      # x >> 31: floor division (Z3 ``/`` on Int)
    first = x + 2 ** (k - 1)
    second = first + sign
    return second / (2 ** k), [sign, first, second]


def realized_ceil(x: z3.ArithRef, k: int) -> tuple[z3.ArithRef, list[z3.ArithRef]]:
    biased = x + (2 ** k - 1)
    return biased / (2 ** k), [biased]


def _round_claim(x: z3.ArithRef, k: int) -> tuple[z3.BoolRef, z3.BoolRef]:
    out, parts = realized_round(x, k)
    pre = z3.And(x >= INT32_MIN, x <= INT32_MAX - 2 ** (k - 1))
    return pre, z3.And(*[_in_int32(p) for p in parts],
                       out == round_half_away(_ratio(x, k)))


def _ceil_claim(x: z3.ArithRef, k: int) -> tuple[z3.BoolRef, z3.BoolRef]:
    out, parts = realized_ceil(x, k)
    pre = z3.And(x >= INT32_MIN, x <= INT32_MAX - (2 ** k - 1))
    return pre, z3.And(*[_in_int32(p) for p in parts], out == ceil_of(_ratio(x, k)))


Claim = Callable[[z3.ArithRef, int], tuple[z3.BoolRef, z3.BoolRef]]


def each_k(claim: Claim, ks: range = K_RANGE) -> Callable[[], Verdict]:
    """Prove ``pre -> claim`` for every ``k`` (one linear integer query per ``k``)."""
    def check() -> Verdict:
        x = z3.Int("x")
        for k in ks:
            pre, body = claim(x, k)
            v = prove_valid(z3.Implies(pre, body))
            if v.status != PROVED:
                return Verdict(v.status, f"k = {k}, {v.counterexample}", v.method, v.detail)
        return Verdict(PROVED, method=f"z3 (integers, one query per k = {ks[0]}..{ks[-1]})")
    return check


def bv32_round(x: z3.BitVecRef, k: int) -> z3.BitVecRef:
    """Realize's formula in int32 arithmetic: wrapping adds, arithmetic shifts."""
    return (x + z3.BitVecVal(2 ** (k - 1), 32) + (x >> 31)) >> k    # >> is bvashr


def bv64_round_half_away(x: z3.BitVecRef, k: int) -> z3.BitVecRef:
    """``round_half_away(x / 2**k)`` for a 32-bit ``x``, on 64 bits (no overflow there)."""
    wide = z3.SignExt(32, x)
    half = z3.BitVecVal(2 ** (k - 1), 64)
    up = (wide + half) >> k
    return z3.If(wide >= 0, up, -((-wide + half) >> k))


def bv32_check(precondition: bool = True, ks: range = K_RANGE) -> Callable[[], Verdict]:
    def check() -> Verdict:
        x = z3.BitVec("x", 32)
        for k in ks:
            claim = z3.SignExt(32, bv32_round(x, k)) == bv64_round_half_away(x, k)
            if precondition:
                claim = z3.Implies(x <= z3.BitVecVal(INT32_MAX - 2 ** (k - 1), 32), claim)
            v = prove_valid(claim, describe=lambda m: f"x = {m[x].as_signed_long()}")
            if v.status != PROVED:
                return Verdict(v.status, f"k = {k}, {v.counterexample}", v.method, v.detail)
        return Verdict(PROVED, method=f"z3 (32-bit vectors, one query per k = {ks[0]}.."
                                      f"{ks[-1]})")
    return check


def _unclipped_in_range() -> Verdict:
    x, hi = z3.Ints("x clip_max")
    for k in K_RANGE:
        for name, rnd, bias in (("round", round_half_away, 2 ** (k - 1)),
                                ("ceil", ceil_of, 2 ** k - 1)):
            pre = z3.And(hi >= 0, (hi + 1) * 2 ** k <= INT32_MAX + 1, x >= INT32_MIN,
                         x <= INT32_MAX, rnd(_ratio(x, k)) <= hi)
            v = prove_valid(z3.Implies(pre, x <= INT32_MAX - bias))
            if v.status != PROVED:
                return Verdict(v.status, f"k = {k}, {name}, {v.counterexample}", v.method,
                               v.detail)
    return Verdict(PROVED, method="z3 (integers, round and ceil, one query per k = 1..30)")


OBLIGATIONS: tuple[tuple[str, str, Callable[[], Verdict]], ...] = (
    ("quantize.realize_shift_round_away",
     "realize's (x + 2**(k-1) + (x >> 31)) >> k (>> = floor division) equals "
     "round_half_away(x / 2**k), simQ's rounding, with both sums in int32, for "
     "-2**31 <= x <= 2**31 - 1 - 2**(k-1), k = 1..30",
     each_k(_round_claim)),
    ("quantize.realize_shift_round_away_bv32",
     "the same formula in 32-bit two's complement (wrapping add, arithmetic shift) equals "
     "round_half_away(x / 2**k) computed on 64 bits, for x <= 2**31 - 1 - 2**(k-1), "
     "k = 1..30", bv32_check()),
    ("quantize.realize_shift_ceil",
     "realize's (x + 2**k - 1) >> k equals ceil(x / 2**k) without int32 overflow for "
     "-2**31 <= x <= 2**31 - 2**k, k = 1..30", each_k(_ceil_claim)),
    ("quantize.realize_shift_unclipped_in_range",
     "an int32 x with rnd(x / 2**k) <= clip_max (round or ceil; not clipped by the simQ) "
     "meets the shift's precondition x <= 2**31 - 1 - bias when (clip_max + 1) * 2**k <= "
     "2**31, k = 1..30", _unclipped_in_range),
)

for _name, _statement, _check in OBLIGATIONS:
    obligation(_name, _statement, _check)
