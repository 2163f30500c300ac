"""The real models the ``onnx`` package ships (``onnx/backend/test/data/light``) import,
type-check and match their expected outputs on the oracle. Three small ones run here; all
nine run in ``bench/onnx_node_tests.py --light``. The shipped expected outputs come from
constant weight fills (they are uniform), so the models are also run with random weights
against onnxruntime."""

from __future__ import annotations

import pytest

pytest.importorskip("onnx", reason="onnx is not installed (extra `onnx`)")

from frontends.onnx.light_models import NAMES, load, run, run_randomized  # noqa: E402


@pytest.mark.parametrize("name", ["squeezenet", "shufflenet", "inception_v1"])
def test_light_model_matches_its_expected_output(name):
    result = run(name)
    assert result["nodes"] > 50


def test_every_light_model_is_shipped_with_its_expected_output():
    for name in NAMES:
        model, inputs, outputs = load(name)
        assert len(inputs) == 1 and len(outputs) == len(model.graph.output)


@pytest.mark.parametrize("name", ["squeezenet", "resnet50"])
def test_light_model_with_random_weights_matches_onnxruntime(name):
    pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    result = run_randomized(name)
    assert result["output_spread"] > 1e-3   # not a constant output: a sharp comparison
