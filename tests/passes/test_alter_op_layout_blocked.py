"""AlterOpLayout to TVM's blocked ``NCHW{c}c``: the registered pass, block sizes per target,
transforms elided between consecutive blocked convolutions, bound weights pre-transformed,
convolutions the block does not divide left alone, and differential equivalence with the
oracle on random small CNNs (float tolerance).

The registered pass blocks by ``DEFAULT_BLOCK`` (16) on every machine; a build passes its
target's block (``alter_op_layout_pass``).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import passes
from conformance import assert_equivalent
from conformance.strategies.programgen.config import Program
from interpreter import evaluate
from passes.alter_op_layout import BLOCKS, DEFAULT_BLOCK, alter_op_layout_pass
from passes.manager import passes_at
from semantics import IRModule, parse, pretty, types_equal
from semantics.expr import Call, Constant, Op, Var
from semantics.visitor import post_order
from typechecker import infer


def calls(mod: IRModule, name: str) -> list[Call]:
    return [n for n in post_order(mod["main"]) if type(n) is Call and type(n.op) is Op
            and n.op.name == name]


def inputs_for(mod: IRModule, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal([int(d) for d in p.type_annotation.shape])
                 .astype(p.type_annotation.dtype) for p in mod["main"].params)


def assert_same_meaning(before: Any, after: Any, inputs: tuple[Any, ...], dtype: str) -> None:
    t_before = infer(before)["main"].checked_type
    t_after = infer(after)["main"].checked_type
    assert types_equal(t_before, t_after), f"{pretty(t_before)} != {pretty(t_after)}"
    want, got = evaluate(before, *inputs), evaluate(after, *inputs)
    wants = want if isinstance(want, tuple) else (want,)
    gots = got if isinstance(got, tuple) else (got,)
    rtol = 2e-4 if dtype == "float32" else 1e-9
    for g, w in zip(gots, wants, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        scale = max(1.0, float(np.max(np.abs(w))) if w.size else 1.0)
        assert np.allclose(g, w, rtol=rtol, atol=rtol * scale), pretty(after)


def round_trips(mod: IRModule) -> int:
    """layout_transform(layout_transform(y, A, B), B, A) pairs."""
    return sum(1 for t in calls(mod, "layout_transform") if type(t.args[0]) is Call
               and type(t.args[0].op) is Op and t.args[0].op.name == "layout_transform"
               and t.args[0].attrs["src_layout"] == t.attrs["dst_layout"]
               and t.args[0].attrs["dst_layout"] == t.attrs["src_layout"])


def fed_by_transforms_of_computed_values(mod: IRModule) -> int:
    """Blocked convs whose data is a layout_transform of something other than a parameter."""
    return sum(1 for c in calls(mod, "nn.conv2d") if type(c.args[0]) is Call
               and c.args[0].op.name == "layout_transform" and type(c.args[0].args[0]) is not Var)


CHAIN = """
def @main(%x: Tensor[(1, 4, 5, 5), float32], %w1: Tensor[(8, 4, 3, 3), float32],
          %w2: Tensor[(8, 8, 1, 1), float32], %w3: Tensor[(4, 8, 3, 3), float32]) {
  %0 = nn.relu(nn.conv2d(%x, %w1, padding=[1, 1]));
  %1 = add(nn.conv2d(%0, %w2), %0);
  (nn.conv2d(sigmoid(%1), %w3), nn.max_pool2d(%0, pool_size=[2, 2]))
}
"""


# --- block sizes ---------------------------------------------------------------------------------

@pytest.mark.parametrize("block", BLOCKS)
def test_the_pass_takes_its_block_as_an_argument(block):
    mod = parse("""
    def @main(%x: Tensor[(1, 16, 4, 4), float32], %a: Tensor[(16, 16, 3, 3), float32]) {
      nn.conv2d(%x, %a, padding=[1, 1])
    }""")
    out = alter_op_layout_pass(block)(mod)
    assert [c.attrs["data_layout"] for c in calls(out, "nn.conv2d")] == [f"NCHW{block}c"]
    assert alter_op_layout_pass(block).name == "AlterOpLayout"


@pytest.mark.parametrize("block", [0, 3, 32, True])
def test_a_block_no_target_has_is_refused(block):
    with pytest.raises(ValueError, match="block"):
        alter_op_layout_pass(block)


def test_the_pass_never_reads_the_environment(monkeypatch):
    # $RELAY_TARGET used to choose the block; a pass now sees only its arguments.
    mod = parse("""
    def @main(%x: Tensor[(1, 16, 4, 4), float32], %a: Tensor[(16, 16, 3, 3), float32]) {
      nn.conv2d(%x, %a, padding=[1, 1])
    }""")
    for value in ("core-avx2", "sse"):
        monkeypatch.setenv("RELAY_TARGET", value)
        out = passes.optimize(mod, 3)
        assert [c.attrs["data_layout"] for c in calls(out, "nn.conv2d")] == [
            f"NCHW{DEFAULT_BLOCK}c"]


# --- examples ------------------------------------------------------------------------------------

def test_blocked_convs_elide_transforms_between_them():
    mod = parse(CHAIN)
    out = passes.alter_op_layout(mod, block=4)
    convs = calls(out, "nn.conv2d")
    assert len(convs) == 3
    assert all(c.attrs["data_layout"] == "NCHW4c" and c.attrs["kernel_layout"] == "OIHW4i4o"
               for c in convs)
    assert fed_by_transforms_of_computed_values(out) == 0 and round_trips(out) == 0
    kinds = sorted((t.attrs["src_layout"], t.attrs["dst_layout"])
                   for t in calls(out, "layout_transform"))
    # in: %x and three weights; out: the result conv and the (blocked) pool's result
    assert kinds == [("NCHW", "NCHW4c")] + [("NCHW4c", "NCHW")] * 2 + [("OIHW", "OIHW4i4o")] * 3
    assert_same_meaning(mod, out, inputs_for(mod, 1), "float32")
    assert passes.alter_op_layout(mod, layout="NCHW4c").functions.keys() == out.functions.keys()


def test_pools_between_convs_run_blocked():
    mod = parse("""
    def @main(%x: Tensor[(1, 4, 8, 8), float32], %w1: Tensor[(8, 4, 3, 3), float32],
              %w2: Tensor[(8, 8, 1, 1), float32]) {
      %0 = nn.max_pool2d(nn.relu(nn.conv2d(%x, %w1, padding=[1, 1])), pool_size=[3, 3],
                         strides=[2, 2], padding=[1, 1]);
      %1 = nn.avg_pool2d(nn.conv2d(%0, %w2), pool_size=[2, 2], strides=[2, 2]);
      (%1, nn.global_avg_pool2d(%1))
    }""")
    out = passes.alter_op_layout(mod, block=4)
    pools = [c for name in ("nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d")
             for c in calls(out, name)]
    assert len(pools) == 3 and all(p.attrs["layout"] == "NCHW4c" for p in pools)
    assert fed_by_transforms_of_computed_values(out) == 0 and round_trips(out) == 0
    kinds = sorted((t.attrs["src_layout"], t.attrs["dst_layout"])
                   for t in calls(out, "layout_transform"))
    # in: %x and two weights; out: the two results
    assert kinds == [("NCHW", "NCHW4c")] + [("NCHW4c", "NCHW")] * 2 + [("OIHW", "OIHW4i4o")] * 2
    assert_same_meaning(mod, out, inputs_for(mod, 2), "float32")


def test_a_pool_in_another_layout_than_its_input_stays():
    mod = parse("""
    def @main(%x: Tensor[(1, 4, 4, 4), float32], %w: Tensor[(4, 4, 1, 1), float32]) {
      nn.max_pool2d(nn.conv2d(%x, %w), pool_size=[2, 2], layout="NCHW", out_layout="NHWC")
    }""")
    out = passes.alter_op_layout(mod, block=4)
    (pool,) = calls(out, "nn.max_pool2d")
    assert pool.attrs["layout"] == "NCHW" and pool.attrs["out_layout"] == "NHWC"
    assert_same_meaning(mod, out, inputs_for(mod, 3), "float32")


def test_bound_weights_are_pretransformed_at_compile_time():
    mod = parse(CHAIN)
    inputs = inputs_for(mod, 2)
    bound = passes.bind_params(mod, {f"w{i}": inputs[i] for i in (1, 2, 3)})
    out = passes.alter_op_layout(bound, block=4)
    weights = [c.args[1] for c in calls(out, "nn.conv2d")]
    assert all(type(w) is Constant and w.data.ndim == 6 for w in weights)
    assert weights[0].data.shape == (2, 1, 3, 3, 4, 4)
    assert len(calls(out, "layout_transform")) == 3  # only the data: in once, out twice
    assert_same_meaning(bound, out, inputs[:1], "float32")


def test_convs_the_block_does_not_divide_get_blocked_variants():
    mod = parse("""
    def @main(%x: Tensor[(1, 3, 4, 4), float32], %a: Tensor[(8, 3, 3, 3), float32],
              %b: Tensor[(8, 1, 3, 3), float32], %c: Tensor[(8, 8, 1, 1), float32],
              %d: Tensor[(6, 8, 1, 1), float32]) {
      %0 = nn.relu(nn.conv2d(%x, %a, padding=[1, 1]));
      %1 = nn.conv2d(%0, %b, padding=[1, 1], groups=8);
      nn.conv2d(nn.conv2d(%1, %c), %d)
    }""")
    out = passes.alter_op_layout(mod, block=4)
    layouts = [(c.attrs.get("data_layout", "NCHW"), c.attrs.get("kernel_layout", "OIHW"),
                c.attrs.get("out_layout", "") or c.attrs.get("data_layout", "NCHW"))
               for c in calls(out, "nn.conv2d")]
    # 3 input channels: read unblocked, written blocked; depthwise (1 input channel per
    # group): blocked with one input channel a kernel block; ok; 6 output channels: NCHW
    assert layouts == [("NCHW", "OIHW4o", "NCHW4c"), ("NCHW4c", "OIHW1i4o", "NCHW4c"),
                       ("NCHW4c", "OIHW4i4o", "NCHW4c"), ("NCHW", "OIHW", "NCHW")]
    # no transform between the first three convolutions: one in (to NCHW, from the third's
    # output)
    moves = [c for c in calls(out, "layout_transform") if c.attrs["src_layout"][0] == "N"]
    assert len(moves) == 1   # (the other transforms re-lay out the free weights)
    assert_same_meaning(mod, out, inputs_for(mod, 3), "float32")
    assert passes.alter_op_layout(mod, block=16) is mod


def test_blocked_depthwise_when_the_block_divides_every_count():
    mod = parse("""
    def @main(%x: Tensor[(1, 4, 4, 4), float32], %w: Tensor[(8, 2, 3, 3), float32]) {
      nn.conv2d(%x, %w, padding=[1, 1], groups=2)
    }""")
    out = passes.alter_op_layout(mod, block=2)
    (conv,) = calls(out, "nn.conv2d")
    assert conv.attrs["data_layout"] == "NCHW2c" and conv.attrs["groups"] == 2
    assert_same_meaning(mod, out, inputs_for(mod, 4), "float32")


def test_per_channel_and_scalar_constants_follow_into_the_blocked_layout():
    mod = parse("""
    def @main(%x: Tensor[(1, 4, 3, 3), float32], %a: Tensor[(8, 4, 1, 1), float32],
              %b: Tensor[(4, 8, 1, 1), float32]) {
      %0 = add(nn.conv2d(%x, %a), meta[relay.Constant][0]);
      nn.conv2d(nn.relu(multiply(%0, 0.5f)), %b)
    }
    #[metadata]
    {"relay.Constant": [{"dtype": "float32", "shape": [8, 1, 1],
     "data": "AACAPwAAAEAAAEBAAACAQAAAoEAAAMBAAADgQAAAAEE="}]}""")
    out = passes.alter_op_layout(mod, block=4)
    assert fed_by_transforms_of_computed_values(out) == 0
    shapes = sorted(n.data.shape for n in post_order(out["main"]) if type(n) is Constant)
    assert shapes == [(1, 1, 1, 1, 1), (1, 2, 1, 1, 4)]
    assert_same_meaning(mod, out, inputs_for(mod, 5), "float32")


def test_idempotent_and_reversible():
    mod = parse(CHAIN)
    once = passes.alter_op_layout(mod, block=4)
    assert passes.alter_op_layout(once, block=4) is once
    back = passes.alter_op_layout(once, layout="NCHW")
    assert all(c.attrs.get("data_layout", "NCHW") == "NCHW" for c in calls(back, "nn.conv2d"))
    assert_same_meaning(mod, back, inputs_for(mod, 6), "float32")
    with pytest.raises(ValueError, match="not both"):
        passes.alter_op_layout(mod, layout="NHWC", block=4)


def test_registered_pass_and_optimize_O3_block_by_the_target():
    mod = parse("""
    def @main(%x: Tensor[(1, 16, 4, 4), float32], %a: Tensor[(32, 16, 3, 3), float32],
              %b: Tensor[(16, 32, 1, 1), float32]) {
      nn.conv2d(nn.relu(nn.conv2d(%x, %a, padding=[1, 1])), %b)
    }""")
    assert DEFAULT_BLOCK == 16
    for out in (passes.get_pass("alter_op_layout")(mod), passes.alter_op_layout(mod),
                passes.optimize(mod, 3)):
        convs = calls(out, "nn.conv2d")
        assert [c.attrs["data_layout"] for c in convs] == ["NCHW16c", "NCHW16c"]
        assert fed_by_transforms_of_computed_values(out) == 0
        assert_same_meaning(mod, out, inputs_for(mod, 7), "float32")
    assert "AlterOpLayout" not in [p.name for p in passes_at(2)]


def test_optimize_O3_pretransforms_bound_weights_and_is_stable():
    mod = parse("""
    def @main(%x: Tensor[(1, 16, 4, 4), float32], %a: Tensor[(16, 16, 3, 3), float32],
              %s: Tensor[(16, 1, 1), float32], %b: Tensor[(16, 16, 1, 1), float32]) {
      %0 = multiply(nn.conv2d(%x, %a, padding=[1, 1]), %s);
      nn.conv2d(nn.relu(%0), %b)
    }""")
    inputs = inputs_for(mod, 8)
    bound = passes.bind_params(mod, {n: inputs[i] for i, n in enumerate("xasb") if i})
    out = passes.optimize(bound, 3)
    convs = calls(out, "nn.conv2d")
    assert [c.attrs["data_layout"] for c in convs] == ["NCHW16c", "NCHW16c"]
    assert all(type(c.args[1]) is Constant and c.args[1].data.ndim == 6 for c in convs)
    assert_same_meaning(bound, out, inputs[:1], "float32")
    again = passes.optimize(out, 3)  # FoldScaleAxis/CombineParallelConv2D skip blocked convs
    assert_same_meaning(bound, again, inputs[:1], "float32")


# --- random small CNNs ---------------------------------------------------------------------------

@st.composite
def blocked_cnns(draw: Any) -> dict[str, Any]:
    """1-3 convolutions in a chain with channel counts from {2, 3, 4, 6, 8} (some divisible by
    the block, some not), maybe grouped, with constant biases, residual adds and elementwise
    operators between, maybe pools between them and at the end; weights maybe bound."""
    dtype = draw(st.sampled_from(("float32", "float64")))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    counts = st.sampled_from((2, 3, 4, 6, 8))
    c = draw(counts)
    params = [f"%x: Tensor[(1, {c}, 4, 4), {dtype}]"]
    values = {"x": rng.standard_normal((1, c, 4, 4)).astype(dtype)}
    expr, consts = "%x", []
    for i in range(draw(st.integers(1, 3))):
        o = draw(counts)
        groups = 2 if c % 2 == 0 and o % 2 == 0 and draw(st.booleans()) else 1
        k = draw(st.sampled_from((1, 3)))
        shape = (o, c // groups, k, k)
        params.append(f"%w{i}: Tensor[{shape}, {dtype}]")
        values[f"w{i}"] = rng.standard_normal(shape).astype(dtype)
        conv = f"nn.conv2d({expr}, %w{i}, padding=[{k // 2}, {k // 2}], groups={groups})"
        if o == c and draw(st.booleans()):
            conv = f"add({conv}, {expr})"  # residual
        if draw(st.booleans()):
            bshape = draw(st.sampled_from(((o, 1, 1), (1,), (o, 4, 4))))
            params.append(f"%b{i}: Tensor[{bshape}, {dtype}]")
            values[f"b{i}"] = rng.standard_normal(bshape).astype(dtype)
            consts.append(f"b{i}")
            conv = f"{draw(st.sampled_from(('add', 'multiply')))}({conv}, %b{i})"
        act = draw(st.sampled_from(("", "nn.relu", "tanh")))
        expr = f"{act}({conv})" if act else conv
        if draw(st.integers(0, 3)) == 0:  # a stride-1 pool between convs keeps 4 x 4
            expr = draw(st.sampled_from((
                f"nn.max_pool2d({expr}, pool_size=[3, 3], padding=[1, 1])",
                f"nn.avg_pool2d({expr}, pool_size=[2, 2], padding=[1, 1, 0, 0])")))
        c = o
    if draw(st.booleans()):
        expr = draw(st.sampled_from((f"nn.max_pool2d({expr}, pool_size=[2, 2])",
                                     f"nn.global_avg_pool2d({expr})")))
    mod = parse(f"def @main({', '.join(params)}) {{ {expr} }}")
    if draw(st.booleans()):
        consts += [p.name_hint for p in mod["main"].params if p.name_hint.startswith("w")]
    mod = passes.bind_params(mod, {k: values[k] for k in consts})
    inputs = tuple(values[p.name_hint] for p in mod["main"].params)
    return dict(module=mod, inputs=inputs, dtype=dtype)


@settings(max_examples=40, deadline=None)
@given(case=blocked_cnns(), block=st.sampled_from((2, 4)))
def test_blocked_alter_preserves_meaning_of_random_cnns(case, block):
    mod = case["module"]
    out = passes.alter_op_layout(mod, block=block)
    assert_same_meaning(mod, out, case["inputs"], case["dtype"])
    assert round_trips(out) == 0
    for conv in calls(out, "nn.conv2d"):
        layout = conv.attrs.get("data_layout", "NCHW")
        assert layout in ("NCHW", f"NCHW{block}c")


@pytest.mark.parametrize("block", [2, 4])
def test_blocked_alter_agrees_with_the_oracle_through_the_harness(block):
    strategy = blocked_cnns().map(lambda c: Program(c["module"], c["inputs"]))
    assert_equivalent(functools.partial(passes.alter_op_layout, block=block),
                      strategy=strategy, max_examples=20, name=f"AlterOpLayout(NCHW{block}c)")
