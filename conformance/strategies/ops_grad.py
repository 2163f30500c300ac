"""Valid/invalid call strategies for the ``grad_ops`` operator family (the backward operators of
:mod:`semantics.ops.grad_ops`).

Every valid call is derived from a valid call of the forward operator it is the adjoint of
(:func:`~conformance.strategies.nn_transform.nn_spatial.conv2d_call`,
:func:`~conformance.strategies.nn_transform.nn_spatial.pool2d_call`), so the shapes and
attributes cover what the forward strategies cover *by construction* (no filtering):

* ``nn.conv2d_backward_weight``: the conv2d call's data and weight transposed to ``NCHW`` and
  ``OIHW``; the grad has the conv2d's result type and ``kernel_size`` the weight's extent;
* ``nn.conv2d_transpose``: the conv2d's result as data and its weight as the ``IOHW`` weight,
  with the ``output_padding`` that gives back the conv2d's data extent;
* ``nn.max_pool2d_grad`` / ``nn.avg_pool2d_grad``: (the pool's result type, the data type);
  ``nn.max_pool2d_pick``: (data, data).

``nonempty=True`` (and :func:`nonempty_conv2d_call`, :func:`nonempty_pool2d_call`) draw calls
with elements everywhere, for tests of derivatives (the forward strategies favour zero-size
extents, on which a derivative is only a shape).

Every dtype becomes a float dtype (the family computes in floats) and ``out_dtype`` is dropped
or spelled as the data's dtype. ``call_inputs`` / default inputs serve (no value constraints).
Invalid calls: integer or mismatched dtypes, a grad of the wrong shape, ``output_padding`` not
below the strides, an unsupported layout, a missing ``kernel_size``, plus the generic bad calls
(non-tensor argument, extra argument, unknown attribute).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from conformance.strategies import ops as O
from conformance.strategies.nn_transform.common import FLOATS, CallArgs, SearchStrategy, T
from conformance.strategies.nn_transform.common import _generic_bad as generic_bad
from conformance.strategies.nn_transform.nn_spatial import conv2d_call, pool2d_call
from semantics import ops
from semantics.ops.nn_relations import pad4, pair
from semantics.types import TensorType

GRAD_OPS = ("nn.conv2d_transpose", "nn.conv2d_backward_weight", "nn.max_pool2d_grad",
            "nn.max_pool2d_pick", "nn.avg_pool2d_grad")

_WINDOW = ("strides", "padding", "dilation", "groups")


def _permuted(t: TensorType, layout: str, canonical: str) -> tuple[int, ...]:
    return tuple(int(t.shape[layout.index(ch)]) for ch in canonical)


@st.composite
def nonempty_conv2d_call(draw: st.DrawFn, dtype: str = "float64") -> CallArgs:
    """A conv2d call whose data, weight and result all have elements (every extent >= 1), in
    any unblocked layout, with strides, padding, dilation and groups (depthwise too): the
    calls on which a derivative is more than a shape."""
    groups = draw(st.integers(1, 3))
    cg = 1 if draw(st.booleans()) else draw(st.integers(1, 2))
    og = draw(st.integers(1, 2))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    sh, sw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    dh, dw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    pt, pl, pb, pr = (draw(st.integers(0, 2)) for _ in range(4))
    h = max(1, dh * (kh - 1) + 1 - pt - pb) + draw(st.integers(0, 4))
    w = max(1, dw * (kw - 1) + 1 - pl - pr) + draw(st.integers(0, 4))
    data_layout = draw(st.sampled_from(("NCHW", "NHWC", "CHWN")))
    kernel_layout = draw(st.sampled_from(("OIHW", "HWIO", "HWOI")))
    dims = {"N": draw(st.integers(1, 2)), "C": groups * cg, "H": h, "W": w}
    wdims = {"O": groups * og, "I": cg, "H": kh, "W": kw}
    attrs: dict[str, Any] = {"strides": [sh, sw], "padding": [pt, pl, pb, pr],
                             "dilation": [dh, dw], "groups": groups}
    if data_layout != "NCHW":
        attrs["data_layout"] = data_layout
    if kernel_layout != "OIHW":
        attrs["kernel_layout"] = kernel_layout
    return (T([dims[a] for a in data_layout], dtype),
            T([wdims[a] for a in kernel_layout], dtype)), attrs


@st.composite
def nonempty_pool2d_call(draw: st.DrawFn, avg: bool, dtype: str = "float64") -> CallArgs:
    """A max/avg pool call with elements everywhere (as :func:`nonempty_conv2d_call`)."""
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    sh, sw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    dh, dw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    pt, pl, pb, pr = (draw(st.integers(0, 2)) for _ in range(4))
    h = max(1, dh * (kh - 1) + 1 - pt - pb) + draw(st.integers(0, 4))
    w = max(1, dw * (kw - 1) + 1 - pl - pr) + draw(st.integers(0, 4))
    layout = draw(st.sampled_from(("NCHW", "NHWC")))
    dims = {"N": draw(st.integers(1, 2)), "C": draw(st.integers(1, 2)), "H": h, "W": w}
    attrs: dict[str, Any] = {"pool_size": [kh, kw], "strides": [sh, sw],
                             "dilation": [dh, dw], "padding": [pt, pl, pb, pr],
                             "ceil_mode": draw(st.booleans())}
    if layout != "NCHW":
        attrs["layout"] = layout
    if avg:
        attrs["count_include_pad"] = draw(st.booleans())
    return (T([dims[a] for a in layout], dtype),), attrs


@st.composite
def canonical_conv(draw: st.DrawFn, nonempty: bool = False
                   ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], dict[str, Any],
                              str]:
    """A valid conv2d call in NCHW/OIHW: (data shape, weight shape, result shape, window
    attributes as written, float dtype)."""
    (data, weight), attrs = draw(nonempty_conv2d_call() if nonempty else conv2d_call())
    x = _permuted(data, attrs.get("data_layout", "NCHW"), "NCHW")
    w = _permuted(weight, attrs.get("kernel_layout", "OIHW"), "OIHW")
    window = {k: attrs[k] for k in _WINDOW if k in attrs}
    dtype = draw(st.sampled_from(FLOATS))
    out = ops.get("nn.conv2d").relation((T(x, dtype), T(w, dtype)),
                                        ops.get("nn.conv2d").normalize_attrs(window))
    if not isinstance(out, TensorType):
        raise TypeError(f"conv2d relation gave {out!r}")
    return x, w, tuple(int(d) for d in out.shape), window, dtype


def _maybe_out_dtype(draw: st.DrawFn, attrs: dict[str, Any], dtype: str) -> None:
    if draw(st.booleans()):
        attrs["out_dtype"] = draw(st.sampled_from(("", dtype)))


@st.composite
def conv2d_backward_weight_call(draw: st.DrawFn, nonempty: bool = False) -> CallArgs:
    x, w, y, window, dtype = draw(canonical_conv(nonempty))
    attrs = {**window, "kernel_size": [w[2], w[3]] if w[2] != w[3] or draw(st.booleans())
             else [w[2]]}
    if draw(st.booleans()):
        attrs["channels"] = y[1] if y[1] else None
    _maybe_out_dtype(draw, attrs, dtype)
    return (T(y, dtype), T(x, dtype)), attrs


@st.composite
def conv2d_transpose_call(draw: st.DrawFn, nonempty: bool = False) -> CallArgs:
    x, w, y, window, dtype = draw(canonical_conv(nonempty))
    a = ops.get("nn.conv2d").normalize_attrs(window)
    pt, pl, pb, pr = pad4(a["padding"])
    (sh, sw), (dh, dw) = pair(a["strides"]), pair(a["dilation"])
    oph = x[2] - ((y[2] - 1) * sh - pt - pb + dh * (w[2] - 1) + 1)
    opw = x[3] - ((y[3] - 1) * sw - pl - pr + dw * (w[3] - 1) + 1)
    attrs: dict[str, Any] = dict(window)
    if oph or opw or draw(st.booleans()):
        attrs["output_padding"] = [oph, opw]
    if draw(st.booleans()):
        attrs["kernel_layout"] = "IOHW"
    if draw(st.booleans()) and x[1]:
        attrs["channels"] = x[1]
    _maybe_out_dtype(draw, attrs, dtype)
    return (T(y, dtype), T(w, dtype)), attrs


@st.composite
def pool2d_grad_call(draw: st.DrawFn, avg: bool, pick: bool = False, nonempty: bool = False
                     ) -> CallArgs:
    (data,), attrs = draw(nonempty_pool2d_call(avg) if nonempty else pool2d_call(avg))
    dtype = draw(st.sampled_from(FLOATS))
    x = TensorType(data.shape, dtype)
    name = "nn.avg_pool2d" if avg else "nn.max_pool2d"
    pooled = ops.get(name).relation((x,), ops.get(name).normalize_attrs(attrs))
    if not isinstance(pooled, TensorType):
        raise TypeError(f"{name} relation gave {pooled!r}")
    return ((x, x) if pick else (pooled, x)), attrs


@O.register_valid_call("nn.conv2d_backward_weight")
def _backward_weight_valid() -> SearchStrategy:
    return conv2d_backward_weight_call()


@O.register_valid_call("nn.conv2d_transpose")
def _transpose_valid() -> SearchStrategy:
    return conv2d_transpose_call()


@O.register_valid_call("nn.max_pool2d_grad", "nn.avg_pool2d_grad", "nn.max_pool2d_pick")
def _pool_grad_valid(name: str) -> SearchStrategy:
    return pool2d_grad_call(name == "nn.avg_pool2d_grad", pick=name == "nn.max_pool2d_pick")


# --- invalid calls ----------------------------------------------------------------------------

@st.composite
def _conv_bad(draw: st.DrawFn, name: str) -> CallArgs:
    call = conv2d_transpose_call() if name == "nn.conv2d_transpose" \
        else conv2d_backward_weight_call()
    (a, b), attrs = draw(call)
    kind = draw(st.sampled_from(("int", "mismatch", "rank", "layout", "out_dtype", "shape")
                                + (("output_padding",) if name == "nn.conv2d_transpose"
                                   else ("no_kernel",))))
    if kind == "int":
        return (T(a.shape, "int32"), T(b.shape, "int32")), attrs
    if kind == "mismatch":
        other = "float64" if a.dtype != "float64" else "float32"
        return (a, T(b.shape, other)), attrs
    if kind == "rank":
        return (T(a.shape[1:], a.dtype), b), attrs
    if kind == "layout":
        key = "data_layout" if draw(st.booleans()) else "kernel_layout"
        return (a, b), {**attrs, key: "NHWC" if key == "data_layout" else "HWIO"}
    if kind == "out_dtype":
        return (a, b), {**attrs, "out_dtype": "int32"}
    if kind == "output_padding":
        s = pair(attrs.get("strides", [1, 1]))
        return (a, b), {**attrs, "output_padding": [s[0], 0]}
    if kind == "no_kernel":
        return (a, b), {k: v for k, v in attrs.items() if k != "kernel_size"}
    if name == "nn.conv2d_transpose":   # data channels one more than the weight's inputs
        return (T((a.shape[0], int(a.shape[1]) + 1, *a.shape[2:]), a.dtype), b), attrs
    # the grad one row taller than the convolution's output
    return (T((a.shape[0], a.shape[1], int(a.shape[2]) + 1, a.shape[3]), a.dtype), b), attrs


@O.register_invalid_call("nn.conv2d_transpose", "nn.conv2d_backward_weight")
def _conv_invalid(name: str) -> SearchStrategy:
    valid = conv2d_transpose_call() if name == "nn.conv2d_transpose" \
        else conv2d_backward_weight_call()
    return st.one_of(_conv_bad(name), *generic_bad(valid))


@st.composite
def _pool_grad_bad(draw: st.DrawFn, name: str) -> CallArgs:
    avg, pick = name == "nn.avg_pool2d_grad", name == "nn.max_pool2d_pick"
    (a, b), attrs = draw(pool2d_grad_call(avg, pick))
    kind = draw(st.sampled_from(("int", "mismatch", "shape", "rank", "layout", "no_pool")))
    if kind == "int":
        return (T(a.shape, "int32"), T(b.shape, "int32")), attrs
    if kind == "mismatch":
        other = "float64" if a.dtype != "float64" else "float32"
        return (a, T(b.shape, other)), attrs
    if kind == "shape":
        first = (int(a.shape[0]) + 1, *a.shape[1:])
        return (T(first, a.dtype), b), attrs
    if kind == "rank":
        return (a, T(b.shape[1:], b.dtype)), attrs
    if kind == "layout":
        return (a, b), {**attrs, "layout": "NCHWc"}
    return (a, b), {k: v for k, v in attrs.items() if k != "pool_size"}


@O.register_invalid_call("nn.max_pool2d_grad", "nn.avg_pool2d_grad", "nn.max_pool2d_pick")
def _pool_grad_invalid(name: str) -> SearchStrategy:
    avg, pick = name == "nn.avg_pool2d_grad", name == "nn.max_pool2d_pick"
    return st.one_of(_pool_grad_bad(name), *generic_bad(pool2d_grad_call(avg, pick)))


def nonempty_call(name: str) -> SearchStrategy | None:
    """Calls of ``name`` with elements everywhere, for the windowed operators of nn and this
    family (``None`` for the others, whose kit strategies are already mostly non-empty)."""
    if name == "nn.conv2d":
        return nonempty_conv2d_call()
    if name in ("nn.max_pool2d", "nn.avg_pool2d"):
        return nonempty_pool2d_call(name == "nn.avg_pool2d")
    if name == "nn.conv2d_transpose":
        return conv2d_transpose_call(nonempty=True)
    if name == "nn.conv2d_backward_weight":
        return conv2d_backward_weight_call(nonempty=True)
    if name in ("nn.max_pool2d_grad", "nn.avg_pool2d_grad", "nn.max_pool2d_pick"):
        return pool2d_grad_call(name == "nn.avg_pool2d_grad", pick=name == "nn.max_pool2d_pick",
                                nonempty=True)
    return None
