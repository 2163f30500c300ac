"""SimplifyInference: ``nn.batch_norm`` and ``nn.dropout`` rewritten to their inference-time
arithmetic — examples (center/scale, axes, let-bound calls, constant statistics folded, a
zero std) and the differential property through the conformance harness."""

from __future__ import annotations

import numpy as np
import pytest
from dl_pass_helpers import assert_same_meaning, float_config, op_names

import passes
from conformance import assert_equivalent
from interpreter import evaluate
from semantics import parse

BN = """
def @main(%x: Tensor[(2, 3, 4, 4), float32], %g: Tensor[(3,), float32],
          %b: Tensor[(3,), float32], %mu: Tensor[(3,), float32], %v: Tensor[(3,), float32]) {
  %0 = nn.batch_norm(%x, %g, %b, %mu, %v, epsilon=0.01f);
  (%0.0, %0.1, %0.2, nn.dropout(%x).0)
}
"""


def _bn_inputs(seed: int = 0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 3, 4, 4)).astype("float32")
    g, b, mu = (rng.standard_normal(3).astype("float32") for _ in range(3))
    v = rng.uniform(0.5, 2, 3).astype("float32")
    return x, g, b, mu, v


def test_simplify_inference_removes_batch_norm_and_dropout():
    mod = parse(BN)
    out = passes.simplify_inference(mod)
    names = op_names(out)
    assert "nn.batch_norm" not in names and "nn.dropout" not in names
    assert names.count("expand_dims") == 4 and "sqrt" in names
    # The statistics and dropout's data pass through as the very same variables.
    fields = out["main"].body.fields
    params = out["main"].params
    assert fields[1] is params[3] and fields[2] is params[4] and fields[3] is params[0]
    assert_same_meaning(mod, out, _bn_inputs(), "float32")


@pytest.mark.parametrize("center, scale", [(True, True), (False, True), (True, False),
                                           (False, False)])
def test_simplify_inference_honours_center_and_scale(center, scale):
    mod = parse(f"""
    def @main(%x: Tensor[(2, 3, 4, 4), float32], %g: Tensor[(3,), float32],
              %b: Tensor[(3,), float32], %mu: Tensor[(3,), float32], %v: Tensor[(3,), float32]) {{
      nn.batch_norm(%x, %g, %b, %mu, %v, center={center}, scale={scale}).0
    }}""")
    out = passes.simplify_inference(mod)
    assert "nn.batch_norm" not in op_names(out)
    assert_same_meaning(mod, out, _bn_inputs(1), "float32")


@pytest.mark.parametrize("axis, shape", [(-1, (2, 5, 3)), (0, (3, 2)), (1, (2, 3)),
                                         (2, (2, 2, 3, 2))])
def test_simplify_inference_on_other_axes(axis, shape):
    mod = parse(f"""
    def @main(%x: Tensor[{shape}, float64], %g: Tensor[(3,), float64],
              %b: Tensor[(3,), float64], %mu: Tensor[(3,), float64], %v: Tensor[(3,), float64]) {{
      nn.batch_norm(%x, %g, %b, %mu, %v, axis={axis}).0
    }}""")
    rng = np.random.default_rng(2)
    inputs = (rng.standard_normal(shape), *(rng.standard_normal(3) for _ in range(3)),
              rng.uniform(0.5, 2, 3))
    out = passes.simplify_inference(mod)
    assert "nn.batch_norm" not in op_names(out)
    assert_same_meaning(mod, out, inputs, "float64")


def test_simplify_inference_sees_through_a_let_bound_call_with_atomic_arguments():
    mod = parse("""
    def @main(%x: Tensor[(1, 2), float32], %g: Tensor[(2,), float32]) {
      let %t = nn.batch_norm(%x, %g, %g, %g, %g);
      let %d = nn.dropout(%x);
      (%t.0, %d.0)
    }""")
    out = passes.dead_code_elimination(passes.simplify_inference(mod))
    assert op_names(out).count("nn.batch_norm") == 0 and "nn.dropout" not in op_names(out)
    rng = np.random.default_rng(3)
    inputs = (rng.standard_normal((1, 2)).astype("float32"),
              rng.uniform(0.5, 2, 2).astype("float32"))
    assert_same_meaning(mod, out, inputs, "float32")


def test_simplify_inference_keeps_a_call_used_as_a_whole():
    mod = parse(BN.replace("(%0.0, %0.1, %0.2, nn.dropout(%x).0)", "(%0, %0.0)"))
    out = passes.simplify_inference(mod)
    assert op_names(out).count("nn.batch_norm") == 1
    assert_same_meaning(mod, out, _bn_inputs(4), "float32")


def test_simplify_inference_then_fold_constant_precomputes_the_statistics():
    mod = passes.bind_params(parse(BN), dict(zip(("g", "b", "mu", "v"), _bn_inputs()[1:],
                                                   strict=True)))
    out = passes.fold_constant(passes.simplify_inference(mod))
    names = op_names(out)
    # Simp-BatchNorm-Scale (every std a finite non-zero constant): x * S + T, one multiply and
    # one add, nothing computed from the statistics at run time.
    assert [names.count(n) for n in ("subtract", "divide", "multiply", "add")] == [0, 0, 1, 1]
    assert "sqrt" not in names
    assert_same_meaning(mod, out, _bn_inputs()[:1], "float32")


def test_simplify_inference_keeps_the_operators_arithmetic_for_a_zero_std():
    """A constant variance with a zero std in some channel: the general form, so the result is
    the oracle's ±inf there (the scale form would give NaN: issue 33)."""
    gamma, beta, mean, var = _bn_inputs()[1:]
    var = var.copy()
    var[0] = 0.0
    mod = passes.bind_params(parse(BN.replace("epsilon=0.01f", "epsilon=0.0f")),
                             dict(zip(("g", "b", "mu", "v"), (gamma, beta, mean, var),
                                      strict=True)))
    out = passes.fold_constant(passes.simplify_inference(mod))
    names = op_names(out)
    assert [names.count(n) for n in ("subtract", "divide", "multiply", "add")] == [1, 1, 1, 1]
    x = _bn_inputs()[0]
    want, got = evaluate(mod, x)[0], evaluate(out, x)[0]
    assert np.isinf(want[:, 0]).all()
    np.testing.assert_allclose(got, want, rtol=1e-6)   # ±inf at the same places, same signs


def test_simplify_inference_preserves_meaning_on_generated_programs():
    for op in ("nn.batch_norm", "nn.dropout"):
        assert_equivalent(passes.simplify_inference, config=float_config(op), max_examples=20,
                          name="SimplifyInference")
