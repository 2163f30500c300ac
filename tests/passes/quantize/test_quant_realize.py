"""realize: the integer program agrees with the simulated one; it stays in integers; the
oracle and the TVM backend compute the same realized program."""

from __future__ import annotations

import numpy as np
import pytest
import qnets
from hypothesis import given, settings
from hypothesis import strategies as st

from interpreter import evaluate
from passes import bind_params, fold_constant
from passes.quantize import QConfig, annotate, calibrate, quantize, realize
from passes.quantize.simq import SIMQ
from semantics.expr import Call, Op
from semantics.visitor import post_order
from typechecker import check, infer

BITS = st.sampled_from([(8, 32), (8, 16), (16, 32)])
ROUNDING = st.sampled_from(["round", "floor", "ceil"])


def _pipeline(mod, params, config, data):
    simulated = calibrate(annotate(mod, params, config), config, data)
    realized = fold_constant(realize(simulated, config))
    check(realized)
    return simulated, realized


@settings(max_examples=8)
@given(seed=st.integers(0, 2 ** 16), hidden=st.sampled_from([2, 4, 6]), bits=BITS,
       rounding=ROUNDING, pool=st.sampled_from(["max", "avg"]), residual=st.booleans())
def test_power_of_two_scales_realize_exactly(seed, hidden, bits, rounding, pool, residual):
    mod, params = qnets.conv_net(hidden=hidden, seed=seed, pool=pool, residual=residual)
    config = QConfig(nbit_input=bits[0], nbit_weight=bits[0], nbit_activation=bits[1],
                     rounding=rounding, skip_conv_layers=())
    data = qnets.inputs(2, seed=seed)
    simulated, realized = _pipeline(mod, params, config, data)
    # the sweep guarantees no accumulator overflow on its dataset; 8/32 has room for others
    for x in data + (qnets.inputs(2, seed=seed + 1) if bits == (8, 32) else []):
        s, r = evaluate(simulated, x), evaluate(realized, x)
        # 8 bits: identical. 16 bits: products exceed 2^24, so the float32 simulation is
        # inexact and a value on a rounding boundary (every integer, for floor and ceil) may
        # move by one 16-bit step, a relative 2^-15 of the range.
        tol = 0.0 if bits[0] == 8 else 2.0 ** -13 * max(1.0, float(np.abs(s).max()))
        assert np.abs(r - s).max() <= tol


@settings(max_examples=4)
@given(seed=st.integers(0, 2 ** 16), calibrator=st.sampled_from(["kl", "mse"]),
       pool=st.sampled_from(["max", "avg"]))
def test_other_scales_realize_within_the_quantization_error(seed, calibrator, pool):
    """Fixed-point requantization: the realized program differs from the simulated one by
    at most 0.05 of the quantization error (the simulated program's distance to float), and
    its relative error is within 0.05 of the simulated one's. (Biases take their
    accumulator's scale, so adding them needs no rounding; an add of two values of unrelated
    scales would round once.)"""
    mod, params = qnets.conv_net(hidden=4, seed=seed, pool=pool)
    config = QConfig(calibrate=calibrator, skip_conv_layers=())
    simulated, realized = _pipeline(mod, params, config, qnets.inputs(2, seed=seed))
    reference = bind_params(mod, params)
    xs = qnets.inputs(4, seed=seed + 1)
    f = np.concatenate([evaluate(reference, x).ravel() for x in xs])
    s = np.concatenate([evaluate(simulated, x).ravel() for x in xs])
    r = np.concatenate([evaluate(realized, x).ravel() for x in xs])

    def rel(a: np.ndarray) -> float:
        return float(np.linalg.norm(a - f) / np.linalg.norm(f))

    assert abs(rel(r) - rel(s)) <= 0.05
    assert np.linalg.norm(r - s) <= 0.05 * np.linalg.norm(s - f)


def test_power_of_two_program_stays_in_integers() -> None:
    mod, params = qnets.conv_net(pool="max")
    config = QConfig(skip_conv_layers=())
    realized = infer(quantize(mod, params, config, qnets.inputs(2)))
    calls = [n for n in post_order(realized["main"]) if isinstance(n, Call)]
    names = [c.op.name for c in calls if isinstance(c.op, Op)]
    assert SIMQ not in names
    floats = [c for c in calls if c.checked_type.dtype.startswith("float")]
    # the input quantization (divide, round, clip) and the one dequantize (cast, multiply)
    assert sorted(c.op.name for c in floats) == ["cast", "clip", "divide", "multiply", "round"]
    body = realized["main"].body
    assert body.op.name == "multiply" and body.args[0].op.name == "cast"
    for c in calls:
        if c.op.name in ("nn.conv2d", "nn.dense"):
            assert [a.checked_type.dtype for a in c.args] == ["int8", "int8"]
            assert c.checked_type.dtype == "int32"


