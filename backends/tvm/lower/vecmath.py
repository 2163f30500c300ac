"""Float32 transcendental functions in vectorizable arithmetic.

LLVM lowers ``llvm.exp``/``tanh`` of a vector to one libm call per lane (2.7–6 ns an element
here), which dominates the recurrent models' gate epilogues (``sigmoid``, ``tanh`` after a
GEMV).  These are a few vector instructions per element instead, accurate to float32's
rounding (a few ulp at most; the references compute in float64 and round once):

* :func:`exp_nonpositive_f32` — ``exp(t)`` for ``t <= 0`` (a softmax row minus its max);
* :func:`expm1_nonpositive_f32` — ``exp(t) - 1`` for ``t <= 0`` without cancellation near 0;
* :func:`sigmoid_f32` — ``1 / (1 + exp(-x))`` from ``e = exp(-|x|)``: ``1 / (1 + e)`` for
  ``x >= 0``, ``e / (1 + e)`` below (no overflow on either side);
* :func:`tanh_f32` — ``sign(x) * -m / (2 + m)`` with ``m = expm1(-2|x|)``; ``x`` itself
  below ``2**-12`` (where ``tanh x = x`` to float32 precision, keeping ``-0.0``).

The common reduction (Cody–Waite): ``t = n ln 2 + r`` with ``n = round(t / ln 2)``,
``|r| <= ln 2 / 2`` (``ln 2`` split in two parts so ``r`` is exact), a Taylor polynomial of
degree 7–8 in ``r`` (relative error below 6e-9), and ``2**n`` built in the exponent bits.
``exp`` reaches the subnormal range (``2**n`` applied as ``2**(n + 64) * 2**-64``, one
rounding) and is 0 below ``-104`` (under half the smallest subnormal); ``expm1`` is -1 below
``-87.3`` (where ``exp`` is far below float32's resolution of 1).
NaN propagates through every function (comparisons with NaN are false, arithmetic keeps it).

Every value used more than once is bound by a TIR ``Let`` (:func:`_let`): the argument is
often a whole fused expression (a GEMV's sum plus bias), and an expression *tree* that repeats
it in every use would grow geometrically with each nested transcendental (an LSTM gate's
``tanh`` of a sum holding a ``sigmoid``) — TVM's simplifier then takes minutes per kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

F32 = "float32"
LOW = -87.3          # expm1's clamp: 2**n stays a normal number above it
EXP_LOW = -104.0     # exp(-104) < 2**-150: rounds to 0 in float32
_TAYLOR = tuple(1.0 / float(np.prod(np.arange(1, n + 1))) for n in range(10))


def _tirx() -> Any:
    from tvm import tirx
    return tirx


def _let(value: Any, body: Callable[[Any], Any], name: str = "v") -> Any:
    """``body(v)`` with ``v`` bound to ``value`` once (a TIR ``Let``), so ``body`` may use it
    many times without copying the expression ``value``."""
    tirx = _tirx()
    if isinstance(value, (tirx.Var, tirx.FloatImm, tirx.IntImm)):
        return body(value)
    var = tirx.Var(name, F32)          # every value bound here is float32
    return tirx.Let(var, value, body(var))


def _reduced(t: Any, bound: float, body: Callable[[Any, Any], Any]) -> Any:
    """``body(n, r)`` with ``max(t, bound) = n ln 2 + r`` (see the module docstring); ``t``,
    ``n`` and ``r`` are bound once."""
    tirx = _tirx()
    low = tirx.const(bound, F32)

    def with_t(tv: Any) -> Any:
        c = tirx.Select(tv < low, low, tv)     # NaN stays NaN (the comparison is false)
        n = tirx.floor(c * tirx.const(1.4426950408889634, F32) + tirx.const(0.5, F32))

        def with_n(nv: Any) -> Any:
            r = (c - nv * tirx.const(0.693145751953125, F32)
                 - nv * tirx.const(1.4286068203094173e-06, F32))
            return _let(r, lambda rv: body(nv, rv), "r")

        return _let(n, with_n, "n")

    return _let(t, with_t, "t")


def _pow2(n: Any, bias: int = 0) -> Any:
    """``2**(n + bias)`` for an integral float ``n`` (``n + bias`` in the normal range)."""
    tirx = _tirx()
    bits = tirx.shift_left(tirx.Cast("int32", n) + tirx.const(127 + bias, "int32"),
                           tirx.const(23, "int32"))
    return tirx.reinterpret(F32, bits)


def exp_nonpositive_f32(t: Any) -> Any:
    """``exp(t)`` of a float32 ``t <= 0`` (or ``-inf``, NaN)."""
    tirx = _tirx()

    def with_t(tv: Any) -> Any:
        def value(n: Any, r: Any) -> Any:
            p: Any = tirx.const(_TAYLOR[7], F32)
            for coef in reversed(_TAYLOR[:7]):
                p = p * r + tirx.const(coef, F32)
            return (p * _pow2(n, 64)) * tirx.const(2.0 ** -64, F32)   # subnormal results too

        return tirx.Select(tv < tirx.const(EXP_LOW, F32), tirx.const(0.0, F32),
                           _reduced(tv, EXP_LOW, value))

    return _let(t, with_t, "t")


def expm1_nonpositive_f32(t: Any) -> Any:
    """``exp(t) - 1`` of a float32 ``t <= 0`` (or ``-inf``, NaN), exact near 0: the
    polynomial is ``expm1(r)`` itself (``r + r²/2 + ...``), and
    ``expm1(t) = 2**n expm1(r) + (2**n - 1)``."""
    tirx = _tirx()

    def with_t(tv: Any) -> Any:
        def value(n: Any, r: Any) -> Any:
            q: Any = tirx.const(_TAYLOR[8], F32)
            for coef in reversed(_TAYLOR[2:8]):
                q = q * r + tirx.const(coef, F32)
            q = (q * r + tirx.const(1.0, F32)) * r      # r (1 + r/2 + r²/6 + ... )

            def scaled(qv: Any) -> Any:
                scale = _pow2(n)
                return tirx.Select(n == tirx.const(0.0, F32), qv,   # exact; keeps -0.0
                                   scale * qv + (scale - tirx.const(1.0, F32)))

            return _let(q, scaled, "q")

        return tirx.Select(tv < tirx.const(LOW, F32), tirx.const(-1.0, F32),
                           _reduced(tv, LOW, value))

    return _let(t, with_t, "t")


def sigmoid_f32(x: Any) -> Any:
    """``1 / (1 + exp(-x))`` of a float32 ``x``."""
    tirx = _tirx()
    one = tirx.const(1.0, F32)
    zero = tirx.const(0.0, F32)

    def with_x(xv: Any) -> Any:
        e = exp_nonpositive_f32(-tirx.Select(xv < zero, -xv, xv))
        return _let(e, lambda ev: tirx.Select(xv < zero, ev / (one + ev), one / (one + ev)),
                    "e")

    return _let(x, with_x, "x")


def tanh_f32(x: Any) -> Any:
    """``tanh`` of a float32 ``x``."""
    tirx = _tirx()
    zero = tirx.const(0.0, F32)

    def with_x(xv: Any) -> Any:
        def with_ax(ax: Any) -> Any:
            def with_m(m: Any) -> Any:
                def with_v(v: Any) -> Any:
                    small = ax < tirx.const(2.0 ** -12, F32)
                    return tirx.Select(small, xv, tirx.Select(xv < zero, -v, v))

                return _let(-m / (tirx.const(2.0, F32) + m), with_v, "v")

            return _let(expm1_nonpositive_f32(ax * tirx.const(-2.0, F32)), with_m, "m")

        return _let(tirx.Select(xv < zero, -xv, xv), with_ax, "ax")

    return _let(x, with_x, "x")
