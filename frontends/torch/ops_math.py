"""ATen converters: element-wise arithmetic, comparisons, activations, reductions and the
neural-network operators (convolution, pooling, normalization, matrix products).

Composite operators are spelt with Relay's primitives: ``native_layer_norm`` as
``(x - mean) * rsqrt(variance + eps) * w + b``, ``gelu`` as ``x/2 * (1 + erf(x/√2))`` (or
its tanh approximation), both as PyTorch defines them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from frontends.onnx.builder import Unsupported, Value, call, const, project
from frontends.torch.registry import (
    ATEN,
    Unavailable,
    aten,
    dtype_name,
    ints,
    like,
    pair,
    promote,
)
from semantics.shapes import is_concrete

# --- element-wise --------------------------------------------------------------------------

_UNARY = {"aten.relu.default": "nn.relu", "aten.sigmoid.default": "sigmoid",
          "aten.tanh.default": "tanh", "aten.exp.default": "exp", "aten.log.default": "log",
          "aten.sqrt.default": "sqrt", "aten.rsqrt.default": "rsqrt",
          "aten.neg.default": "negative", "aten.sign.default": "sign",
          "aten.abs.default": "abs", "aten.erf.default": "erf", "aten.sin.default": "sin",
          "aten.cos.default": "cos", "aten.floor.default": "floor", "aten.ceil.default": "ceil",
          "aten.round.default": "round", "aten.trunc.default": "trunc",
          "aten.logical_not.default": "logical_not"}
for _n, _r in _UNARY.items():
    ATEN[_n] = (lambda r: lambda x: call(r, [x]))(_r)

_BINARY = {"aten.maximum.default": "maximum", "aten.minimum.default": "minimum",
           "aten.logical_and.default": "logical_and", "aten.logical_or.default": "logical_or",
           "aten.bitwise_and.Tensor": "bitwise_and", "aten.bitwise_or.Tensor": "bitwise_or",
           "aten.pow.Tensor_Tensor": "power", "aten.pow.Tensor_Scalar": "power",
           "aten.remainder.Tensor": "floor_mod", "aten.remainder.Scalar": "floor_mod",
           "aten.fmod.Tensor": "mod", "aten.fmod.Scalar": "mod"}
def _binary(relay: str) -> Any:
    def convert(a: Value, b: Any) -> Value:
        return call(relay, list(promote(a, b)))
    return convert


for _n, _r in _BINARY.items():
    ATEN[_n] = _binary(_r)

_COMPARE = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
            "gt": "greater", "ge": "greater_equal"}
for _n, _r in _COMPARE.items():
    ATEN[f"aten.{_n}.Tensor"] = ATEN[f"aten.{_n}.Scalar"] = _binary(_r)


@aten("aten.add.Tensor", "aten.add.Scalar")
def _add(a: Value, b: Any, alpha: Any = 1) -> Value:
    a, b = promote(a, b)
    if alpha != 1:
        b = call("multiply", [b, like(b, alpha)])
    return call("add", [a, b])


@aten("aten.sub.Tensor", "aten.sub.Scalar")
def _sub(a: Value, b: Any, alpha: Any = 1) -> Value:
    a, b = promote(a, b)
    if alpha != 1:
        b = call("multiply", [b, like(b, alpha)])
    return call("subtract", [a, b])


@aten("aten.rsub.Scalar", "aten.rsub.Tensor")
def _rsub(a: Value, b: Any, alpha: Any = 1) -> Value:
    return _sub(like(a, b), a, alpha)


@aten("aten.mul.Tensor", "aten.mul.Scalar")
def _mul(a: Value, b: Any) -> Value:
    return call("multiply", list(promote(a, b)))


@aten("aten.div.Tensor", "aten.div.Scalar")
def _div(a: Value, b: Any) -> Value:
    """True division, as PyTorch's ``/``: integer (and bool) operands give the default float
    dtype (float32), never a truncated integer."""
    a, b = promote(a, b)
    if not a.dtype.startswith("float"):
        a, b = (call("cast", [v], dtype="float32") for v in (a, b))
    return call("divide", [a, b])


@aten("aten.bitwise_not.default")
def _bitwise_not(x: Value) -> Value:
    if x.dtype != "bool":
        raise Unsupported("bitwise_not of an integer tensor is not supported")
    return call("logical_not", [x])


@aten("aten.where.self")
def _where(cond: Value, a: Any, b: Any) -> Value:
    if not isinstance(a, Value):
        a = like(b, a)
    return call("where", [cond, *promote(a, b)])


@aten("aten.masked_fill.Scalar", "aten.masked_fill.Tensor")
def _masked_fill(x: Value, mask: Value, value: Any) -> Value:
    return call("where", [mask, like(x, value), x])


@aten("aten.scalar_tensor.default")
def _scalar_tensor(value: Any, dtype: Any = None, **kw: Any) -> Value:
    dt = dtype_name(dtype) if dtype is not None else "float32"
    if isinstance(value, Value):
        return call("cast", [value], dtype=dt)
    return like(const(np.zeros((), dt)), value)


@aten("aten.hardtanh.default")
def _hardtanh(x: Value, lo: float = -1.0, hi: float = 1.0) -> Value:
    return call("clip", [x], a_min=float(lo), a_max=float(hi))


@aten("aten.clamp.default")
def _clamp(x: Value, lo: Any = None, hi: Any = None) -> Value:
    if lo is not None:
        x = call("maximum", [x, like(x, lo)])
    if hi is not None:
        x = call("minimum", [x, like(x, hi)])
    return x


@aten("aten.gelu.default")
def _gelu(x: Value, approximate: str = "none") -> Value:
    half = call("multiply", [x, like(x, 0.5)])
    if approximate == "tanh":
        cube = call("multiply", [call("multiply", [x, x]), x])
        inner = call("add", [x, call("multiply", [cube, like(x, 0.044715)])])
        t = call("tanh", [call("multiply", [inner, like(x, math.sqrt(2.0 / math.pi))])])
    elif approximate == "none":
        t = call("erf", [call("multiply", [x, like(x, 1.0 / math.sqrt(2.0))])])
    else:
        raise Unsupported(f"gelu approximation {approximate!r}")
    return call("multiply", [half, call("add", [t, like(x, 1.0)])])


@aten("aten._softmax.default", "aten.softmax.int")
def _softmax(x: Value, dim: int, *rest: Any) -> Value:
    return call("nn.softmax", [x], axis=int(dim))


@aten("aten._log_softmax.default", "aten.log_softmax.int")
def _log_softmax(x: Value, dim: int, *rest: Any) -> Value:
    return call("nn.log_softmax", [x], axis=int(dim))


# --- reductions ----------------------------------------------------------------------------

def _axes(x: Value, dims: Any) -> tuple[int, ...] | None:
    """Reduction axes; ``None`` (every axis) for PyTorch's ``dim=None`` or ``[]``."""
    if dims is None or (isinstance(dims, (list, tuple)) and not dims):
        return None
    return tuple(d % x.ndim for d in ints(dims))


