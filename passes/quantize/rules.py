"""The default annotation rules, registered in ``semantics.ops.tables.QUANT_ANNOTATIONS``.

Design note. A rule is ``rule(call, kinds, ctx) -> (expr, kind) | None`` (see
:mod:`passes.quantize.annotate`): ``call`` has the rewritten arguments, ``kinds[i]`` is the
kind of argument ``i`` (None for a float value) and ``ctx`` quantizes and counts layers.
The rules follow TVM's ``_annotate.py`` (rule names in brackets):

* [Q-Conv], [Q-Dense] ``nn.conv2d`` / ``nn.dense``: the data becomes INPUT unless it is one
  already, the weight becomes WEIGHT; the result is an ACTIVATION (the integer accumulator).
  A convolution listed in ``skip_conv_layers`` (dense under ``skip_dense_layer``) stays
  float.
* [Q-Add] ``add`` / ``nn.bias_add``: nothing when neither side is quantized; with one side
  quantized the other becomes WEIGHT when it is a constant (a bias), INPUT otherwise; two
  ACTIVATIONs (a residual connection) requantize the right one to INPUT. The result is an
  ACTIVATION.
* [Q-Mul] ``multiply``: a quantized side is requantized to INPUT, the other side becomes
  WEIGHT when constant, INPUT otherwise; the result is an ACTIVATION.
* [Q-Pool] ``nn.max_pool2d``: an ACTIVATION is requantized to INPUT and the pool runs on it
  (an INPUT result); a float input is left alone.
* [Q-AvgPool] ``nn.global_avg_pool2d``: as max pool, but the result is an ACTIVATION (realize
  sums in the accumulator type and divides the scale by the window).
* [Q-Id] ``nn.relu``, ``reshape``, ``nn.batch_flatten``, ``transpose``, ``squeeze``,
  ``expand_dims``, ``strided_slice``: the kind passes through.

Every other operator is declared without a rule, with the reason (a float operator that
realize feeds dequantized values, or why an integer form is not given).
"""

from __future__ import annotations

from collections.abc import Sequence

from passes.quantize.annotate import AnnotateContext
from passes.quantize.simq import ACTIVATION, INPUT, WEIGHT
from semantics.expr import Call, Expr
from semantics.ops.registry import list_ops
from semantics.ops.tables import QUANT_ANNOTATIONS

__all__ = ["DEFAULT_RULES", "IDENTITY_OPS", "declare_float_operators"]

Kind = int | None
Result = tuple[Expr, Kind] | None


def _rebuild(call: Call, args: Sequence[Expr]) -> Call:
    if all(a is b for a, b in zip(args, call.args)):
        return call
    return Call(call.op, tuple(args), call.attrs, call.type_args, span=call.span)


def _as_input(expr: Expr, kind: Kind, ctx: AnnotateContext) -> Expr:
    """``expr`` as an INPUT: quantized unless it is an INPUT already."""
    return expr if kind == INPUT else ctx.quantize(expr, INPUT)


def _as_operand(expr: Expr, ctx: AnnotateContext) -> Expr:
    """An un-annotated operand: WEIGHT when constant, INPUT otherwise."""
    return ctx.quantize(expr, WEIGHT if ctx.is_constant(expr) else INPUT)


# [Q-Conv]
def annotate_conv2d(call: Call, kinds: Sequence[Kind], ctx: AnnotateContext) -> Result:
    if ctx.conv_skipped(call):
        return None
    return _weighted(call, kinds, ctx)


# [Q-Dense]
def annotate_dense(call: Call, kinds: Sequence[Kind], ctx: AnnotateContext) -> Result:
    if ctx.dense_skipped():
        return None
    return _weighted(call, kinds, ctx)


def _weighted(call: Call, kinds: Sequence[Kind], ctx: AnnotateContext) -> Result:
    data, weight = call.args[0], call.args[1]
    lhs = _as_input(data, kinds[0], ctx)
    rhs = weight if kinds[1] == WEIGHT else ctx.quantize(weight, WEIGHT)
    return _rebuild(call, (lhs, rhs, *call.args[2:])), ACTIVATION


