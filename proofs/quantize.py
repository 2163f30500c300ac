"""Quantization obligations (issue 29, item 7): simQ's error bounds and the exactness of the
shift realization.  Class ``quantize``; each obligation is proved by Z3 over the reals and
integers (linear arithmetic after the normalisation below).

simQ (``annotation.simulated_quantize``, :mod:`semantics.ops.annotation`) is
``clip(rnd(x / s), lo, hi) * s`` with ``s > 0`` and integer bounds ``lo <= hi``.  Writing
``x = v * s`` (``v = x / s``, exact over the reals), ``simQ(x) - x = s * (clip(rnd(v)) - v)``,
so every bound ``|clip(rnd(v)) - v| <= c`` gives ``|simQ(x) - x| <= c * s`` (multiplication
by ``s > 0`` is monotone: the lemma ``quantize.scale_monotone``, proved in nonlinear real
arithmetic).  "Inside the clip range" means ``lo * s <= x <= hi * s``, i.e.
``lo <= v <= hi``.

* ``quantize.simq_error_bound_round``: ``|simQ(x) - x| <= s/2`` (half away from zero);
* ``quantize.simq_error_bound_floor`` and ``..._ceil``: ``|simQ(x) - x| <= s`` (in fact
  ``< s``: the proof uses the strict bound);
* ``quantize.simq_expectation_stochastic``: with ``u`` uniform on ``[0, 1)``, rounding up
  iff ``u < frac(v)`` happens with probability ``frac(v)`` (the one fact about the uniform
  distribution used), and then ``E[simQ(x)] = frac * clip(floor(v) + 1) * s +
  (1 - frac) * clip(floor(v)) * s = x``;
* ``quantize.simq_expectation_stochastic_draw``: the implemented draw takes ``2**24``
  equally spaced values, so it rounds up with probability ``ceil(frac * 2**24) / 2**24``;
  then ``0 <= E[simQ(x)] - x < s * 2**-24``;
* ``quantize.shift_round_half_up``: realize requantizes an integer ``q`` at scale ``2**a``
  to scale ``2**b`` (``k = b - a >= 1``) by ``(q + 2**(k-1)) >> k``.  ``>>`` is
  ``right_shift``, whose definition is ``floor(x / 2**k)``; the obligation proves, for each
  ``k`` in ``1..31`` and every ``q`` of ``int32`` for which ``q + 2**(k-1)`` does not
  overflow, ``floor((q + 2**(k-1)) / 2**k) = floor(q / 2**k + 1/2)`` — round half *up*;
* ``quantize.shift_matches_simq_nonnegative``: for ``q >= 0`` that equals simQ's rounding
  ``round_half_away(q / 2**k)`` (the value simQ gives ``q * 2**a`` at scale ``2**b``,
  before the clip);
* ``quantize.shift_negative_tie``: the exact difference — ``shift(q) - round_half_away(q /
  2**k)`` is ``1`` when ``q < 0`` and ``q mod 2**k = 2**(k-1)`` (a negative tie: half up
  goes toward zero, half away from zero goes down) and ``0`` for every other ``q``.  So
  realized programs differ from simulated ones by one step exactly at negative ties.
"""

from __future__ import annotations

from collections.abc import Callable

import z3

from proofs.core import PROVED, Verdict, obligation, prove_valid

INT32_MIN = -(2 ** 31)
INT32_MAX = 2 ** 31 - 1
DRAW_STEPS = 2 ** 24


def _floor(v: z3.ArithRef) -> z3.ArithRef:
    return z3.ToInt(v)                    # Z3's to_int is the floor


def _ceil(v: z3.ArithRef) -> z3.ArithRef:
    return -z3.ToInt(-v)


def _round_half_away(v: z3.ArithRef) -> z3.ArithRef:
    return z3.If(v >= 0, z3.ToInt(v + z3.RealVal("1/2")), -z3.ToInt(-v + z3.RealVal("1/2")))


def _clip(r: z3.ArithRef, lo: z3.ArithRef, hi: z3.ArithRef) -> z3.ArithRef:
    """``max(min(r, hi), lo)`` as the operator computes it."""
    low = z3.If(r <= hi, r, hi)
    return z3.If(low >= lo, low, lo)


def _abs(e: z3.ArithRef) -> z3.ArithRef:
    return z3.If(e >= 0, e, -e)


def _in_range() -> tuple[z3.ArithRef, z3.ArithRef, z3.ArithRef, z3.BoolRef]:
    v = z3.Real("v")
    lo, hi = z3.Ints("clip_min clip_max")
    return v, lo, hi, z3.And(lo <= hi, lo <= v, v <= hi)


def _error_bound(rounding: Callable[[z3.ArithRef], z3.ArithRef], bound: str
                 ) -> Callable[[], Verdict]:
    def check() -> Verdict:
        v, lo, hi, inside = _in_range()
        c = _clip(rounding(v), lo, hi)
        return prove_valid(z3.Implies(inside, _abs(z3.ToReal(c) - v) <= z3.RealVal(bound)))
    return check


