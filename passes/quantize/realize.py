"""``realize(simulated, config)``: the simulated program as integer arithmetic (the paper §4.5).

Design note (TVM's ``realize.cc``, with our exact rounding). One bottom-up walk
(:class:`semantics.rewrite.ScopedMutator`) keeps, for every rewritten expression that holds
integers, its :class:`QValue` — the real value is ``integer * scale`` — and rewrites:

* [R-Quantize] a simQ of a float value ``x``: ``cast(clip(rnd(x / dom_scale), lo, hi),
  int<b>)`` with ``rnd`` the simQ's rounding (``round``, ``floor``, ``ceil``; stochastic keeps
  one simQ of step 1 on ``x / dom_scale``, which draws the same numbers), giving
  ``QValue(dom_scale, int<b>)`` — ``int<b>`` the smallest integer type holding ``[lo, hi]``.
* [R-Requantize] a simQ of an integer value of scale ``s``: ``r = dom_scale / s``;
  ``r = 1``: clip; ``r = 2^k``: a right shift by ``k`` rounding as the simQ does (half away
  from zero: ``(x + 2^(k-1) + (x >> (w-1))) >> k``, without the sign term ``x >> (w-1)``
  when ``x`` is a ``relu`` or another form that is never negative; floor: ``x >> k``; ceil:
  ``(x + 2^k - 1) >> k``; ``round_for_shift=False`` truncates), then clip and cast.
  Exact for an int32 ``x <= 2^31 - 1 - bias`` (the obligations ``quantize.realize_shift_*``
  in ``proofs/quantize_realize.py``), which every ``x`` the simQ does not clip meets when
  ``(clip_max + 1) * 2^k <= 2^31`` — else the shift runs in int64. A value beyond the clip
  range and within ``bias`` of int32's top (an accumulator about to wrap itself) is not
  guarded: a clip before the shift would keep the conv/dense epilogue from VTA's 16-bit
  ALU immediates;
  ``r = 2^-k``: a left shift; any other ``r``: a fixed-point multiply in int64,
  ``(x * M + 2^(sh-1) + (x >> 63)) >> sh`` with ``M / 2^sh ≈ 1/r`` (31-bit ``M``), clip, cast.
* [R-Conv], [R-Dense] integer operands (cast to the wider operand type) with
  ``out_dtype = int<nbit_activation>``; scale ``s_data * s_weight``.
* [R-Add] ``add`` / ``nn.bias_add``: both sides cast to the accumulator type and brought to
  the smaller scale (left shift for a power-of-two ratio, an integer multiply for an integer
  ratio). When the ratio is not an integer (two values of unrelated scales: ResNet's
  downsampling shortcut) that rescale would round once more than the simulation, so the
  add also keeps its *terms* ``(x_i, s_i)``: a simQ reached through [R-Forward] operators
  only ([R-Sum]) requantizes the exact sum instead, and any other consumer reads the
  rescaled add (one fixed-point rounding at the smaller scale). [R-Mul] ``multiply``: the
  product, scale ``s_a * s_b``.
* [R-Sum] a simQ of step ``d`` of a kept sum: ``clip(rnd(sum_i x_i * M_i / 2^sh))`` in
  int64 with ``M_i = round(s_i / d * 2^sh)`` and ``sh`` the largest shift for which the
  bounds below keep every product and the sum within int64 — one rounding of the real
  ``sum_i x_i s_i / d``, as the simulation rounds its float sum. Each ``x_i`` is first
  clipped to the magnitude past which the result clips whatever the other terms are (so
  the clip does not change the result). The [R-Forward] operators between the add and the
  simQ are applied *after* the requantization: they commute with a monotone rounding that
  maps 0 to 0 followed by a clip whose range contains 0 (``nn.relu``, ``max_pool2d``) or
  only move elements (the shape operators).
* [R-Forward] ``nn.relu``, ``nn.max_pool2d``, ``reshape``, ``nn.batch_flatten``,
  ``transpose``, ``squeeze``, ``expand_dims``, ``strided_slice``: the same operator on the
  integers, the same scale.
* [R-AvgPool] ``nn.global_avg_pool2d`` (NCHW): ``sum`` over the plane in the accumulator
  type, scale ``s / (H * W)`` — exact, the division moves into the scale.
* [R-Let] ``let %x = e; body`` with ``e`` an integer value: ``%x`` becomes a variable of
  ``e``'s integer type with ``e``'s scale (and its kept sum, for [R-Sum]), so the rules
  read it as they read ``e`` — no dequantize and requantize around the ``let``; a ``let``
  whose body is an integer value is one too (dequantized where its consumer needs float).
* [R-Dequantize] before any other operator, in any other node (a tuple, a branch, a
  function's result): ``cast(x, float32) * scale``.

Consequence: with power-of-two scales a CNN of conv/dense/add/relu/max-pool/flatten stays
in integers from its input quantization to the one dequantize at the output, and the
realized program equals the simulated one up to float32 rounding of the simulation (the
integers are exact; the simulation computes in float32). A fixed-point requantization
rounds the same real quotient simQ rounds (they differ only where the float32 simulation
lands on a rounding boundary), and so does [R-Sum] for an ``add`` of two values whose scale
ratio is not an integer (calibration gives biases their accumulator's scale, so bias adds
need neither).

Limits: [R-Let] applies to ``let`` s whose value is not a function literal; simQs on
float32 data only (others stay simulated); stochastic rounding of an
integer requantization rounds to nearest (only a float quantization draws). Pure: the
input is not mutated; a module needs no prior type inference (it is inferred here).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from passes.common import typed_or_same
from passes.quantize.config import QConfig, QuantizeError
from passes.quantize.simq import SIMQ, integer_dtype, read_simq, static_shape
from semantics.expr import (
    Attrs,
    Call,
    Constant,
    Expr,
    Function,
    Let,
    Op,
    Var,
    children,
    with_children,
)
from semantics.module import IRModule
from semantics.rewrite import ScopedMutator, map_functions
from semantics.types import TensorType

__all__ = ["QValue", "realize"]


@dataclass(frozen=True)
class _Sum:
    """An integer add of unrelated scales kept exact: real value = ``post(sum_i x_i * s_i)``
    with ``post`` the [R-Forward] calls applied since (operator, other arguments, attrs)."""

    terms: tuple[tuple[Expr, QValue], ...]
    post: tuple[Call, ...]


@dataclass(frozen=True)
class QValue:
    """An integer expression's meaning: real value = integer * ``scale``; its ``dtype``."""

    scale: float
    dtype: str


