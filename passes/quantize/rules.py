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
_FLOAT = "; realize dequantizes its quantized arguments and it computes in float"
# Families of operators left float, each with why (the reason names the family).
_FAMILY_REASONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("transcendental or otherwise nonlinear in the real value: its result is not an "
     "integer times one scale, so it has no integer form" + _FLOAT,
     ("exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "erf", "cos", "sin", "power",
      "divide", "nn.softmax", "nn.log_softmax", "nn.lrn", "prod", "variance")),
    ("shape or data movement without arithmetic: a pass-through candidate (it could keep "
     "the integers and the scale, as [Q-Id] does for reshape) not yet ruled" + _FLOAT,
     ("broadcast_to", "broadcast_to_like", "reshape_like", "layout_transform", "repeat",
      "reverse", "tile", "take", "split", "copy")),
    ("monotone (it commutes with quantization): a pass-through candidate, as max pooling "
     "is, not yet ruled" + _FLOAT,
     ("max", "min", "nn.global_max_pool2d")),
    ("its operands would first need one shared scale (as add's), a rule not yet "
     "written" + _FLOAT,
     ("maximum", "minimum", "where", "stack", "nn.pad")),
    ("a sum or mean: an integer-sum candidate (as global_avg_pool2d) not yet ruled" + _FLOAT,
     ("sum", "mean")),
    ("it depends on the real value's position between integers or its sign, not on a "
     "scaled integer: it computes in float on dequantized values",
     ("round", "floor", "ceil", "trunc", "sign", "abs", "negative", "floor_divide",
      "floor_mod", "mod", "nn.leaky_relu")),
    ("its result is boolean or an index, not a quantized value: it computes on "
     "dequantized values",
     ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal", "logical_and",
      "logical_or", "logical_not", "all", "any", "argmax", "argmin")),
    ("an integer bit operation (realize emits it on integers itself): annotate quantizes "
     "float32 values only, so a program's own use has nothing to quantize",
     ("bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift")),
    ("it creates a value from attributes or a shape, reading no quantizable data",
     ("arange", "full", "full_like", "ones", "ones_like", "zeros", "zeros_like",
      "shape_of")),
    ("a training-time operator: quantize works on inference programs (SimplifyInference "
     "removes it first, or AD emits it for gradients)",
     ("nn.batch_norm", "nn.dropout", "nn.avg_pool2d_grad", "nn.conv2d_backward_weight",
      "nn.max_pool2d_grad", "nn.max_pool2d_pick", "collapse_sum_like")),
    ("realize has no integer transposed convolution" + _FLOAT,
     ("nn.conv2d_transpose",)),
    ("a Winograd convolution: AlterOpLayout makes it at -O3, after quantize; a quantized "
     "convolution stays nn.conv2d" + _FLOAT,
     ("nn.contrib_conv2d_winograd_weight_transform",
      "nn.contrib_conv2d_winograd_without_weight_transform")),
    ("the VM's memory dialect (storage, views, shapes): lowering output, not a model's "
     "arithmetic, so there is nothing to quantize",
     ("memory.alloc_storage", "memory.alloc_tensor", "memory.kill", "vm.reshape_tensor",
      "vm.shape_of")),
)
for _reason, _names in _FAMILY_REASONS:
    for _name in _names:
        _REASONS.setdefault(_name, _reason)
# an operator registered later and not listed above
_DEFAULT_REASON = "not classified for quantization yet" + _FLOAT


def declare_float_operators() -> None:
    """Register the default rules and declare every other registered operator float."""
    for name, rule in DEFAULT_RULES.items():
        if not QUANT_ANNOTATIONS.has(name) and QUANT_ANNOTATIONS.reason(name) is None:
            QUANT_ANNOTATIONS.add(name, rule)
    for name in list_ops():
        if QUANT_ANNOTATIONS.has(name) or QUANT_ANNOTATIONS.reason(name) is not None:
            continue
        QUANT_ANNOTATIONS.declare_none(name, _REASONS.get(name, _DEFAULT_REASON))
