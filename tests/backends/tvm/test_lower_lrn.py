"""The compiled ``nn.lrn`` (local response normalization, the ONNX importer's operator)
against its numpy reference, differentially: random ranks, axes, window sizes and
coefficients, float16/32/64, inputs with NaN, ±inf and -0.0 mixed in; and a whole AlexNet-
style block (conv → relu → LRN → max pool) through the graph executor against the oracle."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends.tvm.kernel.compile import compile_function
from semantics import ops
from semantics.expr import Attrs, Call, Function, Op, Var
from semantics.types import TensorType

LRN = ops.get("nn.lrn")
SPECIAL = (np.nan, np.inf, -np.inf, -0.0, 0.0)


@st.composite
def lrn_calls(draw: st.DrawFn) -> tuple[TensorType, dict, np.ndarray]:
    rank = draw(st.integers(1, 4))                  # the relation needs an axis
    shape = tuple(draw(st.lists(st.integers(0, 6), min_size=rank, max_size=rank)))
    dtype = draw(st.sampled_from(["float32", "float16", "float64"]))
    attrs = {"size": draw(st.integers(1, 7)),
             "axis": draw(st.integers(-rank, rank - 1)),
             "alpha": draw(st.sampled_from([1e-4, 1e-2, 0.5, 2.0])),
             "beta": draw(st.sampled_from([0.75, 0.5, 1.0, 1.5])),
             "bias": draw(st.sampled_from([1.0, 2.0, 0.5, 0.0]))}
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    x = (rng.standard_normal(shape) * draw(st.sampled_from([0.1, 1.0, 30.0]))).astype(dtype)
    if x.size and draw(st.booleans()):
        flat = x.reshape(-1)
        for _ in range(draw(st.integers(1, 3))):
            flat[rng.integers(0, flat.size)] = draw(st.sampled_from(SPECIAL))
    return TensorType(shape, dtype), attrs, x


def primitive(t: TensorType, attrs: dict) -> Function:
    p = Var("p0", t)
    return Function((p,), Call(Op("nn.lrn"), (p,), Attrs(LRN.normalize_attrs(attrs))), None,
                    (), Attrs({"Primitive": 1}))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=lrn_calls())
def test_compiled_lrn_matches_the_reference(case, kernel_cache, close) -> None:
    t, attrs, x = case
    want = LRN.reference(x, **dict(LRN.normalize_attrs(attrs)))
    kernel = compile_function(primitive(t, attrs), (t,), cache=kernel_cache)
    got = kernel(x)
    close(got, want, {"float16": 2e-2, "float32": 1e-5})


def test_alexnet_block_with_lrn_runs_compiled_and_matches_the_oracle(kernel_cache) -> None:
    from backends.tvm import build
    from interpreter import evaluate
    from semantics import parse

    src = """def @main(%x: Tensor[(1, 3, 12, 12), float32], %w: Tensor[(8, 3, 3, 3), float32]) {
      %0 = nn.conv2d(%x, %w, padding=[1, 1], channels=8, kernel_size=[3, 3]);
      %1 = nn.relu(%0);
      %2 = nn.lrn(%1, size=5, alpha=0.0001f, beta=0.75f, bias=1f);
      nn.max_pool2d(%2, pool_size=[3, 3], strides=[2, 2])
    }"""
    mod = parse(src)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 3, 12, 12)).astype(np.float32)
    w = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    exe = build(mod, executor="graph", opt_level=3, cache=kernel_cache)
    assert exe.fallbacks == []          # every fused group, LRN's included, compiled
    np.testing.assert_allclose(exe(x, w), evaluate(mod, x, w), rtol=1e-5, atol=1e-6)