def _bits(dtype: str) -> int:
    return int(dtype[3:])


def _call(name: str, *args: Expr, **attrs: object) -> Call:
    return Call(Op(name), tuple(args), Attrs(attrs))


def _const(value: float | int, dtype: str) -> Constant:
    return Constant(np.asarray(value, dtype=np.dtype(dtype)))


def _cast(x: Expr, src: str, dtype: str) -> Expr:
    return x if src == dtype else _call("cast", x, dtype=dtype)


def _float32_bound(value: float, toward_zero: bool = True) -> float:
    """``value`` as a float32 that does not exceed it in magnitude (int32 bounds round up)."""
    f = np.float32(value)
    if toward_zero and abs(float(f)) > abs(value):
        f = np.nextafter(f, np.float32(0))
    return float(f)


_ORDER_PRESERVING = ("reshape", "nn.batch_flatten", "transpose", "squeeze",
                     "expand_dims", "strided_slice")
"""Operators whose every result element is one of their input's elements: a non-negative
input gives a non-negative result. (Not ``nn.max_pool2d``: a window wholly in its padding
reads the dtype's minimum.)"""


def _nonnegative(x: Expr) -> bool:
    """Whether every element of the integer value ``x`` is ``>= 0`` by its form: ``nn.relu``,
    a ``clip`` with ``a_min >= 0``, or an :data:`_ORDER_PRESERVING` operator of such a
    value. Then the sign term of a half-away-from-zero shift is 0 and is left out: two
    operations fewer per element in the requantize epilogue of every such layer."""
    while isinstance(x, Call) and isinstance(x.op, Op):
        name = x.op.name
        if name == "nn.relu" or name == "clip" and float(x.attrs["a_min"]) >= 0:
            return True
        if name not in _ORDER_PRESERVING:
            return False
        x = x.args[0]
    return False


