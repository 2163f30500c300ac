"""A GPT-style transformer block written with ``torch.nn`` — multi-head causal self-attention
(``batch_matmul``, softmax, a causal mask), layer norms, GELU, an MLP, residuals — imports
through ``torch.export`` (``frontends.torch``) and through ``torch.onnx`` (``frontends.onnx``),
matches PyTorch (and onnxruntime) on the oracle, and builds on the TVM backend. Exported with
a dynamic batch (``torch.export.Dim``), one import runs batches 1, 3 and 8 on the oracle and
on the TVM VM."""

from __future__ import annotations

import io
import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (extra `torch`)")
nn = torch.nn

from frontends.torch import from_exported_program  # noqa: E402
from interpreter import evaluate  # noqa: E402
from semantics.printer import pretty  # noqa: E402
from typechecker import check, type_of  # noqa: E402

D, HEADS, T = 32, 4, 8
BATCHES = (1, 3, 8)


class CausalSelfAttention(nn.Module):
    def __init__(self, d: int, heads: int, t: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.register_buffer("mask", torch.tril(torch.ones(t, t, dtype=torch.bool)))

    def forward(self, x):
        b, t, d = x.shape
        hd = d // self.heads
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, hd).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
        att = att.masked_fill(~self.mask[:t, :t], float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, d: int = D, heads: int = HEADS, t: int = T):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads, t)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


def _block() -> Block:
    torch.manual_seed(0)
    module = Block().eval()
    with torch.no_grad():      # layer norms that are not the identity
        for ln in (module.ln1, module.ln2):
            ln.weight.uniform_(0.5, 1.5)
            ln.bias.uniform_(-0.2, 0.2)
    return module


def _input(batch: int) -> np.ndarray:
    return np.random.default_rng(batch).standard_normal((batch, T, D)).astype(np.float32)


def _pytorch(module: Block, x: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return module(torch.from_numpy(x)).numpy()


@pytest.fixture(scope="module")
def dynamic_import():
    """The block exported once with a dynamic batch and imported."""
    module = _block()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(module, (torch.from_numpy(_input(2)),),
                                 dynamic_shapes=({0: torch.export.Dim("batch", max=64)},))
    mod, params = from_exported_program(ep)
    check(mod)
    return module, mod, params


def test_the_block_is_typed_for_every_batch(dynamic_import):
    _, mod, _ = dynamic_import
    batch, t, d = mod["main"].params[0].type_annotation.shape
    assert not isinstance(batch, int) and (t, d) == (T, D)
    assert tuple(type_of(mod["main"]).ret_type.shape) == (batch, T, D)
    text = pretty(mod)
    # attention is a batched matrix product over batch × heads; GELU is erf's
    assert text.count("nn.batch_matmul(") == 2 and "erf(" in text and "nn.softmax(" in text


@pytest.mark.parametrize("batch", BATCHES)
def test_one_import_every_batch_on_the_oracle(dynamic_import, batch):
    module, mod, params = dynamic_import
    x = _input(batch)
    got = evaluate(mod, x, *params.values())
    np.testing.assert_allclose(got, _pytorch(module, x), rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_one_import_every_batch_on_the_tvm_vm(dynamic_import):
    pytest.importorskip("tvm", reason="tvm is not installed (extra `tvm`)")
    from backends.tvm import build

    module, mod, params = dynamic_import
    exe = build(mod, params=params)
    for batch in BATCHES:
        x = _input(batch)
        np.testing.assert_allclose(np.asarray(exe(x)), _pytorch(module, x), rtol=1e-4,
                                   atol=1e-5)


@pytest.mark.slow
def test_static_export_builds_on_tvm_and_matches_pytorch():
    pytest.importorskip("tvm", reason="tvm is not installed (extra `tvm`)")
    from backends.tvm import build

    module = _block()
    x = _input(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(module, (torch.from_numpy(x),))
    mod, params = from_exported_program(ep)
    check(mod)
    want = _pytorch(module, x)
    np.testing.assert_allclose(evaluate(mod, x, *params.values()), want, rtol=1e-4, atol=1e-5)
    for executor in ("vm", "graph"):
        exe = build(mod, params=params, executor=executor)
        np.testing.assert_allclose(np.asarray(exe(x)), want, rtol=1e-4, atol=1e-5)


def _onnx_bytes(module: Block, x: np.ndarray, dynamic_batch: bool = False) -> bytes:
    buf = io.BytesIO()
    axes = {"x": {0: "batch"}, "y": {0: "batch"}} if dynamic_batch else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (torch.from_numpy(x),), buf, dynamo=False,
                          input_names=["x"], output_names=["y"], opset_version=17,
                          dynamic_axes=axes)
    return buf.getvalue()


def test_onnx_export_matches_pytorch_and_onnxruntime():
    pytest.importorskip("onnx", reason="onnx is not installed (extra `onnx`)")
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    from frontends.onnx import from_onnx

    module = _block()
    x = _input(2)
    data = _onnx_bytes(module, x)
    mod, params = from_onnx(data)
    check(mod)
    got = evaluate(mod, x, *params.values())
    got = got[0] if isinstance(got, tuple) else got
    want = _pytorch(module, x)
    (runtime,) = ort.InferenceSession(data).run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got, runtime, rtol=1e-4, atol=1e-5)


@pytest.fixture(scope="module")
def dynamic_onnx_import():
    """The block exported by ``torch.onnx`` with a dynamic batch axis, imported once."""
    pytest.importorskip("onnx", reason="onnx is not installed (extra `onnx`)")
    from frontends.onnx import from_onnx

    module = _block()
    data = _onnx_bytes(module, _input(2), dynamic_batch=True)
    mod, params = from_onnx(data)
    check(mod)
    return module, data, mod, params


def test_dynamic_batch_onnx_is_typed_for_every_batch(dynamic_onnx_import):
    _, _, mod, _ = dynamic_onnx_import
    batch, t, d = mod["main"].params[0].type_annotation.shape
    assert not isinstance(batch, int) and (t, d) == (T, D)
    ret = type_of(mod["main"]).ret_type
    ret = ret.fields[0] if hasattr(ret, "fields") else ret
    assert tuple(ret.shape) == (batch, T, D)


@pytest.mark.parametrize("batch", BATCHES)
def test_dynamic_batch_onnx_one_import_every_batch_on_the_oracle(dynamic_onnx_import, batch):
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    module, data, mod, params = dynamic_onnx_import
    x = _input(batch)
    got = evaluate(mod, x, *params.values())
    got = got[0] if isinstance(got, tuple) else got
    (runtime,) = ort.InferenceSession(data).run(None, {"x": x})
    np.testing.assert_allclose(got, _pytorch(module, x), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got, runtime, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_dynamic_batch_onnx_one_import_every_batch_on_the_tvm_vm(dynamic_onnx_import):
    pytest.importorskip("tvm", reason="tvm is not installed (extra `tvm`)")
    from backends.tvm import build

    module, _, mod, params = dynamic_onnx_import
    exe = build(mod, params=params, executor="vm")
    for batch in BATCHES:
        x = _input(batch)
        got = exe(x)
        got = got[0] if isinstance(got, (tuple, list)) else got
        np.testing.assert_allclose(np.asarray(got), _pytorch(module, x), rtol=1e-4, atol=1e-5)
