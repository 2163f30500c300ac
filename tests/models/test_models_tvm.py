"""Every model gives the oracle's result on the TVM backend (graph executor for the vision
models, the VM for the NLP ones — their loops stay recursion)."""

from __future__ import annotations

import numpy as np
import pytest

import models
from interpreter import ConstructorValue, evaluate

pytest.importorskip("tvm", reason="apache-tvm is not installed (extra 'tvm')")

from backends.tvm import build  # noqa: E402


def _same(got: object, want: object) -> None:
    if isinstance(want, ConstructorValue):
        assert isinstance(got, ConstructorValue) and got.name == want.name
        for g, w in zip(got.fields, want.fields):
            _same(g, w)
        return
    assert isinstance(got, np.ndarray) and isinstance(want, np.ndarray)
    assert got.dtype == want.dtype and got.shape == want.shape
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * scale)


@pytest.mark.parametrize("name", [n for n in models.names() if n != "vgg16"])
def test_model_on_tvm_equals_oracle(name: str) -> None:
    mod, params = models.get(name)
    inputs = models.example_inputs(name)
    want = evaluate(mod, *inputs, *params.values())
    exe = build(mod, params=params, opt_level=3,
                executor="graph" if name in models.VISION else "vm")
    _same(exe(*inputs), want)


def test_vgg16_on_tvm_equals_oracle() -> None:
    # The largest model (138 M weights): once, at -O3, graph executor.
    mod, params = models.get("vgg16")
    (x,) = models.example_inputs("vgg16")
    want = evaluate(mod, x, *params.values())
    _same(build(mod, params=params, executor="graph")(x), want)
