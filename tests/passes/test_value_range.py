"""Value ranges of integer tensors and ClampKnownRanges (``passes.value_range``).

* soundness, by Hypothesis: every element the oracle computes lies in the range the analysis
  gives, over random chains of the operators it has rules for (random constants, the dtype
  extremes among the inputs);
* the chain ``realize`` emits after a ``relu`` is in ``[0, 127]``; without the ``relu`` it
  is not known to be;
* the pass reads a kernel's int8 convolution data through ``clip(p, 0, 127)`` exactly where
  the producing kernel's range is inside it, and the program's values do not change.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import typechecker
from backends.tvm.build import prepare
from backends.tvm.target import Target
from interpreter import evaluate
from passes.fuse_ops import is_primitive
from passes.value_range import clamp_known_ranges, value_range
from semantics.expr import Call, Function, Op
from semantics.parser import parse
from semantics.visitor import post_order

AVX2 = Target.for_cpu("haswell")

_LIMITS = {"int8": (-128, 127), "int16": (-32768, 32767), "int32": (-2 ** 31, 2 ** 31 - 1)}


@st.composite
def _chain(draw: st.DrawFn) -> tuple[str, str, str]:
    """``(module text, input dtype, result dtype)``: a chain of ranged operators on ``%x``
    (integers, or float32 ending in a cast to an integer as realize's first layer does)."""
    dtype = draw(st.sampled_from([*sorted(_LIMITS), "float32"]))
    start = dtype
    expr = "%x"
    for _ in range(draw(st.integers(1, 6))):
        if dtype == "float32":
            op = draw(st.sampled_from(("relu", "clip", "cast", "add", "subtract", "multiply",
                                       "divide", "round", "floor", "ceil", "maximum")))
            c = draw(st.sampled_from((-3.5, -1.0, 0.0, 0.25, 2.0, 300.0)))
            if op == "relu":
                expr = f"nn.relu({expr})"
            elif op == "clip":
                a = draw(st.sampled_from((-200.0, -127.0, 0.0, 1.5)))
                b = a + draw(st.sampled_from((0.0, 3.0, 254.0)))
                expr = f"clip({expr}, a_min={a}f, a_max={b}f)"
            elif op == "cast":
                dtype = draw(st.sampled_from(sorted(_LIMITS)))
                expr = f'cast({expr}, dtype="{dtype}")'
            elif op in ("round", "floor", "ceil"):
                expr = f"{op}({expr})"
            else:
                expr = f"{op}({expr}, {c}f)"
            continue
        lo, hi = _LIMITS[dtype]
        op = draw(st.sampled_from(("relu", "clip", "cast", "add", "subtract", "multiply",
                                   "right_shift", "left_shift", "maximum", "minimum")))
        if op == "relu":
            expr = f"nn.relu({expr})"
        elif op == "clip":
            a = draw(st.integers(lo, hi))
            b = draw(st.integers(a, hi))
            expr = f"clip({expr}, a_min={a}f, a_max={b}f)"
        elif op == "cast":
            dtype = draw(st.sampled_from(sorted(_LIMITS)))
            expr = f'cast({expr}, dtype="{dtype}")'
        else:
            if op in ("right_shift", "left_shift"):
                c = draw(st.integers(-2, 40))
            else:
                c = draw(st.integers(max(lo, -300), min(hi, 300)))
            expr = f"{op}({expr}, {c}{_suffix(dtype)})"
    return (f"def @main(%x: Tensor[(8), {start}]) {{ {expr} }}", start, dtype)


def _suffix(dtype: str) -> str:
    return {"int8": "i8", "int16": "i16", "int32": ""}[dtype]


def _input(start: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if start == "float32":
        x = (rng.standard_normal(8) * rng.choice([1.0, 100.0, 1e6])).astype("float32")
        x[:4] = np.nan, np.inf, -np.inf, -0.0             # the float specials
        return x
    lo, hi = _LIMITS[start]
    x = rng.integers(lo, hi + 1, 8, dtype=np.int64)
    x[:2] = lo, hi                                       # the extremes
    return x.astype(start)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chain=_chain(), seed=st.integers(0, 2 ** 16))
def test_every_value_the_oracle_computes_lies_in_the_range(chain, seed):
    text, start, end = chain
    mod = typechecker.infer(parse(text))
    bounds = value_range(mod["main"].body)
    if bounds is None:
        return
    out = np.asarray(evaluate(text, _input(start, seed)))
    values = out[~np.isnan(out)] if end == "float32" else out       # NaN has no range
    assert (bounds[0] <= values).all() and (values <= bounds[1]).all(), (text, bounds, out)


def test_the_first_layers_quantize_and_a_max_pool_keep_a_byte():
    """The float convolution's realized epilogue (relu, divide by the scale, round, clip,
    cast), then a max pool: in [0, 127] whatever the float values, NaN and ±inf included."""
    text = """def @main(%x: Tensor[(1, 8, 6, 6), float32]) {
      %0 = cast(clip(round(divide(nn.relu(%x), 0.037f)), a_min=-127f, a_max=127f), dtype="int8");
      nn.max_pool2d(%0, pool_size=[3, 3], strides=[2, 2], padding=[1, 1])
    }"""
    mod = typechecker.infer(parse(text))
    assert value_range(mod["main"].body) == (0, 127)
    wide = text.replace("padding=[1, 1]", "padding=[3, 3]")     # a window of padding alone
    assert value_range(typechecker.infer(parse(wide))["main"].body) is None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 16), extreme=st.booleans(), kind=st.sampled_from(("conv", "dense")))
