"""Elementwise and broadcast operators: arithmetic, math, logic, comparison, where, clip, cast.

Family ``tensor`` of the operator registry (paper §3.3.2; docs/architecture.md#decisions for the
numeric semantics).  Names, attributes and pattern kinds are TVM's (≥ 0.8): unary ops are
``ELEMWISE`` with the ``Identity`` relation, binary ops ``BROADCAST`` with ``Broadcast`` /
``BroadcastCompare``; ``where`` is ``BROADCAST`` (``Where``), ``clip`` / ``cast`` /
``copy`` are ``ELEMWISE``.

Dtype rules (the relations enforce them; TVM requires equal operand dtypes too):

* arithmetic (``add subtract multiply divide power mod floor_divide floor_mod maximum
  minimum negative abs sign``): integers and floats, not bool;
* transcendental math (``exp log sqrt rsqrt tanh sigmoid erf sin cos``): any numeric
  dtype, as TVM's ``Identity`` relation (TVM's own programs apply ``log`` to integer
  tensors). TVM's lowering has no integer ``log``, so the meaning of an integer operand is
  ours: computed in float64, then converted back as ``cast`` does (truncate toward zero,
  wrap, NaN/±inf to 0) — ``log(x)`` is ``cast(log(cast(x, "float64")), dtype)``; the TVM
  backend lowers it so;
* rounding (``floor ceil round trunc``): integers and floats; on integers they are the
  identity, as TVM's ``tir.floor``/``ceil``/``round``/``trunc`` return integer operands
  unchanged;
* logic (``logical_not logical_and logical_or``): bool;
* comparisons: any dtype, bool result; ``copy``: any dtype; ``cast``: any to any.

Semantics of the references (§5):

* Integers wrap at the dtype's width (two's complement), including ``negative``/``abs``
  (``abs(int8 -128) = -128``), ``power`` and ``INT_MIN / -1 = INT_MIN``.
* ``divide`` on integers truncates toward zero and ``mod`` is the matching truncated
  remainder (C's ``/`` and ``%``, TVM's ``truncdiv``/``truncmod``); ``floor_divide`` /
  ``floor_mod`` floor (remainder has the divisor's sign).  Any zero divisor that is
  actually used raises ``RelayRuntimeError("division by zero ...")``.
* Float ``divide`` is IEEE (``x/0`` is ±inf or nan); float ``floor_divide`` is
  ``floor(a / b)`` rounded in the dtype, as TVM lowers it; float ``floor_mod`` is the
  *exact* floored remainder (numpy's ``remainder``: C ``fmod``, exact, plus ``b`` when the
  signs differ; a zero remainder takes ``b``'s sign), not TVM's ``a - floor(a / b) * b``:
  that formula loses the remainder when ``a / b`` rounds (``-5.35e16 mod -4.25`` is
  ``-1.33``; the formula gives 0) and a compiler that contracts it into an FMA (LLVM does)
  gets a third answer (-2.25), while the exact remainder is the same in every backend;
  float ``mod`` is C ``fmod`` (exact).
* Integer ``power`` with a negative exponent is the truncated value of ``1 / a**-e``:
  ``1`` for base 1, ``±1`` for base -1, ``0`` for other bases; base 0 raises
  ``RelayRuntimeError`` (division by zero).  Nonnegative exponents wrap.
* ``round`` rounds half away from zero (TVM lowers it to LLVM's ``llvm.round``, not to
  ``nearbyint``): ``round(2.5) = 3``, ``round(-0.5) = -1``.
* ``+ - * /``, ``sqrt``, ``floor``/``ceil``/``trunc``/``round``, ``maximum``/``minimum``
  and comparisons are computed in the operand dtype (float16 in float16: IEEE results are
  the same as the exact result rounded once).  The transcendental functions (``exp log
  tanh sigmoid erf sin cos rsqrt`` and float ``power``) are evaluated in float64 and rounded
  once to the dtype — the closest float16/float32 to a high-precision value; their
  overflow follows the dtype (float16 ``exp(12)`` is inf).  ``erf`` is vectorized
  (:func:`erf_float64`: Maclaurin series near 0, Taylor expansions (degree 9) about 188 centres on
  [0.125, 6) whose coefficients come from ``math.erf`` and the Hermite recurrence, ±1
  beyond); it agrees with ``math.erf`` to about one float64 ulp (no SciPy).
* ``maximum``/``minimum`` (and ``clip``) propagate NaN (numpy's convention; TVM's
  ``select`` lowering may not).
* ``cast``: see :func:`semantics.ops.relations.cast_array` — float to integer truncates and
  wraps modulo ``2**bits``, NaN/inf become 0; to bool is ``!= 0``.
* ``clip(a_min, a_max)`` is ``maximum(minimum(x, a_max), a_min)`` as TVM computes it; for
  integer tensors the bounds are truncated toward zero and saturated to the dtype's range
  (TVM would fail to build an out-of-range constant).  NaN bounds are rejected.
* ``where(c, x, y)``: ``c`` of any dtype, nonzero selects ``x``.

Every reference returns an ``np.ndarray`` of exactly the relation's dtype and shape (0-d in,
0-d out) and never lets a numpy warning or exception escape (see
:func:`semantics.ops.reference.reference`); each compute function receives the result type
first (``compute(out_type, *arrays, **attrs)``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from semantics.errors import RelayRuntimeError
from semantics.ops.reference import cast_array, check_nonzero_divisor, reference
from semantics.ops.registry import AttrSpec, OpPattern, Relation, Traps, register_op
from semantics.ops.relations import (
    BOOL,
    BROADCAST,
    BROADCAST_COMPARE,
    CAST,
    CLIP,
    FLOAT,
    IDENTITY,
    NUMERIC,
    WHERE,
    broadcast_relation,
    identity_relation,
)
from semantics.types import Type

FAMILY = "tensor"

IDENTITY_NUMERIC = identity_relation(NUMERIC)
IDENTITY_FLOAT = identity_relation(FLOAT)
IDENTITY_BOOL = identity_relation(BOOL)
BROADCAST_BOOL = broadcast_relation(BOOL)


def _register(name: str, num_inputs: int, relation: Relation, pattern: OpPattern,
              compute: Callable[..., np.ndarray], doc: str,
              attrs: tuple[AttrSpec, ...] = (), traps: Traps = Traps.NEVER) -> None:
    register_op(name, num_inputs=num_inputs, relation=relation, pattern=pattern,
                impl=reference(name, relation, compute), attrs=attrs, doc=doc, family=FAMILY,
                traps=traps)


def _ufunc(f: Callable[..., Any]) -> Callable[..., Any]:
    """The compute function of a numpy function that computes in the operand dtype."""
    def compute(out: Type, *xs: np.ndarray) -> Any:
        return f(*xs)
    compute.__name__ = getattr(f, "__name__", "compute")
    return compute


# --- integer helpers ----------------------------------------------------------------------

def _is_int(a: np.ndarray) -> bool:
    return a.dtype.kind in "iu"


def _out_shape(a: np.ndarray, b: np.ndarray) -> tuple[int, ...]:
    return np.broadcast_shapes(a.shape, b.shape)


def trunc_divide_int(a: np.ndarray, b: np.ndarray, op: str = "divide") -> np.ndarray:
    """Integer division rounding toward zero, wrapping (``INT_MIN / -1 = INT_MIN``).

    Raises:
        RelayRuntimeError: a used divisor is zero.
    """
    check_nonzero_divisor(op, np.broadcast_to(b, _out_shape(a, b)), _out_shape(a, b))
    if a.dtype.kind == "u":
        return np.floor_divide(a, b)
    minus_one = b == -1
    safe_b = np.where(minus_one, np.ones_like(b), b)
    q = np.floor_divide(a, safe_b)
    r = np.remainder(a, safe_b)
    inexact_negative = (r != 0) & ((a < 0) != (safe_b < 0))
    q = q + inexact_negative.astype(q.dtype)
    return np.where(minus_one, np.negative(a), q).astype(a.dtype, copy=False)


def trunc_mod_int(a: np.ndarray, b: np.ndarray, op: str = "mod") -> np.ndarray:
    """The remainder matching :func:`trunc_divide_int` (sign of the dividend)."""
    check_nonzero_divisor(op, np.broadcast_to(b, _out_shape(a, b)), _out_shape(a, b))
    minus_one = b == -1
    safe_b = np.where(minus_one, np.ones_like(b), b)
    r = np.fmod(a, safe_b)
    return np.where(minus_one, np.zeros_like(r), r).astype(a.dtype, copy=False)


def floor_divide_int(a: np.ndarray, b: np.ndarray, op: str = "floor_divide") -> np.ndarray:
    """Integer division rounding toward -inf, wrapping."""
    check_nonzero_divisor(op, np.broadcast_to(b, _out_shape(a, b)), _out_shape(a, b))
    if a.dtype.kind == "u":
        return np.floor_divide(a, b)
    minus_one = b == -1
    safe_b = np.where(minus_one, np.ones_like(b), b)
    q = np.floor_divide(a, safe_b)
    return np.where(minus_one, np.negative(a), q).astype(a.dtype, copy=False)


def floor_mod_int(a: np.ndarray, b: np.ndarray, op: str = "floor_mod") -> np.ndarray:
    """The remainder matching :func:`floor_divide_int` (sign of the divisor)."""
    check_nonzero_divisor(op, np.broadcast_to(b, _out_shape(a, b)), _out_shape(a, b))
    minus_one = b == -1
    safe_b = np.where(minus_one, np.ones_like(b), b)
    r = np.remainder(a, safe_b)
    return np.where(minus_one, np.zeros_like(r), r).astype(a.dtype, copy=False)


def power_int(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer power, wrapping; negative exponents as described in the module docstring."""
    shape = _out_shape(a, b)
    a, b = np.broadcast_to(a, shape), np.broadcast_to(b, shape)
    negative = b < 0
    if np.any(negative & (a == 0)):
        raise RelayRuntimeError("division by zero in power "
                                "(0 raised to a negative integer power)")
    base = a
    expo = np.where(negative, np.zeros_like(b), b)
    out = np.power(base, expo)
    if a.dtype.kind == "i":
        odd = (b % 2) != 0
        minus_one = np.where(odd, np.full_like(a, -1), np.ones_like(a))
        small = np.where(a == 1, np.ones_like(a),
                         np.where(a == -1, minus_one, np.zeros_like(a)))
        out = np.where(negative, small, out)
    return np.asarray(out).astype(a.dtype, copy=False)