def _scale_monotone() -> Verdict:
    d, c, s = z3.Reals("d c s")
    return prove_valid(z3.Implies(z3.And(s > 0, _abs(d) <= c), _abs(d * s) <= c * s),
                       method="z3 (nonlinear reals)")


def _expectation() -> Verdict:
    v, lo, hi, inside = _in_range()
    down = _floor(v)
    frac = v - z3.ToReal(down)
    mean = frac * z3.ToReal(_clip(down + 1, lo, hi)) + (1 - frac) * z3.ToReal(
        _clip(down, lo, hi))
    return prove_valid(z3.Implies(inside, mean == v), method="z3 (nonlinear reals)")


def _expectation_draw() -> Verdict:
    v, lo, hi, inside = _in_range()
    down = _floor(v)
    frac = v - z3.ToReal(down)
    n = z3.RealVal(DRAW_STEPS)
    p_up = z3.ToReal(_ceil(frac * n)) / n
    mean = p_up * z3.ToReal(_clip(down + 1, lo, hi)) + (1 - p_up) * z3.ToReal(
        _clip(down, lo, hi))
    return prove_valid(z3.Implies(inside, z3.And(mean - v >= 0, mean - v < 1 / n)),
                       method="z3 (nonlinear reals)")


def _each_shift(claim: Callable[[z3.ArithRef, int], z3.BoolRef]) -> Callable[[], Verdict]:
    """Prove ``claim(q, k)`` for every ``k`` in 1..31 and every int32 ``q`` with
    ``q + 2**(k-1)`` in int32 (one linear query per ``k``)."""
    def check() -> Verdict:
        q = z3.Int("q")
        for k in range(1, 32):
            half = 2 ** (k - 1)
            domain = z3.And(q >= INT32_MIN, q + half <= INT32_MAX)
            v = prove_valid(z3.Implies(domain, claim(q, k)))
            if v.status != PROVED:
                return Verdict(v.status, f"k = {k}, {v.counterexample}", v.method, v.detail)
        return Verdict(PROVED, method="z3 (one linear query per k = 1..31)")
    return check


def _shift(q: z3.ArithRef, k: int) -> z3.ArithRef:
    """``(q + 2**(k-1)) >> k`` with ``>>`` the definition of ``right_shift`` (floor)."""
    return (q + 2 ** (k - 1)) / (2 ** k)       # Z3's integer division floors for p > 0


def _ratio(q: z3.ArithRef, k: int) -> z3.ArithRef:
    return z3.ToReal(q) / z3.RealVal(2 ** k)


def _half_up(q: z3.ArithRef, k: int) -> z3.BoolRef:
    return _shift(q, k) == z3.ToInt(_ratio(q, k) + z3.RealVal("1/2"))


def _nonnegative(q: z3.ArithRef, k: int) -> z3.BoolRef:
    return z3.Implies(q >= 0, _shift(q, k) == _round_half_away(_ratio(q, k)))


def _negative_tie(q: z3.ArithRef, k: int) -> z3.BoolRef:
    tie = z3.And(q < 0, q % (2 ** k) == 2 ** (k - 1))
    return _shift(q, k) - _round_half_away(_ratio(q, k)) == z3.If(tie, 1, 0)


OBLIGATIONS: tuple[tuple[str, str, Callable[[], Verdict]], ...] = (
    ("quantize.scale_monotone",
     "for s > 0, |d| <= c implies |d * s| <= c * s (scaling the normalised bounds by the "
     "step)", _scale_monotone),
    ("quantize.simq_error_bound_round",
     "simQ with rounding=round (half away from zero): |simQ(x) - x| <= step/2 for x inside "
     "the clip range", _error_bound(_round_half_away, "1/2")),
    ("quantize.simq_error_bound_floor",
     "simQ with rounding=floor: |simQ(x) - x| <= step for x inside the clip range",
     _error_bound(_floor, "1")),
    ("quantize.simq_error_bound_ceil",
     "simQ with rounding=ceil: |simQ(x) - x| <= step for x inside the clip range",
     _error_bound(_ceil, "1")),
    ("quantize.simq_expectation_stochastic",
     "simQ with rounding=stochastic (up with probability frac(x/step)): E[simQ(x)] = x for "
     "x inside the clip range", _expectation),
    ("quantize.simq_expectation_stochastic_draw",
     "simQ with the implemented 24-bit draw: 0 <= E[simQ(x)] - x < step * 2**-24 inside the "
     "clip range", _expectation_draw),
    ("quantize.shift_round_half_up",
     "(q + 2**(k-1)) >> k = floor(q / 2**k + 1/2) for int32 q without overflow, k = 1..31",
     _each_shift(_half_up)),
    ("quantize.shift_matches_simq_nonnegative",
     "for q >= 0: (q + 2**(k-1)) >> k = round_half_away(q / 2**k) (simQ's rounding), "
     "k = 1..31", _each_shift(_nonnegative)),
    ("quantize.shift_negative_tie",
     "(q + 2**(k-1)) >> k - round_half_away(q / 2**k) is 1 exactly when q < 0 and "
     "q mod 2**k = 2**(k-1), else 0 (k = 1..31)", _each_shift(_negative_tie)),
)

for _name, _statement, _check in OBLIGATIONS:
    obligation(_name, _statement, _check)