def _accumulated(relay: str, x: Value, dtype: Any) -> Value:
    """``x`` in the dtype PyTorch reduces it in: ``dtype`` when given; int64 for a ``sum``
    or ``prod`` of bools or integers."""
    if dtype is not None:
        return call("cast", [x], dtype=dtype_name(dtype))
    if relay in ("sum", "prod") and not x.dtype.startswith("float") and x.dtype != "int64":
        return call("cast", [x], dtype="int64")
    return x


def _reduction(relay: str) -> Any:
    def convert(x: Value, dims: Any = None, keepdim: bool = False, dtype: Any = None,
                **kw: Any) -> Value:
        return call(relay, [_accumulated(relay, x, dtype)], axis=_axes(x, dims),
                    keepdims=bool(keepdim))
    return convert


for _n, _r in {"aten.mean.dim": "mean", "aten.sum.dim_IntList": "sum", "aten.amax.default": "max",
               "aten.amin.default": "min", "aten.prod.dim_int": "prod"}.items():
    ATEN[_n] = _reduction(_r)


@aten("aten.sum.default")
def _sum_all(x: Value, dtype: Any = None) -> Value:
    return call("sum", [_accumulated("sum", x, dtype)])


@aten("aten.mean.default")
def _mean_all(x: Value, dtype: Any = None) -> Value:
    return call("mean", [_accumulated("mean", x, dtype)])