# --- float helpers ------------------------------------------------------------------------

def _via_float64(f: Callable[[np.ndarray], Any]) -> Callable[..., np.ndarray]:
    """Compute function: ``f`` evaluated in float64, rounded once to the operand dtype.

    An integer operand (TVM's relation of ``log``, ``exp``, ``sqrt``... accepts any dtype and
    keeps it) is converted to float64, ``f`` computed there, and the result converted back
    with :func:`cast_array`'s ``cast`` semantics: truncated toward zero, wrapped modulo
    ``2**bits``, NaN and ±inf become 0 (``log(int32 0)`` is 0, ``sqrt(int32 10)`` is 3).
    """

    def compute(out: Type, x: np.ndarray) -> np.ndarray:
        if x.dtype == np.float64:
            return np.asarray(f(x))
        if x.dtype.kind in "iu":
            return cast_array(np.asarray(f(x.astype(np.float64))), x.dtype.name)
        return np.asarray(f(x.astype(np.float64))).astype(x.dtype)

    return compute


def _rounding(f: Callable[[np.ndarray], Any]) -> Callable[..., np.ndarray]:
    """Compute function of floor/ceil/round/trunc: ``f`` on floats, the identity on integers."""

    def compute(out: Type, x: np.ndarray) -> np.ndarray:
        if x.dtype.kind in "iu":
            return x.copy()
        return np.asarray(f(x))

    return compute