def _power_of_two(ratio: float) -> int | None:
    mantissa, exponent = math.frexp(ratio)
    return exponent - 1 if mantissa == 0.5 else None


class _Realize(ScopedMutator):
    def __init__(self, config: QConfig) -> None:
        self.config = config
        self.acc = config.accumulator_dtype
        self.info: dict[int, QValue] = {}
        self.keep: list[Expr] = []
        self.dequantized: dict[int, Expr] = {}
        self.sums: dict[int, _Sum] = {}
        self.rewritten: dict[int, Expr] = {}

    # --- bookkeeping ---------------------------------------------------------------------
    def _mark(self, expr: Expr, value: QValue) -> Expr:
        self.info[id(expr)] = value
        self.keep.append(expr)
        return expr

    def q(self, expr: Expr) -> QValue | None:
        return self.info.get(id(expr))

    # [R-Dequantize]
    def dequantize(self, expr: Expr) -> Expr:
        value = self.q(expr)
        if value is None:
            return expr
        done = self.dequantized.get(id(expr))
        if done is None:
            done = _call("multiply", _call("cast", expr, dtype="float32"),
                         _const(value.scale, "float32"))
            self.dequantized[id(expr)] = done
        return done

    def _float_call(self, call: Call) -> Expr:
        args = tuple(self.dequantize(a) for a in call.args)
        if all(a is b for a, b in zip(args, call.args)):
            return call
        return Call(call.op, args, call.attrs, call.type_args, span=call.span)

    # --- hooks ---------------------------------------------------------------------------
    # [R-Let]
    def bind(self, var: Var, site: object) -> Var:
        if type(site) is not Let or type(site.value) is Function:
            return var
        value = self.rewritten.get(id(site.value))
        q = None if value is None else self.q(value)
        shape = static_shape(site.value.checked_type) if q is not None else None
        if value is None or q is None or shape is None:
            return var
        out = Var(var.name_hint, TensorType(shape, q.dtype), span=var.span)
        self._mark(out, q)
        pending = self.sums.get(id(value))
        if pending is not None:
            self.sums[id(out)] = pending
        return out

    def visit_let(self, new: Expr, old: Expr) -> Expr:
        assert isinstance(new, Let)
        value = new.value
        if id(value) in self.info and id(new.var) not in self.info:
            value = self.dequantize(value)
        out = new if value is new.value else Let(new.var, value, new.body, span=new.span)
        body = self.q(new.body)
        if body is not None:
            self._mark(out, body)
        self.rewritten[id(old)] = out
        return out

    def visit_call(self, new: Expr, old: Expr) -> Expr:
        out = self._visit_call(new, old)
        self.rewritten[id(old)] = out
        return out

    def _visit_call(self, new: Expr, old: Expr) -> Expr:
        assert isinstance(new, Call) and isinstance(old, Call)
        if type(new.op) is Op:
            name = new.op.name
            if name == SIMQ:
                out = self._simq(new, old)
                if out is not None:
                    return out
            else:
                rule = _RULES.get(name)
                if rule is not None and any(id(a) in self.info for a in new.args):
                    out = rule(self, new, old)
                    if out is not None:
                        return out
        return self._float_call(new)

    def visit_default(self, new: Expr, old: Expr) -> Expr:
        kids = children(new)
        if type(new) is Var or not any(id(k) in self.info for k in kids):
            out = new
        else:
            out = with_children(new, tuple(self.dequantize(k) for k in kids))
        self.rewritten[id(old)] = out
        return out

    # --- simQ ----------------------------------------------------------------------------
    def _simq(self, new: Call, old: Call) -> Expr | None:
        info = read_simq(new)
        if info is None:
            raise QuantizeError("realize: a simulated_quantize whose dom_scale, clip_min or "
                                "clip_max is not a constant (calibrate first)", new.span)
        out_dtype = integer_dtype(info.clip_min, info.clip_max)
        data = info.data
        value = self.q(data)
        if value is None:
            data_type = old.args[0].checked_type
            if not isinstance(data_type, TensorType) or data_type.dtype != "float32":
                return None
            out = self._quantize_float(new, data, info.dom_scale, info.clip_min,
                                       info.clip_max, info.rounding, out_dtype)
        else:
            pending = self.sums.get(id(data))
            summed = None if pending is None else self._requantize_sum(
                pending, info.dom_scale, info.clip_min, info.clip_max, info.rounding,
                out_dtype)
            out = summed if summed is not None else self.requantize(
                data, value, info.dom_scale, info.clip_min, info.clip_max, info.rounding,
                out_dtype)
        return self._mark(out, QValue(info.dom_scale, out_dtype))

    # [R-Sum]
    def _requantize_sum(self, pending: _Sum, step: float, lo: float, hi: float,
                        rounding: str, dtype: str) -> Expr | None:
        if rounding == "stochastic" or not lo <= 0 <= hi:
            return None
        ratios = [value.scale / step for _, value in pending.terms]
        tops = [2 ** (_bits(value.dtype) - 1) for _, value in pending.terms]
        edge = max(abs(lo), abs(hi)) + 1
        reach = []
        for i, (r, top) in enumerate(zip(ratios, tops)):
            others = sum(rj * tj for j, (rj, tj) in enumerate(zip(ratios, tops)) if j != i)
            reach.append(min(top, math.ceil((edge + others) / r) + 1))
        # the largest sh with sum_i reach_i * M_i + 2^sh < 2^62
        total = sum(n * r for n, r in zip(reach, ratios))
        sh = 61 - math.ceil(math.log2(total + 1.0))
        if sh < 1 or sh > 62:
            return None
        mults = [int(round(r * 2.0 ** sh)) for r in ratios]
        if sum(n * m for n, m in zip(reach, mults)) + 2 ** sh >= 2 ** 62:
            return None
        acc: Expr | None = None
        for (x, value), n, m, top in zip(pending.terms, reach, mults, tops):
            y = _cast(x, value.dtype, "int64")
            if n < top:
                y = _call("clip", y, a_min=float(-n), a_max=float(n))
            y = _call("multiply", y, _const(m, "int64"))
            acc = y if acc is None else _call("add", acc, y)
        assert acc is not None
        out = self._shift_right(acc, sh, rounding, "int64")
        out = _cast(_call("clip", out, a_min=float(lo), a_max=float(hi)), "int64", dtype)
        for template in pending.post:
            out = Call(template.op, (out, *template.args[1:]), template.attrs,
                       span=template.span)
        return out

    # [R-Quantize]
    def _quantize_float(self, call: Call, x: Expr, step: float, lo: float, hi: float,
                        rounding: str, dtype: str) -> Expr:
        scaled = _call("divide", x, _const(step, "float32"))
        if rounding == "stochastic":
            one = _const(1.0, "float32")
            attrs = call.attrs.replace(rounding="stochastic")
            rounded: Expr = Call(Op(SIMQ), (scaled, one, _const(lo, "float32"),
                                            _const(hi, "float32")), attrs)
        else:
            rounded = _call(rounding, scaled)
            rounded = _call("clip", rounded, a_min=_float32_bound(lo), a_max=_float32_bound(hi))
        return _call("cast", rounded, dtype=dtype)

    # [R-Requantize]
    def requantize(self, x: Expr, value: QValue, step: float, lo: float, hi: float,
                   rounding: str, dtype: str) -> Expr:
        ratio = step / value.scale
        k = _power_of_two(ratio)
        src = value.dtype
        if k == 0:
            y, work = x, src
        elif k is not None and k > 0:
            work = "int64" if _bits(src) > 32 else "int32"
            if _bits(src) == 32 and (math.floor(hi) + 1) * 2 ** k > 2 ** 31:
                work = "int64"     # unclipped values could reach the bias overflow bound
            y = self._shift_right(_cast(x, src, work), k, rounding, work, _nonnegative(x))
        elif k is not None and k < 0 and -k < 24:
            work = "int64" if _bits(src) > 32 else "int32"
            bound = 2 ** (_bits(work) - 1 + k) - 1
            y = _cast(x, src, work)
            if _bits(src) - 1 - k >= _bits(work) - 1:
                y = _call("clip", y, a_min=float(-bound - 1), a_max=float(bound))
            y = _call("left_shift", y, _const(-k, work))
        else:
            work = "int64"
            y = self._fixed_point(_cast(x, src, work), 1.0 / ratio, lo, hi, rounding)
        top = 2 ** (_bits(work) - 1)
        y = _call("clip", y, a_min=float(max(lo, -top)), a_max=float(min(hi, top - 1)))
        return _cast(y, work, dtype)

    def _shift_right(self, x: Expr, k: int, rounding: str, dtype: str,
                     nonnegative: bool = False) -> Expr:
        if not self.config.round_for_shift or rounding == "floor":
            return _call("right_shift", x, _const(k, dtype))
        if rounding == "ceil":
            biased: Expr = _call("add", x, _const(2 ** k - 1, dtype))
        elif nonnegative:   # half away from zero: half up, as no value is negative
            biased = _call("add", x, _const(2 ** (k - 1), dtype))
        else:   # half away from zero: one less bias for negative values
            sign = _call("right_shift", x, _const(_bits(dtype) - 1, dtype))
            biased = _call("add", _call("add", x, _const(2 ** (k - 1), dtype)), sign)
        return _call("right_shift", biased, _const(k, dtype))

    def _fixed_point(self, x: Expr, multiplier: float, lo: float, hi: float,
                     rounding: str) -> Expr:
        """``x * multiplier`` rounded, in int64, with a 31-bit fixed-point multiplier."""
        sh = 30 - math.floor(math.log2(multiplier))
        m = int(round(multiplier * 2.0 ** sh))
        # Values beyond these bounds clip anyway; bounding them keeps x * M within int64.
        reach = int(max(abs(lo), abs(hi)) / multiplier) + 2
        reach = min(reach, 2 ** 31)
        x = _call("clip", x, a_min=float(-reach), a_max=float(reach))
        product = _call("multiply", x, _const(m, "int64"))
        if sh <= 0:
            return _call("left_shift", product, _const(-sh, "int64"))
        return self._shift_right(product, sh, rounding, "int64")

    def rescale_up(self, x: Expr, value: QValue, scale: float) -> Expr:
        """``x`` (``value``) in the accumulator type at the smaller ``scale``."""
        y = _cast(x, value.dtype, self.acc)
        ratio = value.scale / scale
        k = _power_of_two(ratio)
        if k == 0:
            return y
        if k is not None and k > 0:
            return _call("left_shift", y, _const(k, self.acc))
        if float(ratio).is_integer():
            return _call("multiply", y, _const(int(ratio), self.acc))
        wide = self._fixed_point(_cast(y, self.acc, "int64"), ratio, -2.0 ** 62, 2.0 ** 62,
                                 "round")
        return _cast(wide, "int64", self.acc)