def test_a_product_with_constant_weights_lies_in_the_range(seed, extreme, kind):
    rng = np.random.default_rng(seed)
    if kind == "conv":
        w = rng.integers(-128, 128, (8, 4, 3, 3)).astype("int8")
        text = """def @main(%x: Tensor[(1, 4, 5, 5), int8], %w: Tensor[(8, 4, 3, 3), int8]) {
          nn.conv2d(%x, %w, padding=[1, 1], channels=8, kernel_size=[3, 3], out_dtype="int32")
        }"""
        x = rng.integers(-128, 128, (1, 4, 5, 5)).astype("int8")
    else:
        w = rng.integers(-128, 128, (8, 12)).astype("int8")
        text = """def @main(%x: Tensor[(2, 12), int8], %w: Tensor[(8, 12), int8]) {
          nn.dense(%x, %w, units=8, out_dtype="int32")
        }"""
        x = rng.integers(-128, 128, (2, 12)).astype("int8")
    if extreme:
        x[...] = -128
        w[...] = -128
    import passes

    mod = typechecker.infer(passes.bind_params(parse(text), {"w": w}))
    bounds = value_range(mod["main"].body)
    assert bounds is not None
    out = np.asarray(evaluate(text, x, w))
    assert bounds[0] <= out.min() and out.max() <= bounds[1]


REQUANT = """def @main(%x: Tensor[(1, 16, 6, 6), int8], %w: Tensor[(16, 16, 1, 1), int8],
          %b: Tensor[(16, 1, 1), int32], %w2: Tensor[(16, 16, 3, 3), int8]) {
  %0 = add(nn.conv2d(%x, %w, channels=16, kernel_size=[1, 1], out_dtype="int32"), %b);
  %1 = cast(clip(right_shift(add(RELU(%0), 64), 7), a_min=-127f, a_max=127f), dtype="int8");
  nn.conv2d(%1, %w2, padding=[1, 1], channels=16, kernel_size=[3, 3], out_dtype="int32")
}"""


def _params(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"w": rng.integers(-128, 128, (16, 16, 1, 1)).astype("int8"),
            "b": rng.integers(-5000, 5000, (16, 1, 1)).astype("int32"),
            "w2": rng.integers(-128, 128, (16, 16, 3, 3)).astype("int8")}


def _requant(relu: bool) -> str:
    return REQUANT.replace("RELU(%0)", "nn.relu(%0)" if relu else "%0")


def test_the_realized_requantize_chain_after_relu_is_a_byte():
    import passes

    for relu, want in ((True, (0, 127)), (False, (-127, 127))):
        mod = typechecker.infer(passes.bind_params(parse(_requant(relu)), _params()))
        calls = [n for n in post_order(mod["main"].body)
                 if isinstance(n, Call) and isinstance(n.op, Op) and n.op.name == "cast"]
        assert value_range(calls[0]) == want


def _kernels_reading_clipped_data(mod) -> int:
    count = 0
    for fn in post_order(mod["main"]):
        if isinstance(fn, Function) and is_primitive(fn):
            for c in post_order(fn.body):
                if (isinstance(c, Call) and isinstance(c.op, Op) and c.op.name == "nn.conv2d"
                        and isinstance(c.args[0], Call) and isinstance(c.args[0].op, Op)
                        and c.args[0].op.name == "clip"):
                    count += 1
    return count


def test_the_pass_clips_the_data_of_a_convolution_fed_by_a_byte():
    assert _kernels_reading_clipped_data(prepare(_requant(True), _params(), 3, AVX2)) == 1
    # data that may be negative, or a target with VNNI: nothing to do
    assert _kernels_reading_clipped_data(prepare(_requant(False), _params(), 3, AVX2)) == 0
    vnni = Target.for_cpu("cascadelake")
    assert _kernels_reading_clipped_data(prepare(_requant(True), _params(), 3, vnni)) == 0


def test_the_pass_is_pure_and_idempotent():
    fused = prepare(_requant(True), _params(), 3, Target.for_cpu("haswell").replace(avx2=False))
    assert _kernels_reading_clipped_data(fused) == 0
    once = clamp_known_ranges(typechecker.infer(fused))
    assert _kernels_reading_clipped_data(fused) == 0            # the input is untouched
    assert _kernels_reading_clipped_data(once) == 1
    twice = clamp_known_ranges(typechecker.infer(once))
    assert _kernels_reading_clipped_data(twice) == 1


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 16), relu=st.booleans())
def test_the_clipped_program_has_the_same_values(seed, relu):
    text, params = _requant(relu), _params(seed)
    x = np.random.default_rng(seed + 1).integers(-128, 128, (1, 16, 6, 6)).astype("int8")
    fused = prepare(text, params, 3, AVX2)
    want = evaluate(text, x, params["w"], params["b"], params["w2"])
    assert np.array_equal(evaluate(fused, x), want)


def test_edge_cases_of_the_rules():
    """Cases a random chain rarely meets: a left shift past the bit width gives 0 (not
    ``x << (bits - 1)``), a float product past float32's range rounds to inf."""
    cases = [
        ('def @main(%x: Tensor[(2), int8]) { left_shift(clip(%x, a_min=-1f, a_max=-1f), 8i8) }',
         np.array([-1, 5], "int8")),
        ('def @main(%x: Tensor[(2), float32]) { multiply(clip(%x, a_min=0f, a_max=3e38f), 2f) }',
         np.array([3e38, 1.0], "float32")),
        ('def @main(%x: Tensor[(2), int32]) { left_shift(%x, clip(%x, a_min=30f, a_max=40f)) }',
         np.array([0, 1], "int32")),
    ]
    for text, x in cases:
        bounds = value_range(typechecker.infer(parse(text))["main"].body)
        out = np.asarray(evaluate(text, x))
        if bounds is not None:
            assert bounds[0] <= out.min() and out.max() <= bounds[1], (text, bounds, out)
