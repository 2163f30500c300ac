"""The onnx package's light models on the TVM backend (graph executor, -O3): imported weights
bound as constants, the same expected outputs as on the oracle, and — since those come from
constant weight fills — the same output as the oracle with random weights."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx", reason="onnx is not installed (extra `onnx`)")
pytest.importorskip("tvm", reason="apache-tvm is not installed (extra `tvm`)")

from backends.tvm import build  # noqa: E402
from frontends.onnx import from_onnx  # noqa: E402
from frontends.onnx.light_models import RTOL, load, randomized  # noqa: E402
from interpreter import evaluate  # noqa: E402


def _outputs(v: object) -> list[np.ndarray]:
    return list(v) if isinstance(v, tuple) else [v]  # type: ignore[list-item]


@pytest.mark.parametrize("name", ["squeezenet", "shufflenet"])
def test_light_model_on_tvm_matches_its_expected_output(name: str) -> None:
    model, inputs, expected = load(name)
    mod, params = from_onnx(model)
    exe = build(mod, params=params, opt_level=3, executor="graph")
    for got, want in zip(_outputs(exe(*inputs)), expected):
        np.testing.assert_allclose(got, want, rtol=RTOL.get(name, 1e-3), atol=1e-5)


def test_light_model_on_tvm_with_random_weights_matches_the_oracle() -> None:
    model = randomized("squeezenet")
    _, inputs, _ = load("squeezenet")
    mod, params = from_onnx(model)
    want = _outputs(evaluate(mod, *inputs, *params.values()))
    got = _outputs(build(mod, params=params, executor="graph")(*inputs))
    for g, w in zip(got, want):
        scale = max(1.0, float(np.abs(w).max()))
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-5 * scale)