Rule = Callable[[_Realize, Call, Call], "Expr | None"]


# [R-Conv] [R-Dense]
def _realize_weighted(r: _Realize, new: Call, old: Call) -> Expr | None:
    a, b = new.args[0], new.args[1]
    qa, qb = r.q(a), r.q(b)
    if qa is None or qb is None:
        return None
    operand = qa.dtype if _bits(qa.dtype) >= _bits(qb.dtype) else qb.dtype
    args = (_cast(a, qa.dtype, operand), _cast(b, qb.dtype, operand))
    out = Call(new.op, args, new.attrs.replace(out_dtype=r.acc), span=new.span)
    return r._mark(out, QValue(qa.scale * qb.scale, r.acc))


# [R-Add]
def _realize_add(r: _Realize, new: Call, old: Call) -> Expr | None:
    a, b = new.args[0], new.args[1]
    qa, qb = r.q(a), r.q(b)
    if qa is None or qb is None:
        return None
    scale = min(qa.scale, qb.scale)
    args = (r.rescale_up(a, qa, scale), r.rescale_up(b, qb, scale))
    out = Call(new.op, args, new.attrs, span=new.span)
    ratio = max(qa.scale, qb.scale) / scale
    if not ratio.is_integer() and max(_bits(qa.dtype), _bits(qb.dtype)) <= 32:
        r.sums[id(out)] = _Sum(((a, qa), (b, qb)), ())
    return r._mark(out, QValue(scale, r.acc))