# erf: Maclaurin series below _ERF_SMALL, Taylor expansions about the centres of
# _ERF_STEPS-wide cells on [_ERF_SMALL, _ERF_ONE), exactly +-1 from _ERF_ONE on
# (erfc(5.93) < 2**-54: erf rounds to 1 in float64).
_ERF_SMALL = 0.125
_ERF_ONE = 6.0
_ERF_CELLS_PER_UNIT = 32
_ERF_DEGREE = 9
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _erf_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Centres and Taylor coefficients (highest power first) of the erf cells, and the
    Maclaurin coefficients of ``erf(x) / x`` as a polynomial in ``x**2`` (highest first).

    The n-th derivative of erf is ``(2/sqrt(pi)) (-1)**(n-1) H_{n-1}(c) exp(-c**2)`` with
    the physicists' Hermite polynomials ``H_{k+1} = 2c H_k - 2k H_{k-1}``.
    """
    n_cells = int((_ERF_ONE - _ERF_SMALL) * _ERF_CELLS_PER_UNIT)
    width = 1.0 / _ERF_CELLS_PER_UNIT
    centres = _ERF_SMALL + (np.arange(n_cells) + 0.5) * width
    coeffs = np.empty((n_cells, _ERF_DEGREE + 1))
    for j, c in enumerate(centres.tolist()):
        h_prev, h = 0.0, 1.0                      # H_{-1} (unused), H_0
        gauss = _TWO_OVER_SQRT_PI * math.exp(-c * c)
        row = [math.erf(c)]
        factorial = 1.0
        for n in range(1, _ERF_DEGREE + 1):
            factorial *= n
            row.append((-1) ** (n - 1) * h * gauss / factorial)
            h_prev, h = h, 2.0 * c * h - 2.0 * (n - 1) * h_prev
        coeffs[j] = row[::-1]
    # erf(x) = 2/sqrt(pi) * sum_k (-1)**k x**(2k+1) / (k! (2k+1))
    small = [(-1) ** k * _TWO_OVER_SQRT_PI / (math.factorial(k) * (2 * k + 1))
             for k in range(10)]
    return centres, coeffs.T.copy(), np.array(small[::-1])


_ERF_CENTRES, _ERF_COEFFS, _ERF_MACLAURIN = _erf_tables()


def erf_float64(x: np.ndarray) -> np.ndarray:
    """The Gauss error function of a float64 array, vectorized (see the module docstring).

    Odd (``erf(-x) = -erf(x)``, ``erf(-0.0) = -0.0``), ``erf(±inf) = ±1``, NaN stays NaN.
    Every element goes through the Taylor cells (its magnitude clamped into their range,
    NaN included, by ``fmax``/``fmin``); the few below ``_ERF_SMALL``, at or above
    ``_ERF_ONE`` or NaN are then overwritten — cheaper than splitting the array.
    """
    shape = np.shape(x)
    x = np.ravel(x)                     # 1-d, so that every step below stays an array
    ax = np.abs(x)
    c = np.fmin(np.fmax(ax, _ERF_SMALL), _ERF_ONE)
    cell = ((c - _ERF_SMALL) * _ERF_CELLS_PER_UNIT).astype(np.intp)
    np.minimum(cell, len(_ERF_CENTRES) - 1, out=cell)
    c -= _ERF_CENTRES[cell]
    out = _ERF_COEFFS[0][cell]
    for row in _ERF_COEFFS[1:]:
        out *= c
        out += row[cell]
    np.copysign(out, x, out=out)
    np.copyto(out, np.copysign(1.0, x), where=ax >= _ERF_ONE)
    small = ax < _ERF_SMALL
    if small.any():
        xs = x[small]
        x2 = xs * xs
        acc = np.full_like(xs, _ERF_MACLAURIN[0])
        for k in _ERF_MACLAURIN[1:]:
            acc *= x2
            acc += k
        out[small] = xs * acc
    np.copyto(out, x, where=np.isnan(x))
    return out.reshape(shape)


def round_half_away(x: np.ndarray) -> np.ndarray:
    """Round half away from zero, in the dtype (``x - trunc(x)`` is exact)."""
    t = np.trunc(x)
    frac = x - t
    step = np.where(frac >= 0.5, np.ones_like(x), np.where(frac <= -0.5, -np.ones_like(x),
                                                           np.zeros_like(x)))
    return np.where(step != 0, t + step, t).astype(x.dtype, copy=False)


# --- references ---------------------------------------------------------------------------

def _divide(out: Type, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return trunc_divide_int(a, b) if _is_int(a) else np.divide(a, b)


def _floor_divide(out: Type, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return floor_divide_int(a, b) if _is_int(a) else np.floor(np.divide(a, b))


def _mod(out: Type, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return trunc_mod_int(a, b) if _is_int(a) else np.fmod(a, b)


def _floor_mod(out: Type, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if _is_int(a):
        return floor_mod_int(a, b)
    # numpy's float remainder is the exact floored remainder: fmod (exact), plus b when the
    # signs differ; a zero remainder takes b's sign
    return np.remainder(a, b)


def _power(out: Type, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if _is_int(a):
        return power_int(a, b)
    a64, b64 = a.astype(np.float64, copy=False), b.astype(np.float64, copy=False)
    return np.power(a64, b64).astype(a.dtype, copy=False)


def _sign(out: Type, x: np.ndarray) -> np.ndarray:
    return np.sign(x).astype(x.dtype, copy=False)


def _where(out: Type, c: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(c != 0, x, y).astype(x.dtype, copy=False)


def int_clip_bound(value: float, dtype: np.dtype | str) -> int:
    """A ``clip`` bound as ``clip`` reads it for an integer dtype: saturated to the dtype's
    range, else truncated toward zero (also used by ``passes.value_range``)."""
    info = np.iinfo(dtype)
    if value <= info.min:
        return int(info.min)
    if value >= info.max:
        return int(info.max)
    return int(math.trunc(value))


def _clip(out: Type, x: np.ndarray, a_min: float, a_max: float) -> np.ndarray:
    if _is_int(x):
        lo = np.asarray(int_clip_bound(a_min, x.dtype), dtype=x.dtype)
        hi = np.asarray(int_clip_bound(a_max, x.dtype), dtype=x.dtype)
    else:
        lo = np.asarray(a_min, dtype=np.float64).astype(x.dtype)
        hi = np.asarray(a_max, dtype=np.float64).astype(x.dtype)
    return np.maximum(np.minimum(x, hi), lo)


def _cast(out: Type, x: np.ndarray, dtype: str) -> np.ndarray:
    return cast_array(x, dtype)


def _copy(out: Type, x: np.ndarray) -> np.ndarray:
    return np.array(x, copy=True)


def _not_nan(v: float) -> str | None:
    return "must not be NaN" if isinstance(v, float) and math.isnan(v) else None


# --- registration -------------------------------------------------------------------------

_E, _B = OpPattern.ELEMWISE, OpPattern.BROADCAST

_BINARY_ARITH: tuple[tuple[str, Callable, str], ...] = (
    ("add", _ufunc(np.add), "Elementwise a + b with broadcasting (integers wrap)."),
    ("subtract", _ufunc(np.subtract), "Elementwise a - b with broadcasting (integers wrap)."),
    ("multiply", _ufunc(np.multiply), "Elementwise a * b with broadcasting (integers wrap)."),
    ("divide", _divide, "Elementwise a / b; integers truncate toward zero, 0 divisor traps."),
    ("power", _power, "Elementwise a ** b; integer powers wrap, negative exponents truncate."),
    ("mod", _mod, "Truncated remainder (sign of a, C fmod); integer 0 divisor traps."),
    ("floor_divide", _floor_divide, "Elementwise floor(a / b); integer 0 divisor traps."),
    ("floor_mod", _floor_mod, "Floored remainder (sign of b); integer 0 divisor traps."),
    ("maximum", _ufunc(np.maximum), "Elementwise maximum with broadcasting (NaN propagates)."),
    ("minimum", _ufunc(np.minimum), "Elementwise minimum with broadcasting (NaN propagates)."),
)
# Integer division and remainder trap on a 0 divisor, integer power on a negative exponent.
_TRAP_ON_INTEGERS = frozenset({"divide", "floor_divide", "mod", "floor_mod", "power"})
for _name, _fn, _doc in _BINARY_ARITH:
    _register(_name, 2, BROADCAST, _B, _fn, _doc,
              traps=Traps.ON_INTEGERS if _name in _TRAP_ON_INTEGERS else Traps.NEVER)

_COMPARE: tuple[tuple[str, Callable, str], ...] = (
    ("equal", _ufunc(np.equal), "Elementwise a == b with broadcasting; bool result."),
    ("not_equal", _ufunc(np.not_equal), "Elementwise a != b with broadcasting; bool result."),
    ("less", _ufunc(np.less), "Elementwise a < b with broadcasting; bool result."),
    ("less_equal", _ufunc(np.less_equal), "Elementwise a <= b with broadcasting; bool result."),
    ("greater", _ufunc(np.greater), "Elementwise a > b with broadcasting; bool result."),
    ("greater_equal", _ufunc(np.greater_equal),
     "Elementwise a >= b with broadcasting; bool result."),
)
for _name, _fn, _doc in _COMPARE:
    _register(_name, 2, BROADCAST_COMPARE, _B, _fn, _doc)

_register("logical_and", 2, BROADCAST_BOOL, _B, _ufunc(np.logical_and),
          "Elementwise a && b on bool tensors with broadcasting.")
_register("logical_or", 2, BROADCAST_BOOL, _B, _ufunc(np.logical_or),
          "Elementwise a || b on bool tensors with broadcasting.")
_register("logical_not", 1, IDENTITY_BOOL, _E, _ufunc(np.logical_not),
          "Elementwise !a on a bool tensor.")

_UNARY_NUMERIC: tuple[tuple[str, Callable, str], ...] = (
    ("negative", _ufunc(np.negative), "Elementwise -x (integers wrap)."),
    ("abs", _ufunc(np.abs), "Elementwise |x| (integers wrap: abs(int8 -128) = -128)."),
    ("sign", _sign, "Elementwise sign: -1, 0 or 1 in the operand dtype (NaN stays NaN)."),
)
for _name, _fn, _doc in _UNARY_NUMERIC:
    _register(_name, 1, IDENTITY_NUMERIC, _E, _fn, _doc)

_UNARY_FLOAT: tuple[tuple[str, Callable, str], ...] = (
    ("exp", _via_float64(np.exp), "Elementwise e ** x (float)."),
    ("log", _via_float64(np.log), "Elementwise natural logarithm (float; log(0) = -inf)."),
    ("sqrt", _via_float64(np.sqrt), "Elementwise square root (float; sqrt(-1) = nan)."),
    ("rsqrt", _via_float64(lambda x: 1.0 / np.sqrt(x)), "Elementwise 1 / sqrt(x) (float)."),
    ("tanh", _via_float64(np.tanh), "Elementwise hyperbolic tangent (float)."),
    ("sigmoid", _via_float64(lambda x: 1.0 / (1.0 + np.exp(-x))),
     "Elementwise logistic 1 / (1 + e ** -x) (float)."),
    ("erf", _via_float64(erf_float64), "Elementwise Gauss error function (float)."),
    ("sin", _via_float64(np.sin), "Elementwise sine (float, radians)."),
    ("cos", _via_float64(np.cos), "Elementwise cosine (float, radians)."),
)
for _name, _fn, _doc in _UNARY_FLOAT:
    # any numeric dtype, as TVM's relation: integers computed in float64 and cast back
    _register(_name, 1, IDENTITY_NUMERIC, _E, _fn,
              _doc[:-1] + "; an integer operand is computed in float64 and cast back, "
              "truncating).")

_ROUNDING: tuple[tuple[str, Callable, str], ...] = (
    ("floor", _rounding(np.floor), "Elementwise round toward -inf (identity on integers)."),
    ("ceil", _rounding(np.ceil), "Elementwise round toward +inf (identity on integers)."),
    ("round", _rounding(round_half_away),
     "Elementwise round to nearest, halves away from zero (identity on integers)."),
    ("trunc", _rounding(np.trunc), "Elementwise round toward zero (identity on integers)."),
)
for _name, _fn, _doc in _ROUNDING:
    _register(_name, 1, IDENTITY_NUMERIC, _E, _fn, _doc)

_register("where", 3, WHERE, _B, _where,
          "where(cond, x, y): x where cond is nonzero else y, all broadcast.")
_register("clip", 1, CLIP, _E, _clip,
          "Clamp every element into [a_min, a_max] (max(min(x, a_max), a_min)).",
          attrs=(AttrSpec("a_min", "float", required=True, check=_not_nan,
                          doc="lower bound"),
                 AttrSpec("a_max", "float", required=True, check=_not_nan,
                          doc="upper bound")))
_register("cast", 1, CAST, _E, _cast,
          "Convert to the 'dtype' attribute (float to int truncates and wraps).",
          attrs=(AttrSpec("dtype", "dtype", required=True, doc="target dtype"),))
_register("copy", 1, IDENTITY, _E, _copy, "A fresh copy of the tensor.")
