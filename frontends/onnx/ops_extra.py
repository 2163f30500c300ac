"""ONNX operators expressed through several registry operators: hyperbolic functions,
``Gelu``/``Celu``/``Mish``/``Shrink``, ``IsNaN``/``IsInf``, ``LayerNormalization``,
``LpNormalization``, ``MeanVarianceNormalization``, ``DepthToSpace``/``SpaceToDepth``,
``Trilu``, ``EyeLike``, ``OneHot``, ``RMSNormalization``, ``GroupNormalization``, ``Swish``,
``CenterCropPad``."""

from __future__ import annotations

from typing import Any

import numpy as np

from frontends.onnx.builder import Unsupported, Value, call, const, static_ints
from frontends.onnx.context import Context, onnx_dtype
from frontends.onnx.ops_math import _req, scalar
from frontends.onnx.registry import converter


def _exp_pair(x: Value) -> tuple[Value, Value]:
    return call("exp", [x]), call("exp", [call("negative", [x])])


@converter("Sinh", "Cosh")
def _sinh_cosh(ctx: Context, node: Any, ins: list[Value | None],
               attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    a, b = _exp_pair(x)
    s = call("subtract" if node.op_type == "Sinh" else "add", [a, b])
    return [call("multiply", [s, scalar(0.5, x)])]


@converter("Asinh", "Acosh")
def _asinh_acosh(ctx: Context, node: Any, ins: list[Value | None],
                 attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    sq = call("multiply", [x, x])
    inner = call("add" if node.op_type == "Asinh" else "subtract", [sq, scalar(1, x)])
    return [call("log", [call("add", [x, call("sqrt", [inner])])])]


@converter("Atanh")
def _atanh(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    ratio = call("divide", [call("add", [scalar(1, x), x]), call("subtract", [scalar(1, x), x])])
    return [call("multiply", [call("log", [ratio]), scalar(0.5, x)])]


@converter("Gelu", attrs=("approximate",))
def _gelu(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    approx = attrs.get("approximate", b"none")
    approx = approx.decode() if isinstance(approx, bytes) else str(approx)
    if approx == "tanh":
        cube = call("multiply", [call("multiply", [x, x]), x])
        inner = call("multiply", [call("add", [x, call("multiply", [cube, scalar(0.044715, x)])]),
                                  scalar(float(np.sqrt(2 / np.pi)), x)])
        cdf = call("multiply", [call("add", [call("tanh", [inner]), scalar(1, x)]),
                                scalar(0.5, x)])
    else:
        cdf = call("multiply", [call("add", [call("erf", [
            call("multiply", [x, scalar(float(1 / np.sqrt(2)), x)])]), scalar(1, x)]),
            scalar(0.5, x)])
    return [call("multiply", [x, cdf])]


@converter("Celu", attrs=("alpha",))
def _celu(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    alpha = float(attrs.get("alpha", 1.0))
    neg = call("multiply", [scalar(alpha, x), call("subtract", [
        call("exp", [call("divide", [x, scalar(alpha, x)])]), scalar(1, x)])])
    return [call("add", [call("maximum", [x, scalar(0, x)]),
                         call("minimum", [neg, scalar(0, x)])])]


@converter("Mish")
def _mish(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    softplus = call("log", [call("add", [call("exp", [x]), scalar(1, x)])])
    return [call("multiply", [x, call("tanh", [softplus])])]


@converter("Shrink", attrs=("bias", "lambd"))
def _shrink(ctx: Context, node: Any, ins: list[Value | None],
            attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    bias, lambd = float(attrs.get("bias", 0.0)), float(attrs.get("lambd", 0.5))
    lo = call("less", [x, scalar(-lambd, x)])
    hi = call("greater", [x, scalar(lambd, x)])
    return [call("where", [lo, call("add", [x, scalar(bias, x)]),
                           call("where", [hi, call("subtract", [x, scalar(bias, x)]),
                                          scalar(0, x)])])]


@converter("IsNaN")
def _isnan(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    return [call("not_equal", [x, x])]


@converter("IsInf", attrs=("detect_negative", "detect_positive"))
def _isinf(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    pos = call("equal", [x, scalar(np.inf, x)])
    neg = call("equal", [x, scalar(-np.inf, x)])
    want_pos, want_neg = attrs.get("detect_positive", 1), attrs.get("detect_negative", 1)
    if want_pos and want_neg:
        return [call("logical_or", [pos, neg])]
    if want_pos:
        return [pos]
    if want_neg:
        return [neg]
    return [call("logical_and", [pos, neg])]


def _normalize(x: Value, axes: tuple[int, ...], eps: float) -> Value:
    mean = call("mean", [x], axis=axes, keepdims=True)
    var = call("variance", [x, mean], axis=axes, keepdims=True)
    return call("divide", [call("subtract", [x, mean]),
                           call("sqrt", [call("add", [var, scalar(eps, x)])])])


@converter("LayerNormalization", attrs=("axis", "epsilon", "stash_type"))
def _layer_norm(ctx: Context, node: Any, ins: list[Value | None],
                attrs: dict[str, Any]) -> list[Value]:
    x, scale = _req(ins, 0), _req(ins, 1)
    axis = int(attrs.get("axis", -1)) % x.ndim
    axes = tuple(range(axis, x.ndim))
    eps = float(attrs.get("epsilon", 1e-5))
    mean = call("mean", [x], axis=axes, keepdims=True)
    var = call("variance", [x, mean], axis=axes, keepdims=True)
    inv_std = call("rsqrt", [call("add", [var, scalar(eps, x)])])
    y = call("multiply", [call("multiply", [call("subtract", [x, mean]), inv_std]), scale])
    if len(ins) > 2 and ins[2] is not None:
        y = call("add", [y, ins[2]])
    return [y, mean, inv_std]


@converter("MeanVarianceNormalization", attrs=("axes",))
def _mvn(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    axes = tuple(int(a) % x.ndim for a in attrs.get("axes", [0, 2, 3]))
    return [_normalize(x, axes, 1e-9)]


@converter("LpNormalization", attrs=("axis", "p"))
def _lp_norm(ctx: Context, node: Any, ins: list[Value | None],
             attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    axis, p = int(attrs.get("axis", -1)), int(attrs.get("p", 2))
    if p == 1:
        norm = call("sum", [call("abs", [x])], axis=(axis,), keepdims=True)
    elif p == 2:
        norm = call("sqrt", [call("sum", [call("multiply", [x, x])], axis=(axis,),
                                  keepdims=True)])
    else:
        raise Unsupported(f"p={p}")
    zero = call("equal", [norm, scalar(0, x)])
    return [call("where", [zero, scalar(0, x), call("divide", [x, norm])])]


@converter("DepthToSpace", attrs=("blocksize", "mode"))
def _depth_to_space(ctx: Context, node: Any, ins: list[Value | None],
                    attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    b = int(attrs["blocksize"])
    mode = attrs.get("mode", b"DCR")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    n, c, h, w = x.static_shape()
    if mode == "DCR":
        t = call("reshape", [x], newshape=(n, b, b, c // (b * b), h, w))
        t = call("transpose", [t], axes=(0, 3, 4, 1, 5, 2))
    else:
        t = call("reshape", [x], newshape=(n, c // (b * b), b, b, h, w))
        t = call("transpose", [t], axes=(0, 1, 4, 2, 5, 3))
    return [call("reshape", [t], newshape=(n, c // (b * b), h * b, w * b))]


@converter("SpaceToDepth", attrs=("blocksize", "mode"))
def _space_to_depth(ctx: Context, node: Any, ins: list[Value | None],
                    attrs: dict[str, Any]) -> list[Value]:
    """DepthToSpace's inverse; ``mode`` (opset 28) ``DCR`` (the default: block offsets
    outermost in the channels) or ``CRD`` (channels outermost)."""
    x = _req(ins, 0)
    b = int(attrs["blocksize"])
    mode = attrs.get("mode", b"DCR")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    if mode not in ("DCR", "CRD"):
        raise Unsupported(f"SpaceToDepth mode {mode!r}")
    n, c, h, w = x.static_shape()
    t = call("reshape", [x], newshape=(n, c, h // b, b, w // b, b))
    t = call("transpose", [t], axes=(0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4))
    return [call("reshape", [t], newshape=(n, c * b * b, h // b, w // b))]


@converter("Trilu", attrs=("upper",))
def _trilu(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    k = static_ints(ins[1], "the Trilu k")[0] if len(ins) > 1 and ins[1] is not None else 0
    rows, cols = x.static_shape()[-2:]
    keep = np.triu(np.ones((rows, cols), bool), k) if attrs.get("upper", 1) else \
        np.tril(np.ones((rows, cols), bool), k)
    return [call("where", [const(keep), x, scalar(0, x)])]


@converter("EyeLike", attrs=("dtype", "k"))
def _eye_like(ctx: Context, node: Any, ins: list[Value | None],
              attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    dtype = onnx_dtype(int(attrs["dtype"])) if "dtype" in attrs else x.dtype
    rows, cols = x.static_shape()
    return [const(np.eye(rows, cols, int(attrs.get("k", 0)), dtype=dtype))]


@converter("OneHot", attrs=("axis",))
def _one_hot(ctx: Context, node: Any, ins: list[Value | None],
             attrs: dict[str, Any]) -> list[Value]:
    idx, values = _req(ins, 0), _req(ins, 2)
    depth = int(np.asarray(ins[1].const if ins[1] is not None and ins[1].const is not None
                           else _fail("the OneHot depth")).reshape(-1)[0])
    axis = int(attrs.get("axis", -1))
    rank = idx.ndim + 1
    axis %= rank
    i64 = call("cast", [idx], dtype="int64")
    i64 = call("where", [call("less", [i64, scalar(0, i64)]),
                         call("add", [i64, scalar(depth, i64)]), i64])
    expanded = call("expand_dims", [i64], axis=axis)
    shape = [1] * rank
    shape[axis] = depth
    ar = const(np.arange(depth, dtype=np.int64).reshape(shape))
    hot = call("equal", [expanded, ar])
    off = call("take", [values, const(np.int64(0))], axis=0)
    on = call("take", [values, const(np.int64(1))], axis=0)
    return [call("where", [hot, on, off])]


def _fail(what: str) -> Any:
    raise Unsupported(f"{what} must be known at import time")


def _stash(x: Value, stash_type: int) -> Value:
    """``x`` in the statistics' precision: ``stash_type=1`` is float32 (float16 inputs are
    widened; float32/float64 stay)."""
    if stash_type != 1:
        raise Unsupported(f"stash_type={stash_type} is not supported (only 1, float32)")
    return call("cast", [x], dtype="float32") if x.dtype == "float16" else x


@converter("RMSNormalization", attrs=("axis", "epsilon", "stash_type"))
def _rms_norm(ctx: Context, node: Any, ins: list[Value | None],
              attrs: dict[str, Any]) -> list[Value]:
    """``x / sqrt(mean(x**2 over axes axis..) + epsilon) * scale`` (opset 23)."""
    x, scale = _req(ins, 0), _req(ins, 1)
    axis = int(attrs.get("axis", -1)) % x.ndim
    xs = _stash(x, int(attrs.get("stash_type", 1)))
    ms = call("mean", [call("multiply", [xs, xs])], axis=tuple(range(axis, x.ndim)),
              keepdims=True)
    inv = call("divide", [scalar(1.0, xs), call("sqrt", [call("add", [
        ms, scalar(float(attrs.get("epsilon", 1e-5)), xs)])])])
    y = call("multiply", [xs, inv])
    if y.dtype != x.dtype:
        y = call("cast", [y], dtype=x.dtype)
    return [call("multiply", [y, scale])]


@converter("GroupNormalization", attrs=("epsilon", "num_groups", "stash_type"))
def _group_norm(ctx: Context, node: Any, ins: list[Value | None],
                attrs: dict[str, Any]) -> list[Value]:
    """Opset 21: the channels in ``num_groups`` groups, each normalized over its channels
    and the spatial dims (population variance), then per-channel ``scale`` and ``bias``."""
    if ctx.opset < 21:
        raise Unsupported("GroupNormalization before opset 21 (per-group scale) is not "
                          "supported")
    x, scale, bias = _req(ins, 0), _req(ins, 1), _req(ins, 2)
    shape = x.static_shape()
    g = int(attrs["num_groups"])
    n, c = shape[0], shape[1]
    if g <= 0 or c % g:
        raise Unsupported(f"{c} channels do not split into {g} groups")
    xs = _stash(x, int(attrs.get("stash_type", 1)))
    grouped = call("reshape", [xs], newshape=(n, g, -1))
    y = _normalize(grouped, (2,), float(attrs.get("epsilon", 1e-5)))
    y = call("reshape", [y], newshape=shape)
    if y.dtype != x.dtype:
        y = call("cast", [y], dtype=x.dtype)
    extra = (1,) * (len(shape) - 2)
    y = call("multiply", [y, call("reshape", [scale], newshape=(c,) + extra)])
    return [call("add", [y, call("reshape", [bias], newshape=(c,) + extra)])]


@converter("Swish", attrs=("alpha",))
def _swish(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    """``x * sigmoid(alpha * x)`` (opset 24)."""
    x = _req(ins, 0)
    ax = call("multiply", [x, scalar(float(attrs.get("alpha", 1.0)), x)])
    return [call("multiply", [x, call("sigmoid", [ax])])]


@converter("CenterCropPad", attrs=("axes",))
def _center_crop_pad(ctx: Context, node: Any, ins: list[Value | None],
                     attrs: dict[str, Any]) -> list[Value]:
    """Each listed axis cropped (from ``(dim - size) // 2``) or zero-padded (``(size - dim)
    // 2`` before, the rest after) to the static target size, centred."""
    x = _req(ins, 0)
    sizes = static_ints(ins[1], "the CenterCropPad shape")
    shape = x.static_shape()
    axes = [int(a) % x.ndim for a in attrs.get("axes", range(x.ndim))]
    if len(axes) != len(sizes):
        raise Unsupported(f"{len(sizes)} target sizes for {len(axes)} axes")
    begin, end = [0] * x.ndim, list(shape)
    widths = [(0, 0)] * x.ndim
    for a, size in zip(axes, sizes):
        dim = shape[a]
        if size < dim:
            begin[a] = (dim - size) // 2
            end[a] = begin[a] + size
        elif size > dim:
            before = (size - dim) // 2
            widths[a] = (before, size - dim - before)
    if tuple(begin) != (0,) * x.ndim or tuple(end) != shape:
        x = call("strided_slice", [x], begin=tuple(begin), end=tuple(end),
                 strides=(1,) * x.ndim)
    if any(w != (0, 0) for w in widths):
        x = call("nn.pad", [x, scalar(0, x)], pad_width=tuple(widths))
    return [x]