@aten("aten.var.correction")
def _var(x: Value, dims: Any = None, *, correction: Any = 1, keepdim: bool = False) -> Value:
    axes = _axes(x, dims)
    mean = call("mean", [x], axis=axes, keepdims=True)
    return call("variance", [x, mean], axis=axes, keepdims=bool(keepdim),
                unbiased=bool(correction))


# --- nn ------------------------------------------------------------------------------------

@aten("aten.native_layer_norm.default")
def _layer_norm(x: Value, shape: Any, w: Value | None, b: Value | None,
                eps: float) -> list[Any]:
    axes = tuple(range(x.ndim - len(ints(shape)), x.ndim))
    mean = call("mean", [x], axis=axes, keepdims=True)
    var = call("variance", [x, mean], axis=axes, keepdims=True)
    rstd = call("rsqrt", [call("add", [var, like(x, float(eps))])])
    y = call("multiply", [call("subtract", [x, mean]), rstd])
    if w is not None:
        y = call("multiply", [y, w])
    if b is not None:
        y = call("add", [y, b])
    return [y, mean, rstd]


@aten("aten.layer_norm.default")
def _layer_norm_composite(x: Value, shape: Any, w: Value | None = None, b: Value | None = None,
                          eps: float = 1e-5, *rest: Any) -> Value:
    return _layer_norm(x, shape, w, b, eps)[0]


@aten("aten.convolution.default")
def _convolution(x: Value, w: Value, b: Value | None, stride: Any, padding: Any,
                 dilation: Any, transposed: bool, output_padding: Any, groups: int) -> Value:
    if transposed:
        raise Unsupported("transposed convolution is not supported")
    if x.ndim != 4:
        raise Unsupported("only 2-D convolution is supported")
    ph, pw = pair(padding)
    ws = w.static_shape()
    y = call("nn.conv2d", [x, w], strides=pair(stride), padding=(ph, pw, ph, pw),
             dilation=pair(dilation), groups=int(groups), channels=ws[0],
             kernel_size=tuple(ws[2:]))
    return call("nn.bias_add", [y, b], axis=1) if b is not None else y


@aten("aten.conv2d.default")
def _conv2d(x: Value, w: Value, b: Value | None = None, stride: Any = 1, padding: Any = 0,
            dilation: Any = 1, groups: int = 1) -> Value:
    return _convolution(x, w, b, stride, padding, dilation, False, 0, groups)


@aten("aten._native_batch_norm_legit_no_training.default")
def _bn_no_training(x: Value, w: Value | None, b: Value | None, mean: Value, var: Value,
                    momentum: float, eps: float) -> list[Value]:
    c = mean.static_shape()[0]
    ones = const(np.ones(c, x.dtype))
    zeros = const(np.zeros(c, x.dtype))
    t = call("nn.batch_norm", [x, w or ones, b or zeros, mean, var], axis=1, epsilon=float(eps))
    return [project(t, 0), mean, var]


@aten("aten.batch_norm.default")
def _batch_norm(x: Value, w: Value | None, b: Value | None, mean: Value, var: Value,
                training: bool, momentum: float, eps: float, *rest: Any) -> Value:
    if training:
        raise Unsupported("training-mode batch_norm is not supported")
    return _bn_no_training(x, w, b, mean, var, momentum, eps)[0]