# [R-Mul]
def _realize_multiply(r: _Realize, new: Call, old: Call) -> Expr | None:
    a, b = new.args[0], new.args[1]
    qa, qb = r.q(a), r.q(b)
    if qa is None or qb is None:
        return None
    out = Call(new.op, (_cast(a, qa.dtype, r.acc), _cast(b, qb.dtype, r.acc)), new.attrs,
               span=new.span)
    return r._mark(out, QValue(qa.scale * qb.scale, r.acc))


# [R-Forward]
def _realize_forward(r: _Realize, new: Call, old: Call) -> Expr | None:
    value = r.q(new.args[0])
    if value is None or any(id(a) in r.info for a in new.args[1:]):
        return None
    pending = r.sums.get(id(new.args[0]))
    if pending is not None:
        r.sums[id(new)] = _Sum(pending.terms, (*pending.post, new))
    return r._mark(new, value)


# [R-AvgPool]
def _realize_global_avg_pool(r: _Realize, new: Call, old: Call) -> Expr | None:
    value = r.q(new.args[0])
    shape = static_shape(old.args[0].checked_type)
    if value is None or new.attrs.get("layout", "NCHW") != "NCHW" or shape is None \
            or len(shape) != 4:
        return None
    plane = shape[2] * shape[3]
    summed = _call("sum", _cast(new.args[0], value.dtype, r.acc), axis=(2, 3), keepdims=True)
    return r._mark(summed, QValue(value.scale / plane, r.acc))