# [Q-Add]
def annotate_add(call: Call, kinds: Sequence[Kind], ctx: AnnotateContext) -> Result:
    (a, b), (ka, kb) = call.args[:2], kinds[:2]
    if ka is None and kb is None:
        return None
    if ka is None:
        a = _as_operand(a, ctx)
    elif kb is None:
        b = _as_operand(b, ctx)
    elif ka == ACTIVATION and kb == ACTIVATION:
        b = ctx.quantize(b, INPUT)
    return _rebuild(call, (a, b, *call.args[2:])), ACTIVATION


# [Q-Mul]
def annotate_multiply(call: Call, kinds: Sequence[Kind], ctx: AnnotateContext) -> Result:
    (a, b), (ka, kb) = call.args[:2], kinds[:2]
    if ka is None and kb is None:
        return None
    a = _as_input(a, ka, ctx) if ka is not None else _as_operand(a, ctx)
    b = _as_input(b, kb, ctx) if kb is not None else _as_operand(b, ctx)
    return _rebuild(call, (a, b)), ACTIVATION


# [Q-Pool]
def annotate_max_pool(call: Call, kinds: Sequence[Kind], ctx: AnnotateContext) -> Result:
    if kinds[0] is None:
        return None
    return _rebuild(call, (_as_input(call.args[0], kinds[0], ctx),)), INPUT


# [Q-AvgPool]
def annotate_global_avg_pool(call: Call, kinds: Sequence[Kind],
                             ctx: AnnotateContext) -> Result:
    if kinds[0] is None or call.attrs.get("layout", "NCHW") != "NCHW":
        return None
    return _rebuild(call, (_as_input(call.args[0], kinds[0], ctx),)), ACTIVATION


# [Q-Id]
def annotate_identity(call: Call, kinds: Sequence[Kind], ctx: AnnotateContext) -> Result:
    if kinds[0] is None:
        return None
    return call, kinds[0]


IDENTITY_OPS = ("nn.relu", "reshape", "nn.batch_flatten", "transpose", "squeeze",
                "expand_dims", "strided_slice")

DEFAULT_RULES = {
    "nn.conv2d": annotate_conv2d,
    "nn.dense": annotate_dense,
    "add": annotate_add,
    "nn.bias_add": annotate_add,
    "multiply": annotate_multiply,
    "nn.max_pool2d": annotate_max_pool,
    "nn.global_avg_pool2d": annotate_global_avg_pool,
    **{name: annotate_identity for name in IDENTITY_OPS},
}

# Operators left float on purpose, with a reason more specific than the default one.
_REASONS = {
    "annotation.simulated_quantize": "it is the quantizer itself",
    "clip": "its bounds need not be multiples of the scale, so clipping the integers "
            "would differ from clipping the simulated values; it computes in float",
    "nn.avg_pool2d": "a padded window's divisor varies per position (count_include_pad), so "
                     "one scale cannot describe the integer sum; it computes in float",
    "concatenate": "its fields would need one shared scale; it computes in float",
    "nn.conv1d": "realize has no integer conv1d; it computes in float",
    "nn.batch_matmul": "realize has no integer batch_matmul; it computes in float",
    "nn.contrib_conv2d_NCHWc": "quantize runs before AlterOpLayout, which introduces it",
    "subtract": "TVM has no quantized subtract; it computes in float",
    "cast": "a cast to another type is the user's float arithmetic; it computes in float",
}
_DEFAULT_REASON = ("no integer form: realize dequantizes its quantized arguments and it "
                   "computes in float")


def declare_float_operators() -> None:
    """Register the default rules and declare every other registered operator float."""
    for name, rule in DEFAULT_RULES.items():
        if not QUANT_ANNOTATIONS.has(name) and QUANT_ANNOTATIONS.reason(name) is None:
            QUANT_ANNOTATIONS.add(name, rule)
    for name in list_ops():
        if QUANT_ANNOTATIONS.has(name) or QUANT_ANNOTATIONS.reason(name) is not None:
            continue
        QUANT_ANNOTATIONS.declare_none(name, _REASONS.get(name, _DEFAULT_REASON))
