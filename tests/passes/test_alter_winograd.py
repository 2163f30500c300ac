"""AlterOpLayout's Winograd rule (``passes/alter_winograd.py``): which convolutions it
rewrites (ResNet-18's 3×3 layers by their output size; small, strided, dilated, grouped,
float64 convolutions and those with free weights stay direct), the weight transform folded by
FoldConstant, and differential equivalence of ``-O3`` with the oracle on programs the kit
draws (``conformance.strategies.nn_transform.winograd.winograd_eligible_program``), within
float32 tolerance (the transforms round differently from a direct sum)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings

import passes
from conformance.strategies.nn_transform.winograd import winograd_eligible_program
from interpreter import evaluate
from passes.alter_op_layout import alter_op_layout_pass
from passes.alter_winograd import WinogradPolicy, winograd_tile
from semantics import parse
from semantics.expr import Call, Constant, Op
from semantics.visitor import post_order
from typechecker import infer

WINOGRAD = "nn.contrib_conv2d_winograd_without_weight_transform"
WEIGHT_TRANSFORM = "nn.contrib_conv2d_winograd_weight_transform"


def calls(mod: Any, name: str) -> list[Call]:
    return [n for n in post_order(mod["main"]) if type(n) is Call and type(n.op) is Op
            and n.op.name == name]


@pytest.mark.parametrize("shape, tile", [
    ((1, 64, 64, 56, 56), 4), ((1, 128, 128, 28, 28), 4), ((1, 256, 256, 14, 14), 2),
    ((1, 512, 512, 7, 7), 2),                     # ResNet-18's 3x3 stride-1 layers
    ((1, 32, 32, 9, 11), 0),                      # few channels: the transforms dominate
    ((1, 64, 64, 6, 6), 0),                       # below 7 px: direct
    ((1, 512, 512, 27, 27), 2),                   # below 28 px: the small tile
])
def test_the_tile_follows_the_output_size_and_the_cost(shape, tile):
    assert winograd_tile(*shape) == tile


def test_a_disabled_policy_keeps_every_convolution_direct():
    assert winograd_tile(1, 64, 64, 56, 56, WinogradPolicy(enabled=False)) == 0


def test_weights_streamed_from_memory_count_against_the_transformed_form():
    # a large weight over few tiles: the transformed weight (4x the kernel) costs more
    roomy, tight = WinogradPolicy(l2_bytes=1 << 40), WinogradPolicy(l2_bytes=1 << 10)
    assert winograd_tile(1, 512, 512, 28, 28, roomy) == 4
    assert winograd_tile(1, 512, 512, 28, 28, tight) in (0, 4)
    assert winograd_tile(1, 2048, 2048, 28, 28, tight) <= winograd_tile(1, 2048, 2048, 28, 28,
                                                                        roomy)


def _conv_program(extra: str = "", dtype: str = "float32", c: int = 64) -> tuple[Any, dict]:
    text = (f"def @main(%x: Tensor[(1, {c}, 28, 28), {dtype}], "
            f"%w: Tensor[(64, {c // (2 if 'groups' in extra else 1)}, 3, 3), {dtype}]) {{\n"
            f"  nn.relu(nn.conv2d(%x, %w, padding=[1, 1]{extra}))\n}}\n")
    rng = np.random.default_rng(0)
    w = rng.standard_normal([int(d) for d in parse(text)["main"].params[1]
                             .type_annotation.shape]).astype(dtype)
    return parse(text), {"w": w}


def test_a_bound_weight_becomes_a_folded_winograd_weight():
    mod, params = _conv_program()
    bound: Any = passes.bind_params(mod, params)
    out = passes.optimize(bound, 3)
    (wino,) = calls(out, WINOGRAD)
    assert wino.attrs["tile_size"] == 4 and wino.attrs["data_layout"] == "NCHW16c"
    assert type(wino.args[1]) is Constant and wino.args[1].data.shape == (6, 6, 64, 64)
    assert not calls(out, WEIGHT_TRANSFORM) and not calls(out, "nn.conv2d")
    x = np.random.default_rng(1).standard_normal((1, 64, 28, 28)).astype("float32")
    want = evaluate(mod, x, params["w"])
    got = evaluate(out, x)
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


@pytest.mark.parametrize("extra, dtype", [
    (", strides=[2, 2]", "float32"), (", dilation=[2, 2], padding=[2, 2]", "float32"),
    (", groups=2", "float32"), ("", "float64"),
])
def test_ineligible_convolutions_stay_direct(extra, dtype):
    mod, params = _conv_program(extra.replace(", padding=[2, 2]", ""), dtype)
    bound: Any = passes.bind_params(mod, params)
    out = passes.optimize(bound, 3)
    assert not calls(out, WINOGRAD) and calls(out, "nn.conv2d")


def test_a_free_weight_stays_direct():
    mod, _ = _conv_program()
    out = passes.optimize(mod, 3)
    assert not calls(out, WINOGRAD) and calls(out, "nn.conv2d")


def test_the_pass_takes_the_policy_as_an_argument():
    mod, params = _conv_program()
    bound: Any = passes.bind_params(mod, params)
    assert calls(alter_op_layout_pass(8)(bound), WINOGRAD)
    assert not calls(alter_op_layout_pass(8, WinogradPolicy(enabled=False))(bound), WINOGRAD)
    assert not calls(passes.alter_op_layout(bound, layout="NHWC"), WINOGRAD)


def _close(got: object, want: object) -> bool:
    g, w = np.asarray(got), np.asarray(want)
    scale = max(1.0, float(np.abs(w).max()))
    return g.shape == w.shape and g.dtype == w.dtype and bool(
        np.allclose(g, w, rtol=2e-4, atol=2e-4 * scale))


@settings(max_examples=25, deadline=None)
@given(program=winograd_eligible_program())
def test_o3_with_winograd_agrees_with_the_oracle(program):
    module, inputs = program
    (conv,) = calls(infer(module), "nn.conv2d")
    data_t: Any = conv.args[0].checked_type
    out_t: Any = conv.checked_type
    _, c, _, _ = data_t.shape
    _, o, oh, ow = out_t.shape
    out = passes.optimize(module, 3)
    expected = winograd_tile(1, c, o, oh, ow)
    wino = calls(out, WINOGRAD)
    assert [w.attrs["tile_size"] for w in wino] == ([expected] if expected else [])
    assert len(wino) + len(calls(out, "nn.conv2d")) == 1
    assert _close(evaluate(out, *inputs), evaluate(module, *inputs))