_RULES: dict[str, Rule] = {
    "nn.conv2d": _realize_weighted,
    "nn.dense": _realize_weighted,
    "add": _realize_add,
    "nn.bias_add": _realize_add,
    "multiply": _realize_multiply,
    "nn.global_avg_pool2d": _realize_global_avg_pool,
    **{name: _realize_forward for name in (
        "nn.relu", "nn.max_pool2d", "reshape", "nn.batch_flatten", "transpose", "squeeze",
        "expand_dims", "strided_slice")},
}


def realize(simulated: IRModule, config: QConfig) -> IRModule:
    """Rewrite every calibrated simQ (and the operators between them) into integers.

    Args:
        simulated: the output of :func:`passes.quantize.calibrate`.
        config: the :class:`QConfig` (accumulator width, ``round_for_shift``).
    Returns:
        The integer program; each function converts to float32 where it must (at its
        result and before operators without an integer form).
    Raises:
        QuantizeError: a simQ with non-constant scalars; RelayTypeError: ill-typed input.
    """
    if not isinstance(config, QConfig):
        raise QuantizeError(f"realize: expected a QConfig, got {type(config).__name__}")
    if not isinstance(simulated, IRModule):
        raise QuantizeError("realize: expected an IRModule, got "
                            f"{type(simulated).__name__}")
    typed = typed_or_same(simulated)

    def run(name: str, fn: Function) -> Function:
        out = _Realize(config).mutate(fn)
        assert isinstance(out, Function)
        return out

    out = map_functions(typed, run)
    return out
