"""ONNX neural-network operators (convolution, normalization, dense, softmax, dropout, LRN)
→ Relay calls; pooling is in :mod:`frontends.onnx.ops_pool`, which shares the padding helpers
here.

Convolution is 1-D or 2-D (NCW via a height-1 NCHW image, NCHW). Float16 convolutions and
products accumulate in float32 (``out_dtype``) and round once, as the ONNX reference and
onnxruntime do. Training-mode ``BatchNormalization`` uses the batch statistics and returns
the updated running ones; training-mode ``Dropout`` is supported with ratio 0 only (above 0
it is random).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from frontends.onnx.builder import Unsupported, Value, call, const, project
from frontends.onnx.context import Context
from frontends.onnx.ops_math import _req, scalar
from frontends.onnx.registry import converter
from frontends.onnx.shape_values import dims_equal, reshape_to
from semantics.shapes import dim_prod

_CONV_ATTRS = ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")


def _pads(node: Any, attrs: dict[str, Any], x: Value, kernel: list[int], strides: list[int],
          dilations: list[int], ceil_mode: bool = False) -> list[int]:
    """ONNX ``pads``/``auto_pad`` → TVM's (top, left, bottom, right)."""
    auto = attrs.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else str(auto)
    nsp = len(kernel)
    if auto in ("NOTSET", ""):
        return [int(p) for p in attrs.get("pads", [0] * (2 * nsp))]
    if auto == "VALID":
        return [0] * (2 * nsp)
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise Unsupported(f"auto_pad={auto}")
    hw = x.static_shape()[2:]
    begin, end = [], []
    for size, k, s, d in zip(hw, kernel, strides, dilations):
        out = -(-size // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
        small, big = total // 2, total - total // 2
        if auto == "SAME_UPPER":
            begin.append(small)
            end.append(big)
        else:
            begin.append(big)
            end.append(small)
    return begin + end


def _spatial2d(x: Value, what: str) -> None:
    if x.ndim != 4:
        raise Unsupported(f"only 1-D and 2-D (NCW, NCHW) {what} is supported, got rank {x.ndim}")


def _as_2d(attrs: dict[str, Any]) -> dict[str, Any]:
    """1-D convolution/pooling attributes as 2-D ones over a height-1 image."""
    out = dict(attrs)
    for key in ("kernel_shape", "strides", "dilations"):
        if key in out:
            out[key] = [1] + [int(v) for v in out[key]]
    if "pads" in out:
        b, e = [int(v) for v in out["pads"]]
        out["pads"] = [0, b, 0, e]
    return out


@converter("Conv", attrs=_CONV_ATTRS)
def _conv(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    x, w = _req(ins, 0), _req(ins, 1)
    if x.ndim == 3 and w.ndim == 3:
        x2 = call("expand_dims", [x], axis=2)
        w2 = call("expand_dims", [w], axis=2)
        args: list[Value | None] = [x2, w2, *ins[2:]]
        (y,) = _conv(ctx, node, args, _as_2d(attrs))
        return [call("squeeze", [y], axis=(2,))]
    _spatial2d(x, "convolution")
    wshape = w.static_shape()
    kernel = [int(k) for k in attrs.get("kernel_shape", wshape[2:])]
    strides = [int(s) for s in attrs.get("strides", [1, 1])]
    dil = [int(d) for d in attrs.get("dilations", [1, 1])]
    pads = _pads(node, attrs, x, kernel, strides, dil)
    y = call("nn.conv2d", [x, w], strides=tuple(strides), padding=tuple(pads),
             dilation=tuple(dil), groups=int(attrs.get("group", 1)), channels=wshape[0],
             kernel_size=tuple(kernel), out_dtype=_acc_dtype(x))
    y = _from_acc(y, x)
    if len(ins) > 2 and ins[2] is not None:
        y = call("nn.bias_add", [y, ins[2]], axis=1)
    return [y]


def _acc_dtype(x: Value) -> str | None:
    """The accumulation dtype of a float16 convolution or product: float32, as the ONNX
    reference (numpy) and onnxruntime accumulate; ``None`` (the operand dtype) otherwise."""
    return "float32" if x.dtype == "float16" else None


def _from_acc(y: Value, x: Value) -> Value:
    """``y`` (accumulated per :func:`_acc_dtype`) rounded back to ``x``'s dtype."""
    return call("cast", [y], dtype=x.dtype) if y.dtype != x.dtype else y


@converter("BatchNormalization", attrs=("epsilon", "momentum", "spatial", "training_mode"))
def _batch_norm(ctx: Context, node: Any, ins: list[Value | None],
                attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    eps = float(attrs.get("epsilon", 1e-5))
    if attrs.get("training_mode", 0) or len([o for o in node.output if o]) > 1:
        return _batch_norm_training(ctx, x, ins, eps, float(attrs.get("momentum", 0.9)))
    t = call("nn.batch_norm", [x, _req(ins, 1), _req(ins, 2), _req(ins, 3), _req(ins, 4)],
             axis=1, epsilon=eps)
    return [project(t, 0)]


def _batch_norm_training(ctx: Context, x: Value, ins: list[Value | None], eps: float,
                         momentum: float) -> list[Value]:
    """Training-mode ``BatchNormalization`` (opset 14+): normalize with the batch statistics
    (mean and population variance over every axis but 1) and return the updated running
    statistics ``running * momentum + batch * (1 - momentum)``."""
    if ctx.opset < 14:
        raise Unsupported("training-mode BatchNormalization before opset 14 (saved statistics "
                          "outputs) is not supported")
    axes = tuple(i for i in range(x.ndim) if i != 1)
    mean = call("mean", [x], axis=axes)
    var = call("variance", [x, call("mean", [x], axis=axes, keepdims=True)], axis=axes)
    t = call("nn.batch_norm", [x, _req(ins, 1), _req(ins, 2), mean, var], axis=1, epsilon=eps)
    m = scalar(momentum, x)
    rest = scalar(1.0 - momentum, x)

    def running(old: Value, batch: Value) -> Value:
        return call("add", [call("multiply", [old, m]), call("multiply", [batch, rest])])

    return [project(t, 0), running(_req(ins, 3), mean), running(_req(ins, 4), var)]


@converter("InstanceNormalization", attrs=("epsilon",))
def _instance_norm(ctx: Context, node: Any, ins: list[Value | None],
                   attrs: dict[str, Any]) -> list[Value]:
    x, gamma, beta = _req(ins, 0), _req(ins, 1), _req(ins, 2)
    axes = tuple(range(2, x.ndim))
    mean = call("mean", [x], axis=axes, keepdims=True)
    var = call("variance", [x, mean], axis=axes, keepdims=True)
    eps = scalar(float(attrs.get("epsilon", 1e-5)), x)
    norm = call("divide", [call("subtract", [x, mean]), call("sqrt", [call("add", [var, eps])])])
    extra = (1,) * (x.ndim - 2)
    g = call("reshape", [gamma], newshape=(-1,) + extra)
    b = call("reshape", [beta], newshape=(-1,) + extra)
    return [call("add", [call("multiply", [norm, g]), b])]


@converter("Gemm", attrs=("alpha", "beta", "transA", "transB"))
def _gemm(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    a, b = _req(ins, 0), _req(ins, 1)
    if attrs.get("transA", 0):
        a = call("transpose", [a], axes=(1, 0))
    if not attrs.get("transB", 0):
        b = call("transpose", [b], axes=(1, 0))
    alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
    y = _from_acc(call("nn.dense", [a, b], out_dtype=_acc_dtype(a)), a)
    if alpha != 1.0:
        y = call("multiply", [y, scalar(alpha, y)])
    if len(ins) > 2 and ins[2] is not None and beta != 0.0:
        c = ins[2]
        if beta != 1.0:
            c = call("multiply", [c, scalar(beta, c)])
        y = call("add", [y, c])
    return [y]


def matmul(a: Value, b: Value) -> Value:
    """numpy ``matmul`` semantics over Relay's ``nn.dense`` / ``nn.batch_matmul``."""
    squeeze_a = squeeze_b = False
    if a.ndim == 1:
        a = call("expand_dims", [a], axis=0)
        squeeze_a = True
    if b.ndim == 1:
        b = call("expand_dims", [b], axis=1)
        squeeze_b = True
    acc = _acc_dtype(a)
    if a.ndim == 2 and b.ndim == 2:
        y = _from_acc(call("nn.dense", [a, call("transpose", [b], axes=(1, 0))], out_dtype=acc),
                      a)
    elif b.ndim == 2:
        # (..., m, k) x (k, n): fold the batch dims into the rows.
        ash = a.shape
        a2 = call("reshape", [a], newshape=(-1, ash[-1]))
        y2 = _from_acc(call("nn.dense", [a2, call("transpose", [b], axes=(1, 0))],
                            out_dtype=acc), a)
        if all(isinstance(d, int) for d in ash[:-1]):
            y = call("reshape", [y2], newshape=tuple(ash[:-1]) + (b.shape[-1],))
        else:   # symbolic rows: the leading dims read back from ``a``
            y = call("reshape_like", [y2, a], lhs_begin=0, lhs_end=1, rhs_begin=0,
                     rhs_end=a.ndim - 1)
    elif not all(isinstance(d, int) for d in (*a.shape, *b.shape)):
        y = _symbolic_batch_matmul(a, b, acc)
    else:
        ash, bsh = a.static_shape(), b.static_shape()
        batch = tuple(np.broadcast_shapes(ash[:-2], bsh[:-2]))
        a = call("broadcast_to", [a], shape=batch + ash[-2:])
        b = call("broadcast_to", [b], shape=batch + bsh[-2:])
        n = int(np.prod(batch)) if batch else 1
        a3 = call("reshape", [a], newshape=(n,) + ash[-2:])
        b3 = call("reshape", [b], newshape=(n,) + bsh[-2:])
        y3 = _from_acc(call("nn.batch_matmul", [a3, b3], transpose_b=False, out_dtype=acc), a)
        y = call("reshape", [y3], newshape=batch + (ash[-2], bsh[-1]))
    if squeeze_a:
        y = call("squeeze", [y], axis=(y.ndim - 2,))
    if squeeze_b:
        y = call("squeeze", [y], axis=(y.ndim - 1,))
    return y


def _merge_batch(x: Value) -> Value:
    """``(d1, ..., dk, m, n)`` → ``(d1 * ... * dk, m, n)`` by ``-3`` (merge two) codes."""
    while x.ndim > 3:
        x = call("reshape", [x], newshape=(-3,) + (0,) * (x.ndim - 2))
    if x.ndim == 2:
        x = call("expand_dims", [x], axis=0)
    return x


def _symbolic_batch_matmul(a: Value, b: Value, acc: str | None) -> Value:
    """``matmul`` of two tensors with the same (symbolic) batch dims: the batch merged into
    one dim, ``nn.batch_matmul``, then the batch dims read back from ``a``."""
    if a.ndim != b.ndim or not all(dims_equal(x, y) for x, y in zip(a.shape[:-2],
                                                                   b.shape[:-2])):
        raise Unsupported(f"MatMul of {a.shape} and {b.shape}: broadcasting symbolic batch "
                          f"dimensions")
    y3 = _from_acc(call("nn.batch_matmul", [_merge_batch(a), _merge_batch(b)],
                        transpose_b=False, out_dtype=acc), a)
    return call("reshape_like", [y3, a], lhs_begin=0, lhs_end=1, rhs_begin=0,
                rhs_end=a.ndim - 2)


@converter("MatMul")
def _matmul(ctx: Context, node: Any, ins: list[Value | None],
            attrs: dict[str, Any]) -> list[Value]:
    return [matmul(_req(ins, 0), _req(ins, 1))]


@converter("Softmax", "LogSoftmax", "Hardmax", attrs=("axis",))
def _softmax(ctx: Context, node: Any, ins: list[Value | None],
             attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    if node.op_type == "Hardmax":
        return [_hardmax(ctx, x, attrs)]
    name = "nn.softmax" if node.op_type == "Softmax" else "nn.log_softmax"
    if ctx.opset >= 13:
        return [call(name, [x], axis=int(attrs.get("axis", -1)))]
    # Before opset 13: the input is coerced to 2-D at ``axis`` (default 1).
    axis = int(attrs.get("axis", 1)) % max(x.ndim, 1)
    if axis == x.ndim - 1:
        return [call(name, [x], axis=-1)]
    shape = x.shape
    flat = call("reshape", [x], newshape=(-1, int(np.prod(x.static_shape()[axis:]))))
    return [call("reshape", [call(name, [flat], axis=-1)], newshape=tuple(shape))]


@converter("Dropout", attrs=("ratio", "seed"))
def _dropout(ctx: Context, node: Any, ins: list[Value | None],
             attrs: dict[str, Any]) -> list[Value]:
    """Inference-mode Dropout is the identity (mask all true). In training mode it is the
    identity too when the ratio is 0; with a ratio above 0 it draws random numbers, and a
    model's expected output then depends on the exporter's random generator."""
    if len(ins) > 2 and ins[2] is not None:
        train = ins[2].const
        if train is None:
            raise Unsupported("Dropout with a run-time training_mode input is not supported")
        if bool(train):
            ratio = ins[1].const if len(ins) > 1 and ins[1] is not None else np.asarray(0.5)
            if ratio is None:
                raise Unsupported("training-mode Dropout with a run-time ratio is not supported")
            if float(ratio) != 0.0:
                raise Unsupported("training-mode Dropout with a ratio above 0 is random: its "
                                  "result depends on the random generator (not reproducible)")
    x = _req(ins, 0)
    outs = [x]
    if len(node.output) > 1 and node.output[1]:
        outs.append(call("ones_like", [call("cast", [x], dtype="bool")]))
    return outs


@converter("LRN", attrs=("alpha", "beta", "bias", "size"))
def _lrn(ctx: Context, node: Any, ins: list[Value | None], attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    size = int(attrs["size"])
    alpha, beta = float(attrs.get("alpha", 1e-4)), float(attrs.get("beta", 0.75))
    bias = float(attrs.get("bias", 1.0))
    return [call("nn.lrn", [x], size=size, axis=1, alpha=alpha, beta=beta, bias=bias)]


@converter("Flatten", attrs=("axis",))
def _flatten(ctx: Context, node: Any, ins: list[Value | None],
             attrs: dict[str, Any]) -> list[Value]:
    x = _req(ins, 0)
    axis = int(attrs.get("axis", 1))
    if axis < 0:
        axis += x.ndim
    shape = x.shape
    return [reshape_to(x, [dim_prod(shape[:axis]), dim_prod(shape[axis:])])]



def _hardmax(ctx: Context, x: Value, attrs: dict[str, Any]) -> Value:
    """1 at the first maximum along ``axis`` (opset 13; before: of the 2-D coercion)."""
    if ctx.opset < 13:
        axis = int(attrs.get("axis", 1)) % max(x.ndim, 1)
        shape = x.static_shape()
        flat = call("reshape", [x], newshape=(-1, int(np.prod(shape[axis:]))))
        return call("reshape", [_hardmax_last(flat)], newshape=shape)
    axis = int(attrs.get("axis", -1)) % x.ndim
    perm = [i for i in range(x.ndim) if i != axis] + [axis]
    moved = call("transpose", [x], axes=tuple(perm))
    back = tuple(int(i) for i in np.argsort(perm))
    return call("transpose", [_hardmax_last(moved)], axes=back)


def _hardmax_last(x: Value) -> Value:
    n = x.static_shape()[-1]
    idx = call("argmax", [x], axis=(x.ndim - 1,), keepdims=True)
    hot = call("equal", [call("cast", [idx], dtype="int64"),
                         const(np.arange(n, dtype=np.int64))])
    return call("cast", [hot], dtype=x.dtype)


def _centered_int(v: Value, zp: Value | None, per_channel: bool) -> Value:
    """``v - zp`` in int32; a 1-D zero point of a weight is per output channel."""
    out = call("cast", [v], dtype="int32")
    if zp is None:
        return out
    z = call("cast", [zp], dtype="int32")
    if per_channel and z.ndim == 1 and z.shape[0] != 1:
        z = call("reshape", [z], newshape=(-1,) + (1,) * (v.ndim - 1))
    return call("subtract", [out, call("reshape", [z], newshape=()) if z.ndim == 1 and
                                 z.shape[0] == 1 else z])


def _opt_in(ins: list[Value | None], i: int) -> Value | None:
    return ins[i] if len(ins) > i else None


@converter("ConvInteger", attrs=_CONV_ATTRS)
def _conv_integer(ctx: Context, node: Any, ins: list[Value | None],
                  attrs: dict[str, Any]) -> list[Value]:
    """``Conv`` of ``x - x_zero_point`` and ``w - w_zero_point`` in int32 (exact; padding
    is the zero point, i.e. 0 once centred)."""
    x = _centered_int(_req(ins, 0), _opt_in(ins, 2), False)
    w = _centered_int(_req(ins, 1), _opt_in(ins, 3), True)
    return _conv(ctx, node, [x, w], attrs)


@converter("QLinearConv", attrs=_CONV_ATTRS)
def _qlinear_conv(ctx: Context, node: Any, ins: list[Value | None],
                  attrs: dict[str, Any]) -> list[Value]:
    """The int32 ``ConvInteger`` (plus the int32 bias), times ``x_scale * w_scale /
    y_scale`` (per output channel for a 1-D ``w_scale``) in float64, plus ``y_zero_point``,
    rounded half to even and saturated to ``y_zero_point``'s dtype."""
    x = _centered_int(_req(ins, 0), _opt_in(ins, 2), False)
    w = _centered_int(_req(ins, 3), _opt_in(ins, 5), True)
    (acc,) = _conv(ctx, node, [x, w, _opt_in(ins, 8)], attrs)
    w_scale = _req(ins, 4)
    if w_scale.ndim == 1 and w_scale.shape[0] != 1:
        w_scale = call("reshape", [w_scale], newshape=(-1,) + (1,) * (acc.ndim - 2))
    factor = call("divide", [call("multiply", [_req(ins, 1), w_scale]), _req(ins, 6)])
    y = call("multiply", [call("cast", [acc], dtype="float64"),
                          call("cast", [factor], dtype="float64")])
    yzp = _opt_in(ins, 7)
    if yzp is not None:
        y = call("add", [y, call("cast", [yzp], dtype="float64")])
    dtype = yzp.dtype if yzp is not None else _req(ins, 0).dtype
    info = np.iinfo(np.dtype(dtype))
    y = call("clip", [call("round", [y])], a_min=float(info.min), a_max=float(info.max))
    return [call("cast", [y], dtype=dtype)]