def test_int16_accumulators_are_real() -> None:
    mod, params = qnets.conv_net()
    realized = infer(quantize(mod, params, QConfig(nbit_activation=16, skip_conv_layers=()),
                              qnets.inputs(2)))
    accs = {n.checked_type.dtype for n in post_order(realized["main"])
            if isinstance(n, Call) and isinstance(n.op, Op) and n.op.name in
            ("nn.conv2d", "nn.dense")}
    assert accs == {"int16"}


def test_skipped_conv_stays_float_and_the_rest_is_integer() -> None:
    mod, params = qnets.conv_net()
    realized = infer(quantize(mod, params, QConfig(), qnets.inputs(2)))
    convs = [n for n in post_order(realized["main"])
             if isinstance(n, Call) and isinstance(n.op, Op) and n.op.name == "nn.conv2d"]
    assert [c.checked_type.dtype for c in convs] == ["float32", "int32"]


@settings(max_examples=2, derandomize=True)
@given(calibrator=st.sampled_from(["global_scale", "kl"]), seed=st.sampled_from([0, 1]))
def test_oracle_and_tvm_agree_on_the_realized_program(calibrator, seed):
    """Shifts (global_scale) or fixed-point multiplies (kl) on one small CNN. The shift
    amounts and multipliers are constants of the kernels, so every new network compiles
    its 6 kernels (seconds each); the seeds come from a small set so that a warm kernel
    cache makes the test fast (cold: about 20 s on a quiet machine, 80 s on a loaded one)."""
    from backends.tvm import build

    mod, params = qnets.conv_net(channels=2, size=4, hidden=4, seed=seed)
    config = QConfig(calibrate=calibrator, skip_conv_layers=())
    realized = quantize(mod, params, config, qnets.inputs(2, channels=2, size=4, seed=seed))
    exe = build(realized)
    for x in qnets.inputs(2, channels=2, size=4, seed=seed + 5):
        np.testing.assert_array_equal(exe(x), evaluate(realized, x))


@pytest.mark.parametrize("calibrator", ["global_scale", "kl", "mse"])
@pytest.mark.parametrize("seed", [0, 3])
def test_downsampling_shortcut_realizes_the_simulated_sum(calibrator, seed):
    """A ResNet block whose shortcut is a stride-2 1x1 convolution: its add joins two values
    of unrelated scales (mse/kl). Realize requantizes the exact sum, rounding once as the
    simulation does, so the programs agree up to float32 (before [R-Sum]: 7.7e-3 apart
    under mse, a quarter of the quantization error)."""
    mod, params = qnets.downsample_net(seed=seed)
    config = QConfig(calibrate=calibrator, skip_conv_layers=())
    simulated, realized = _pipeline(mod, params, config, qnets.inputs(2, seed=seed))
    for x in qnets.inputs(3, seed=seed + 1):
        s, r = evaluate(simulated, x), evaluate(realized, x)
        assert np.abs(r - s).max() <= 2.0 ** -20 * max(1.0, float(np.abs(s).max()))


def test_the_shift_of_a_relu_has_no_sign_term() -> None:
    """Half away from zero needs ``x >> 31`` only for negative values: the requantize of a
    ``relu`` (never negative) is ``(x + 2^(k-1)) >> k`` alone, two operations fewer in its
    producer's epilogue (the values stay those of the simulation:
    ``test_power_of_two_scales_realize_exactly``)."""
    mod, params = qnets.conv_net()
    realized = infer(quantize(mod, params, QConfig(skip_conv_layers=()), qnets.inputs(2)))
    calls = [n for n in post_order(realized["main"]) if isinstance(n, Call)
             and isinstance(n.op, Op)]
    shifts = [c for c in calls if c.op.name == "right_shift"]
    assert not [c for c in shifts if isinstance(c.args[0], Call)
                and c.args[0].op.name == "nn.relu"]
    assert [c for c in shifts if c.args[0].op.name == "add"
            and isinstance(c.args[0].args[0], Call) and c.args[0].args[0].op.name == "nn.relu"]
