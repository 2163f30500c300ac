"""ResNet-18, MobileNet and the LSTM (``models.torch_reference``) exported from PyTorch —
through ``torch.export`` (``frontends.torch``) and through ``torch.onnx`` (``frontends.onnx``)
— import, type-check and match PyTorch's output on the oracle."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (extra `torch`)")

import models  # noqa: E402
from frontends.torch import from_exported_program  # noqa: E402
from interpreter import evaluate  # noqa: E402
from models import torch_reference  # noqa: E402
from typechecker import check  # noqa: E402

CASES = [("resnet18", (1, 3, 224, 224), 1e-4), ("mobilenet", (1, 3, 224, 224), 1e-4),
         ("lstm", (3, 1, 650), 1e-5)]


def _module_and_input(name, shape):
    _, params = models.get(name)
    module = torch_reference.module(name, params).eval()
    x = torch.from_numpy(np.random.default_rng(0).standard_normal(shape).astype(np.float32))
    with torch.no_grad():
        want = module(x).numpy()
    return module, x, want


@pytest.mark.parametrize("name,shape,tol", CASES)
def test_torch_export_imports_and_matches_pytorch(name, shape, tol):
    module, x, want = _module_and_input(name, shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(module, (x,))
    mod, params = from_exported_program(ep)
    check(mod)
    assert mod["main"].params[0].name_hint == "x" or len(mod["main"].params) == 1 + len(params)
    got = evaluate(mod, x.numpy(), *params.values(), check=False)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 10)


@pytest.mark.parametrize("name,shape,tol", CASES)
def test_torch_onnx_export_imports_and_matches_pytorch(name, shape, tol):
    pytest.importorskip("onnx", reason="onnx is not installed (extra `onnx`)")
    from frontends.onnx import from_onnx

    module, x, want = _module_and_input(name, shape)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (x,), buf, dynamo=False)
    mod, params = from_onnx(buf.getvalue())
    check(mod)
    got = evaluate(mod, x.numpy(), *params.values(), check=False)
    got = got[0] if isinstance(got, tuple) else got
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 10)


def test_unsupported_aten_operators_are_all_named():
    from frontends.onnx import ImporterError

    class Odd(torch.nn.Module):
        def forward(self, x):
            return torch.cumsum(torch.special.i0(x), 0)

    ep = torch.export.export(Odd(), (torch.ones(3),))
    with pytest.raises(ImporterError) as info:
        from_exported_program(ep)
    assert "cumsum" in info.value.message and "i0" in info.value.message


def test_a_dynamic_batch_dimension_becomes_a_shape_variable():
    from typechecker import type_of

    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(),
                                 torch.nn.Linear(3, 2)).eval()
    batch = torch.export.Dim("batch", min=2)
    ep = torch.export.export(module, (torch.randn(5, 4),), dynamic_shapes=({0: batch},))
    mod, params = from_exported_program(ep)
    (dim, four) = mod["main"].params[0].type_annotation.shape
    assert four == 4 and not isinstance(dim, int)
    assert tuple(type_of(mod["main"]).ret_type.shape) == (dim, 2)
    # Parameters named after their qualified names ("0.weight"; a leading digit gets "p_").
    assert list(params) == ["p_0_weight", "p_0_bias", "p_2_weight", "p_2_bias"]
    for n in (2, 7):
        x = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
        with torch.no_grad():
            want = module(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(evaluate(mod, x, *params.values()), want, rtol=1e-5,
                                   atol=1e-6)
