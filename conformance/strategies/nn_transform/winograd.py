"""Valid/invalid call strategies of the Winograd convolution operators.

``nn.contrib_conv2d_winograd_weight_transform`` draws an ``OIHW`` float kernel ``(O, I, r, r)``
(``r`` 1–3) and a ``tile_size`` with ``tile_size + r - 1 <= 8``;
``nn.contrib_conv2d_winograd_without_weight_transform`` draws data (``NCHW``, ``NHWC`` or a
channel-blocked ``NCHW{b}c``), a transformed weight ``(a, a, O, I)`` and the padding, the input
at least as large as the kernel minus the padding (the relation accepts them by
construction). :func:`winograd_call` is public: the differential tests draw from it. Invalid
calls break what the algorithm needs (a stride or dilation other than 1, groups, a
non-square tile, mismatched channels, integer dtypes, a tile beyond 8).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from conformance.strategies import ops as O
from conformance.strategies.nn_transform.common import (
    CallArgs,
    SearchStrategy,
    T,
    _generic_bad,
    _maybe,
)

WEIGHT_TRANSFORM = "nn.contrib_conv2d_winograd_weight_transform"
WINOGRAD = "nn.contrib_conv2d_winograd_without_weight_transform"
FLOAT_DTYPES = ("float32", "float64", "float16")


@st.composite
def weight_transform_call(draw: st.DrawFn) -> CallArgs:
    r = draw(st.integers(1, 3))
    tile = draw(st.integers(1, 9 - r))
    o, i = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    return (T((o, i, r, r), draw(st.sampled_from(FLOAT_DTYPES))),), {"tile_size": tile}


@st.composite
def winograd_call(draw: st.DrawFn, dtypes: tuple[str, ...] = FLOAT_DTYPES) -> CallArgs:
    """A valid call of the Winograd convolution (see the module docstring)."""
    r = draw(st.integers(1, 3))
    tile = draw(st.integers(1, min(4, 9 - r)))
    alpha = tile + r - 1
    n, o = draw(st.integers(0, 2)), draw(st.integers(0, 3))
    c = draw(st.sampled_from((0, 1, 2, 3, 4)))
    pads = [draw(st.integers(0, 2)) for _ in range(4)]
    padding = pads if draw(st.booleans()) else pads[:2]
    pt, pl, pb, pr = pads if len(padding) == 4 else pads[:2] * 2
    h = draw(st.integers(max(0, r - pt - pb), max(0, r - pt - pb) + 6))
    w = draw(st.integers(max(0, r - pl - pr), max(0, r - pl - pr) + 6))
    blocks = [b for b in (2, 4) if c and c % b == 0]
    layouts = ["NCHW", "NHWC"] + [f"NCHW{b}c" for b in blocks]
    data_layout = draw(st.sampled_from(layouts))
    out_blocks = [b for b in (2, 4) if o and o % b == 0]
    out_layout = draw(st.sampled_from(["", "NCHW", "NHWC"] + [f"NCHW{b}c" for b in out_blocks]))
    if out_layout == "" and data_layout[4:-1] and o % int(data_layout[4:-1]):
        out_layout = "NCHW"  # the data's block does not divide the output channels
    dtype = draw(st.sampled_from(dtypes))
    dims = {"N": n, "C": c, "H": h, "W": w}
    if data_layout.startswith("NCHW") and data_layout != "NCHW":
        block = int(data_layout[4:-1])
        data_shape = [n, c // block, h, w, block]
    else:
        data_shape = [dims[letter] for letter in data_layout]
    attrs: dict[str, Any] = {"tile_size": tile}
    _maybe(draw, attrs, "padding", padding, [0, 0])
    if o and draw(st.booleans()):
        attrs["channels"] = o
    if draw(st.booleans()):
        attrs["kernel_size"] = [r, r]
    _maybe(draw, attrs, "data_layout", data_layout, "NCHW")
    _maybe(draw, attrs, "out_layout", out_layout, "")
    if draw(st.booleans()):
        attrs["out_dtype"] = dtype
    return (T(data_shape, dtype), T((alpha, alpha, o, c), dtype)), attrs


@O.register_valid_call(WEIGHT_TRANSFORM)
def _weight_transform_valid() -> SearchStrategy:
    return weight_transform_call()


@O.register_valid_call(WINOGRAD)
def _winograd_valid() -> SearchStrategy:
    return winograd_call()


@st.composite
def _weight_transform_bad(draw: st.DrawFn) -> CallArgs:
    kind = draw(st.sampled_from(("rank", "square", "alpha", "int", "tile")))
    if kind == "rank":
        return (T((2, 3, 3), "float32"),), {"tile_size": 2}
    if kind == "square":
        return (T((2, 3, 3, 2), "float32"),), {"tile_size": 2}
    if kind == "alpha":
        return (T((2, 3, 3, 3), "float32"),), {"tile_size": draw(st.integers(7, 9))}
    if kind == "int":
        return (T((2, 3, 3, 3), "int32"),), {"tile_size": 2}
    return (T((2, 3, 3, 3), "float32"),), {"tile_size": draw(st.sampled_from((0, -1)))}


@st.composite
def _winograd_bad(draw: st.DrawFn) -> CallArgs:
    kind = draw(st.sampled_from(("strides", "dilation", "groups", "square", "channels",
                                 "int", "alpha", "small_tile", "kernel_layout", "channels_attr",
                                 "kernel_attr", "window", "no_tile")))
    data, weight = T((1, 4, 6, 6), "float32"), T((4, 4, 5, 4), "float32")
    attrs: dict[str, Any] = {"tile_size": 2, "padding": [1, 1]}
    if kind == "strides":
        attrs["strides"] = [2, 2]
    elif kind == "dilation":
        attrs["dilation"] = [2]
    elif kind == "groups":
        attrs["groups"] = 2
    elif kind == "square":
        weight = T((4, 3, 5, 4), "float32")
    elif kind == "channels":
        weight = T((4, 4, 5, 3), "float32")
    elif kind == "int":
        data, weight = T((1, 4, 6, 6), "int32"), T((4, 4, 5, 4), "int32")
    elif kind == "alpha":
        weight, attrs["tile_size"] = T((9, 9, 5, 4), "float32"), 6
    elif kind == "small_tile":
        attrs["tile_size"] = 5
    elif kind == "kernel_layout":
        attrs["kernel_layout"] = "HWIO"
    elif kind == "channels_attr":
        attrs["channels"] = 6
    elif kind == "kernel_attr":
        attrs["kernel_size"] = [2, 2]
    elif kind == "window":
        data, attrs["padding"] = T((1, 4, 1, 6), "float32"), [0, 0]
    else:
        del attrs["tile_size"]
    return (data, weight), attrs


@O.register_invalid_call(WEIGHT_TRANSFORM)
def _weight_transform_invalid() -> SearchStrategy:
    return st.one_of(_weight_transform_bad(), *_generic_bad(weight_transform_call()))


@O.register_invalid_call(WINOGRAD)
def _winograd_invalid() -> SearchStrategy:
    return st.one_of(_winograd_bad(), *_generic_bad(winograd_call()))


@st.composite
def winograd_eligible_program(draw: st.DrawFn) -> Any:
    """A ``Program`` whose ``main`` is a 3×3 stride-1 float32 convolution with a *bound*
    weight (a constant: AlterOpLayout's Winograd rule may rewrite it at ``-O3``), large
    enough for the rule's cost model (32–64 channels, 7–30 px outputs), followed by one of
    the epilogues a Winograd kernel fuses (none, bias and ReLU, a residual, a batch norm that
    SimplifyInference and FoldScaleAxis fold into the weight), with its input arrays."""
    import numpy as np

    from conformance.strategies.programgen.config import Program
    from semantics.expr import Constant, Function
    from semantics.parser import parse
    from semantics.rewrite import substitute

    c = draw(st.sampled_from((32, 48, 64)))
    o = draw(st.sampled_from((32, 48, 64)))
    pt, pl, pb, pr = (draw(st.integers(0, 1)) for _ in range(4))
    h = draw(st.integers(9 - pt - pb, 32 - pt - pb))
    w = draw(st.integers(9 - pl - pr, 32 - pl - pr))
    oh, ow = h + pt + pb - 2, w + pl + pr - 2
    epilogue = draw(st.sampled_from(("none", "bias_relu", "residual", "batch_norm")))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    bound = {"w": (rng.standard_normal((o, c, 3, 3)) * 0.2).astype("float32"),
             "b": rng.standard_normal(o).astype("float32"),
             "v": rng.uniform(0.5, 2.0, o).astype("float32")}
    conv = f"nn.conv2d(%x, %w, padding=[{pt}, {pl}, {pb}, {pr}])"
    extra = ""
    body = {"none": conv, "bias_relu": f"nn.relu(nn.bias_add({conv}, %b))",
            "residual": f"nn.relu(add({conv}, %r))",
            "batch_norm": f"nn.relu(nn.batch_norm({conv}, %v, %b, %b, %v).0)"}[epilogue]
    if epilogue == "residual":
        extra = f", %r: Tensor[(1, {o}, {oh}, {ow}), float32]"
    text = (f"def @main(%x: Tensor[(1, {c}, {h}, {w}), float32]{extra}, "
            f"%w: Tensor[({o}, {c}, 3, 3), float32], %b: Tensor[({o}), float32], "
            f"%v: Tensor[({o}), float32]) {{\n  {body}\n}}\n")
    module = parse(text)
    main = module["main"]
    free = [p for p in main.params if p.name_hint not in bound]
    body_bound = substitute(main.body, {p: Constant(bound[p.name_hint])
                                        for p in main.params if p.name_hint in bound})
    fn = Function(tuple(free), body_bound, main.ret_type, main.type_params, main.attrs,
                  span=main.span)
    module = module.with_functions({**module.functions, "main": fn})
    inputs: list[Any] = [rng.standard_normal((1, c, h, w)).astype("float32")]
    if epilogue == "residual":
        inputs.append(rng.standard_normal((1, o, oh, ow)).astype("float32"))
    return Program(module, tuple(inputs))