@aten("aten.max_pool2d_with_indices.default", "aten.max_pool2d.default")
def _max_pool(x: Value, kernel: Any, stride: Any = (), padding: Any = 0, dilation: Any = 1,
              ceil_mode: bool = False) -> list[Any]:
    k = pair(kernel)
    s = pair(stride) if stride not in ((), [], None) else k
    ph, pw = pair(padding)
    y = call("nn.max_pool2d", [x], pool_size=k, strides=s, padding=(ph, pw, ph, pw),
             dilation=pair(dilation), ceil_mode=bool(ceil_mode))
    return [y, Unavailable("max-pool indices")]


@aten("aten.avg_pool2d.default")
def _avg_pool(x: Value, kernel: Any, stride: Any = (), padding: Any = 0,
              ceil_mode: bool = False, count_include_pad: bool = True,
              divisor_override: Any = None) -> Value:
    if divisor_override is not None:
        raise Unsupported("avg_pool2d divisor_override is not supported")
    k = pair(kernel)
    s = pair(stride) if stride not in ((), [], None) else k
    ph, pw = pair(padding)
    return call("nn.avg_pool2d", [x], pool_size=k, strides=s, padding=(ph, pw, ph, pw),
                ceil_mode=bool(ceil_mode), count_include_pad=bool(count_include_pad))


@aten("aten.adaptive_avg_pool2d.default", "aten._adaptive_avg_pool2d.default")
def _adaptive_avg(x: Value, size: Any) -> Value:
    if ints(size) not in ((1, 1), (1,)):
        raise Unsupported("adaptive_avg_pool2d only to 1x1")
    return call("nn.global_avg_pool2d", [x])


@aten("aten.addmm.default")
def _addmm(bias: Value, a: Value, b: Value, beta: Any = 1, alpha: Any = 1) -> Value:
    y = matmul(a, b)
    if alpha != 1:
        y = call("multiply", [y, like(y, alpha)])
    if beta != 1:
        bias = call("multiply", [bias, like(bias, beta)])
    return call("add", [y, bias])


def matmul(a: Value, b: Value) -> Value:
    """``a @ b`` for a 2-D ``b`` (``nn.dense``, leading dims of ``a`` folded into rows with
    reshape codes, so a symbolic batch stays symbolic) or 3-D operands of one batch
    (``nn.batch_matmul``)."""
    if b.ndim == 2 and a.ndim >= 2:
        wt = call("transpose", [b], axes=(1, 0))
        if a.ndim == 2:
            return call("nn.dense", [a, wt])
        rows = call("reshape", [a], newshape=(-1, a.shape[-1]))
        y = call("nn.dense", [rows, wt])
        return _unfold(y, a, b)
    if a.ndim == 3 and b.ndim == 3:
        return call("nn.batch_matmul", [a, b], transpose_b=False)
    raise Unsupported(f"matmul of ranks {a.ndim} and {b.ndim} (after decomposition, "
                      "PyTorch gives mm and bmm)")


def _unfold(y: Value, a: Value, b: Value) -> Value:
    """The rows of ``y`` back into ``a``'s leading dims (static but the first)."""
    lead = a.shape[1:-1]
    if not all(is_concrete(d) for d in lead):
        raise Unsupported(f"matmul of a {a.shape} tensor: only its first dim may be symbolic")
    return call("reshape", [y], newshape=(-1, *(int(d) for d in lead), b.shape[-1]))


@aten("aten.mm.default", "aten.bmm.default", "aten.matmul.default")
def _mm(a: Value, b: Value) -> Value:
    return matmul(a, b)


@aten("aten.linear.default")
def _linear(x: Value, w: Value, b: Value | None = None) -> Value:
    y = matmul(x, call("transpose", [w], axes=(1, 0)))
    return call("add", [y, b]) if b is not None else y
