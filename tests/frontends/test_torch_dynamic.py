"""Dynamic shapes from ``torch.export`` (``frontends.torch.symbolic``) and the importer's
errors: a dimension exported as ``torch.export.Dim`` is a shape variable of ``@main``;
``sym_size`` and integer arithmetic on it become reshape codes (for types) and run-time
shape computations (for data); one import runs for every size. Every node that cannot be
converted is named — with its target and source line — in one ``ImporterError``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch", reason="torch is not installed (extra `torch`)")

from frontends.onnx import ImporterError  # noqa: E402
from frontends.torch import from_exported_program  # noqa: E402
from interpreter import evaluate  # noqa: E402
from typechecker import check, type_of  # noqa: E402

HERE = __file__


def _export(module, args, dynamic_shapes=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.export.export(module, args, dynamic_shapes=dynamic_shapes)


def _torch(module, *arrays):
    with torch.no_grad():
        out = module(*map(torch.from_numpy, arrays))
    return [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]


def _ours(mod, params, *arrays):
    got = evaluate(mod, *arrays, *params.values())
    return [np.asarray(g) for g in (got if isinstance(got, tuple) else (got,))]


# --- a dynamic-batch CNN ---------------------------------------------------------------------

class SmallCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
            torch.nn.MaxPool2d(2), torch.nn.Conv2d(8, 4, 3, padding=1), torch.nn.ReLU())
        self.head = torch.nn.Linear(4 * 4 * 4, 5)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


_CNN = None


def _cnn():
    global _CNN
    if _CNN is None:
        torch.manual_seed(0)
        module = SmallCNN().eval()
        with torch.no_grad():     # non-trivial running statistics
            module.features[1].running_mean.uniform_(-0.5, 0.5)
            module.features[1].running_var.uniform_(0.5, 2.0)
        ep = _export(module, (torch.randn(2, 3, 8, 8),),
                     ({0: torch.export.Dim("batch", min=1, max=64)},))
        mod, params = from_exported_program(ep)
        check(mod)
        _CNN = (module, mod, params)
    return _CNN


def test_dynamic_batch_cnn_is_typed_with_a_shape_variable():
    _, mod, _ = _cnn()
    batch, *rest = mod["main"].params[0].type_annotation.shape
    assert not isinstance(batch, int) and rest == [3, 8, 8] or tuple(rest) == (3, 8, 8)
    assert tuple(type_of(mod["main"]).ret_type.shape) == (batch, 5)


@pytest.mark.parametrize("batch", [1, 3, 8])
def test_dynamic_batch_cnn_one_import_every_batch(batch):
    module, mod, params = _cnn()
    x = np.random.default_rng(batch).standard_normal((batch, 3, 8, 8)).astype(np.float32)
    (got,), (want,) = _ours(mod, params, x), _torch(module, x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_dynamic_batch_cnn_on_the_tvm_vm():
    pytest.importorskip("tvm", reason="tvm is not installed (extra `tvm`)")
    from backends.tvm import build

    module, mod, params = _cnn()
    exe = build(mod, params=params)
    for batch in (1, 3, 8):
        x = np.random.default_rng(batch).standard_normal((batch, 3, 8, 8)).astype(np.float32)
        np.testing.assert_allclose(np.asarray(exe(x)), _torch(module, x)[0], rtol=1e-4,
                                   atol=1e-5)


# --- symbolic sizes in shapes and in data ---------------------------------------------------

class SizeArithmetic(torch.nn.Module):
    """Sizes flow into a view (``b * 2``: an inferred dim), into data (a division by ``b``,
    a multiplication by ``b + 1``) and through ``//``."""

    def forward(self, x):
        b = x.shape[0]
        y = x.view(b * 2, 3)
        mean = y.sum(0) / b
        return y * (b + 1) - mean, y[: (b * 2) // 2 * 2].sum(1) * (b // 2)


_SIZES = None


def _sizes():
    global _SIZES
    if _SIZES is None:
        ep = _export(SizeArithmetic(), (torch.randn(4, 6),),
                     ({0: torch.export.Dim("b", min=1, max=64)},))
        mod, params = from_exported_program(ep)
        check(mod)
        _SIZES = (mod, params)
    return _SIZES


def test_symbolic_sizes_give_symbolic_types():
    mod, _ = _sizes()
    (b, six) = mod["main"].params[0].type_annotation.shape
    assert six == 6
    first, second = type_of(mod["main"]).ret_type.fields
    assert str(first.shape[0]) == f"2*{b}" and first.shape[1] == 3
    assert str(second.shape[0]) == f"2*{b}"


@settings(max_examples=20)
@given(st.integers(1, 9), st.integers(0, 2**32 - 1))
def test_symbolic_size_arithmetic_matches_pytorch(batch, seed):
    mod, params = _sizes()
    x = np.random.default_rng(seed).standard_normal((batch, 6)).astype(np.float32)
    for got, want in zip(_ours(mod, params, x), _torch(SizeArithmetic(), x)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


class Slices(torch.nn.Module):
    def forward(self, x):
        return x[1:] * 2, x[:, 1:3], x[-2:], x[:2].sum(0)


@pytest.mark.parametrize("rows", [3, 4, 9])
def test_slices_of_a_symbolic_axis_match_pytorch(rows):
    ep = _export(Slices(), (torch.randn(5, 4),), ({0: torch.export.Dim("n", min=3)},))
    mod, params = from_exported_program(ep)
    check(mod)
    x = np.random.default_rng(rows).standard_normal((rows, 4)).astype(np.float32)
    for got, want in zip(_ours(mod, params, x), _torch(Slices(), x)):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6)


class Create(torch.nn.Module):
    """Tensors created and expanded to the symbolic batch (an RNN's initial state)."""

    def forward(self, x):
        b = x.shape[0]
        return (torch.zeros(b, 3) + x[:, :3], torch.ones(2, b, dtype=torch.int64),
                torch.ones(1, 3).expand(b, 3) * 2, torch.full((b,), b),
                torch.zeros(b, dtype=torch.bool), torch.ones(3).expand(b, 2, 3))


@pytest.mark.parametrize("batch", [1, 2, 5])
def test_tensors_created_with_a_symbolic_size_match_pytorch(batch):
    ep = _export(Create(), (torch.randn(4, 5),), ({0: torch.export.Dim("b")},))
    mod, params = from_exported_program(ep)
    check(mod)
    x = np.random.default_rng(batch).standard_normal((batch, 5)).astype(np.float32)
    for got, want in zip(_ours(mod, params, x), _torch(Create(), x)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want)


# --- PyTorch's dtype promotion ---------------------------------------------------------

class Mixed(torch.nn.Module):
    def forward(self, a, b):
        return a + b, a * b, b - a, (a > b)


@pytest.mark.parametrize("a,b", [
    (("float32", (3,)), ("int64", ())), (("int32", (3,)), ("float32", ())),
    (("int32", (3,)), ("int64", (3,))), (("uint8", (3,)), ("int32", ())),
    (("int64", ()), ("float32", (3,))), (("float64", ()), ("float32", (3,)))])
def test_mixed_dtypes_promote_as_pytorch_does(a, b):
    rng = np.random.default_rng(0)
    arrays = [np.asarray(rng.standard_normal(shape) * 4).astype(dt) for dt, shape in (a, b)]
    ep = _export(Mixed(), tuple(torch.from_numpy(np.asarray(x)) for x in arrays))
    mod, params = from_exported_program(ep)
    check(mod)
    for got, want in zip(_ours(mod, params, *arrays), _torch(Mixed(), *arrays)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_integer_and_bool_sums_accumulate_in_int64_as_pytorch_does():
    class Sums(torch.nn.Module):
        def forward(self, a, m):
            return a.sum(0), m.sum(), (a > 0).sum(1), a.to(torch.float32).mean()

    a = np.arange(12, dtype=np.int32).reshape(3, 4) - 5
    m = np.array([True, False, True])
    mod, params = from_exported_program(_export(Sums(), (torch.from_numpy(a),
                                                          torch.from_numpy(m))))
    for got, want in zip(_ours(mod, params, a, m), _torch(Sums(), a, m)):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want)


# --- errors ---------------------------------------------------------------------------------

def test_every_unsupported_node_is_named_with_its_target_and_line():
    class Odd(torch.nn.Module):
        def forward(self, x):
            a = torch.cumsum(x, 0)                         # unsupported
            b = torch.cond(x.sum() > 0, lambda x: torch.special.i0(x), lambda x: x - 1, (x,))
            return a + b + torch.special.i0(x * 2)        # unsupported

    ep = _export(Odd(), (torch.ones(3),))
    with pytest.raises(ImporterError) as info:
        from_exported_program(ep)
    msg = info.value.message
    assert "3 node(s)" in msg
    assert msg.count("aten.cumsum.default") == 1 and msg.count("aten.i0.default") == 2
    assert "node true_graph_0.i0 " in msg       # the one inside the branch, by its scope
    assert f"{HERE}:" in msg and "in forward" in msg
    lines = [ln for ln in msg.splitlines() if "aten." in ln]
    assert all(ln.strip().startswith("node ") for ln in lines)


def test_a_failing_conversion_names_the_node_and_spares_nothing_else():
    class TwoInferred(torch.nn.Module):
        def forward(self, x):
            return x.reshape(x.shape[1], x.shape[0]), torch.cumsum(x, 1)

    dims = {0: torch.export.Dim("r", min=2, max=16), 1: torch.export.Dim("c", min=2, max=16)}
    ep = _export(TwoInferred(), (torch.ones(3, 5),), (dims,))
    with pytest.raises(ImporterError) as info:
        from_exported_program(ep)
    msg = info.value.message
    assert "2 node(s)" in msg and "aten.view.default" in msg and "more than one" in msg
    assert "aten.cumsum.default" in msg and f"{HERE}:" in msg


def test_a_module_is_not_an_exported_program():
    with pytest.raises(ImporterError, match="torch.export.export"):
        from_exported_program(torch.nn.ReLU())
