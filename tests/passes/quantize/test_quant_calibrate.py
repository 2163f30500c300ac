"""calibrate: the overflow-aware global_scale sweep, mse, kl, the statistics collector."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest
import qnets

from interpreter import evaluate
from passes import bind_params
from passes.quantize import INPUT, WEIGHT, QConfig, QuantizeError, annotate, calibrate
from passes.quantize.calibrate import collect_site_inputs, simq_sites
from passes.quantize.calibrators import kl_range, mse_range
from passes.quantize.simq import read_simq

# the module (the package's ``calibrate`` attribute is the function)
calibrate_module = importlib.import_module("passes.quantize.calibrate")


def _input_scales(mod) -> list[float]:
    return [read_simq(s).dom_scale for s in simq_sites(mod["main"])
            if read_simq(s).kind == INPUT]


def _accumulators(mod, data) -> float:
    """The largest |integer| realize computes in the accumulator type, on ``data``."""
    fn = mod["main"]
    probe = calibrate_module._Probe({})
    probe.mutate(fn)
    steps = {id(s): read_simq(s).dom_scale for s in simq_sites(fn)}
    accs = calibrate_module._accumulator_scales(fn, steps)
    rows = calibrate_module._run_probe(mod, fn, [probe.results[i] for i, _ in accs], data)
    return max(float(np.abs(v).max()) / s for row in rows for v, (_, s) in zip(row, accs))


def clips(mod, data) -> bool:
    """Whether some input or activation simQ of the simulated program clips on ``data``
    (a power-of-two weight range may clip the largest weight by design, as in TVM)."""
    fn = mod["main"]
    sites = [s for s in simq_sites(fn) if read_simq(s).kind != WEIGHT]
    probe = calibrate_module._Probe({})
    probe.mutate(fn)
    rows = calibrate_module._run_probe(mod, fn, [probe.inputs[id(s)] for s in sites], data)
    for row in rows:
        for site, values in zip(sites, row):
            info = read_simq(site)
            q = np.sign(values / info.dom_scale) * np.floor(np.abs(values / info.dom_scale) + .5)
            if q.max() > info.clip_max or q.min() < info.clip_min:
                return True
    return False


def test_global_scale_without_data_is_the_fixed_scale() -> None:
    mod, params = qnets.conv_net()
    config = QConfig(global_scale=4.0, skip_conv_layers=())
    out = calibrate(annotate(mod, params, config), config, None)
    assert set(_input_scales(out)) == {4.0 / 128}


def test_sweep_doubles_until_nothing_clips() -> None:
    mod, params = qnets.conv_net()
    config = QConfig(skip_conv_layers=())
    data = qnets.inputs(2, scale=20.0)          # inputs far beyond the starting range 8
    annotated = annotate(mod, params, config)
    out = calibrate(annotated, config, data)
    scales = set(_input_scales(out))
    assert len(scales) == 1
    scale = scales.pop() * 128
    assert scale > 8 and math.log2(scale / 8).is_integer()
    assert not clips(out, data)
    half = calibrate(annotated, QConfig(skip_conv_layers=(), global_scale=scale / 2), None)
    assert clips(half, data)


def test_sweep_avoids_int16_accumulator_overflow() -> None:
    mod, params = qnets.conv_net(hidden=16, weight_scale=2.0)
    data = qnets.inputs(2)
    fixed = QConfig(nbit_activation=16, skip_conv_layers=(), global_scale=1.0)
    annotated = annotate(mod, params, fixed)
    at_start = calibrate(annotated, fixed, None)
    assert _accumulators(at_start, data) > 2 ** 15 - 1      # the fixed scale overflows int16
    swept = calibrate(annotated, fixed, data)
    assert _accumulators(swept, data) <= 2 ** 15 - 1
    assert not clips(swept, data)


def test_statistics_take_one_evaluation_per_input(monkeypatch) -> None:
    mod, params = qnets.conv_net()
    config = QConfig(calibrate="kl", skip_conv_layers=())
    annotated = annotate(mod, params, config)
    calls = []

    def counting(*args, **kwargs):
        calls.append(1)
        return evaluate(*args, **kwargs)

    monkeypatch.setattr(calibrate_module, "evaluate", counting)
    data = qnets.inputs(3)
    stats = collect_site_inputs(annotated, data)
    assert len(calls) == 3
    # site 0 is the input of the first conv: the data itself
    first = min(stats)
    assert all(np.array_equal(a, x) for a, x in zip(stats[first], data))
    calls.clear()
    calibrate(annotated, config, data)
    assert len(calls) == 3


def test_kl_and_mse_choose_per_site_ranges() -> None:
    mod, params = qnets.conv_net()
    data = qnets.inputs(3)
    float_mod = bind_params(mod, params)
    for name in ("kl", "mse"):
        config = QConfig(calibrate=name, skip_conv_layers=())
        out = calibrate(annotate(mod, params, config), config, data)
        scales = _input_scales(out)
        assert len(set(scales)) == len(scales)   # one range per site
        x = data[0]
        ref, sim = evaluate(float_mod, x), evaluate(out, x)
        assert np.abs(sim - ref).max() < 0.1 * np.abs(ref).max()


def test_kl_range_properties() -> None:
    rng = np.random.default_rng(0)
    gauss = rng.normal(size=200_000)
    t = kl_range(gauss)
    assert 2.0 < t < np.abs(gauss).max()
    uniform = rng.uniform(-1, 1, size=100_000)
    assert kl_range(uniform) > 0.9
    assert kl_range(np.zeros(10)) == 1.0
    assert kl_range(gauss) == t                   # deterministic
    relu = np.maximum(gauss, 0)
    assert kl_range(relu, sign=False) < np.abs(relu).max()


def test_mse_range_minimizes_the_error() -> None:
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(size=10_000), [60.0]])    # one far outlier
    r = mse_range(x, bits=4)
    assert r < 60.0

    def err(value_range: float) -> float:
        step = value_range / 8
        q = np.clip(np.sign(x / step) * np.floor(np.abs(x / step) + 0.5), -7, 7) * step
        return float(np.mean((q - x) ** 2))

    assert err(r) <= min(err(60.0 * k / 100) for k in range(1, 101)) + 1e-12
    assert mse_range(np.zeros(3), bits=8) == 1.0


def test_dataset_errors() -> None:
    mod, params = qnets.conv_net()
    config = QConfig(calibrate="mse")
    annotated = annotate(mod, params, config)
    with pytest.raises(QuantizeError, match="needs a dataset"):
        calibrate(annotated, config, None)
    with pytest.raises(QuantizeError, match="empty"):
        calibrate(annotated, config, [])
    with pytest.raises(QuantizeError, match="list of arrays"):
        calibrate(annotated, config, np.zeros((1, 3, 8, 8), np.float32))
    with pytest.raises(QuantizeError, match="shape"):
        calibrate(annotated, config, [np.zeros((1, 3, 4, 4), np.float32)])
    unbound = annotate(mod, None, config)
    with pytest.raises(QuantizeError, match="bind the weights"):
        calibrate(unbound, config, qnets.inputs(1))
    with pytest.raises(QuantizeError, match="QConfig"):
        calibrate(annotated, "kl", [])  # type: ignore[arg-type]
