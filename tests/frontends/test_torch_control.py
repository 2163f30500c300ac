"""Control flow from ``torch.export`` (``frontends.torch.control``): ``torch.cond`` → ``if``,
``while_loop`` → one tail-recursive function (no unrolling), ``scan`` and ``map`` → a
recursion over the scanned axis. Each program is differential: the oracle against PyTorch on
inputs Hypothesis draws, with the exported program imported once."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch", reason="torch is not installed (extra `torch`)")

from torch._higher_order_ops.map import map as torch_map  # noqa: E402
from torch._higher_order_ops.scan import scan  # noqa: E402
from torch._higher_order_ops.while_loop import while_loop  # noqa: E402

from frontends.torch import from_exported_program  # noqa: E402
from interpreter import evaluate  # noqa: E402
from semantics.printer import pretty  # noqa: E402
from typechecker import check  # noqa: E402


def _export(module, args, dynamic_shapes=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(module, args, dynamic_shapes=dynamic_shapes)
    mod, params = from_exported_program(ep)
    check(mod)
    return mod, params


def _outs(v):
    return [np.asarray(x) for x in v] if isinstance(v, (tuple, list)) else [np.asarray(v)]


def _agree(mod, params, module, *arrays, tol=1e-5):
    got = _outs(evaluate(mod, *arrays, *params.values()))
    with torch.no_grad():
        want = _outs([w.numpy() for w in _outs_torch(module(*map(torch.from_numpy, arrays)))])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def _outs_torch(v):
    return list(v) if isinstance(v, (tuple, list)) else [v]


def _floats(shape):
    return st.lists(st.floats(-4, 4, width=32), min_size=int(np.prod(shape)),
                    max_size=int(np.prod(shape))).map(
        lambda xs: np.asarray(xs, np.float32).reshape(shape))


# --- cond ------------------------------------------------------------------------------------

class _Cond(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor([0.5, -1.0, 2.0]))

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: (x * self.w).sin(),
                          lambda x: x.cos() - self.w, (x,))


_COND = None


def _cond_program():
    global _COND
    if _COND is None:
        _COND = _export(_Cond().eval(), (torch.ones(3),))
    return _COND


def test_cond_becomes_one_relay_if():
    mod, _ = _cond_program()
    text = pretty(mod)
    assert text.count("if (") == 1 and "sin(" in text and "cos(" in text


@settings(max_examples=25)
@given(_floats((3,)))
def test_cond_takes_the_branch_pytorch_takes(x):
    mod, params = _cond_program()
    _agree(mod, params, _Cond().eval(), x)


def test_a_cond_inside_a_while_loop_body():
    class Nested(torch.nn.Module):
        def forward(self, x):
            def body(i, x):
                y = torch.cond(i % 2 == 0, lambda x: x * 2, lambda x: x - 1, (x,))
                return i + 1, y
            return while_loop(lambda i, x: i < 5, body, (torch.tensor(0), x))

    mod, params = _export(Nested(), (torch.ones(2),))
    _agree(mod, params, Nested(), np.array([1.5, -2.0], np.float32))


# --- while_loop ------------------------------------------------------------------------------

class _Doubling(torch.nn.Module):
    """A loop whose trip count depends on the data: double ``x`` until it sums to 100."""

    def forward(self, x):
        def cond_fn(i, x):
            return x.abs().sum() < 100

        def body_fn(i, x):
            return i + 1, x * 2 + 0.5
        return while_loop(cond_fn, body_fn, (torch.tensor(0), x))


_WHILE = None


def _while_program():
    global _WHILE
    if _WHILE is None:
        _WHILE = _export(_Doubling(), (torch.ones(3),),
                         ({0: torch.export.Dim("n", min=1, max=64)},))
    return _WHILE


def test_while_loop_is_one_recursion_not_unrolled():
    mod, _ = _while_program()
    text = pretty(mod)
    assert len(re.findall(r"let %\w+: fn", text)) == 1
    loop = re.search(r"let %(\w+): fn", text).group(1)
    # one definition, one recursive call in the body, one call that starts the loop
    assert text.count(f"%{loop}(") == 2
    assert text.count("multiply(") == 1 and text.count("if (") == 1
    (x_type,) = [p.type_annotation for p in mod["main"].params if p.name_hint == "x"]
    assert not isinstance(x_type.shape[0], int)


@settings(max_examples=25)
@given(st.integers(1, 9).flatmap(lambda n: _floats((n,))))
def test_while_loop_runs_as_many_times_as_pytorch(x):
    mod, params = _while_program()
    _agree(mod, params, _Doubling(), x)


def test_while_loop_closes_over_outer_values():
    class Closure(torch.nn.Module):
        def forward(self, x, step):
            return while_loop(lambda i, x: i < 4, lambda i, x: (i + 1, x + step),
                              (torch.tensor(0), x))

    mod, params = _export(Closure(), (torch.zeros(2), torch.ones(2)))
    _agree(mod, params, Closure(), np.array([1.0, 2.0], np.float32),
           np.array([0.25, -3.0], np.float32))


def test_nested_while_loops_are_two_recursions():
    class Nested(torch.nn.Module):
        """The inner loop's trip count is the outer counter; the body mixes the int64
        counter into float data (PyTorch's promotion: a cast)."""

        def forward(self, x):
            def outer(i, x):
                def inner(j, y):
                    return j + 1, y * 1.5 + i
                _, y = while_loop(lambda j, y: j < i, inner, (torch.zeros_like(i), x))
                return i + 1, y
            return while_loop(lambda i, x: i < 4, outer, (torch.tensor(0), x))

    mod, params = _export(Nested(), (torch.ones(3),))
    text = pretty(mod)
    assert len(re.findall(r"let %\w+: fn", text)) == 2 and text.count("multiply(") == 1
    _agree(mod, params, Nested(), np.array([1.0, -2.0, 0.5], np.float32))


# --- scan and map -----------------------------------------------------------------------------

class _Scan(torch.nn.Module):
    def __init__(self, dim=0, reverse=False):
        super().__init__()
        self.dim, self.reverse = dim, reverse

    def forward(self, init, xs, w):
        def combine(c, x):
            n = torch.tanh(c + x * w)
            return n, n.sum()
        return scan(combine, init, xs, dim=self.dim, reverse=self.reverse)


@pytest.mark.parametrize("dim,reverse", [(0, False), (0, True), (1, False), (1, True)])
def test_scan_forward_and_reverse_match_pytorch(dim, reverse):
    shape = (5, 3) if dim == 0 else (3, 5)
    module = _Scan(dim, reverse)
    mod, params = _export(module, (torch.zeros(3), torch.ones(shape), torch.ones(3)))
    text = pretty(mod)
    assert len(re.findall(r"let %\w+: fn", text)) == 1 and text.count("tanh(") == 1
    rng = np.random.default_rng(dim * 2 + reverse)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((3,), shape, (3,))]
    _agree(mod, params, module, *arrays)


def test_scan_over_a_symbolic_length_stacks_outputs_of_any_length():
    module = _Scan()
    mod, params = _export(module, (torch.zeros(3), torch.ones(4, 3), torch.ones(3)),
                          (None, {0: torch.export.Dim("steps", min=1, max=32)}, None))
    rng = np.random.default_rng(7)
    for steps in (1, 2, 6):
        arrays = [rng.standard_normal(s).astype(np.float32) for s in ((3,), (steps, 3), (3,))]
        _agree(mod, params, module, *arrays)


def test_map_applies_the_body_to_every_row():
    class Map(torch.nn.Module):
        def forward(self, xs, y):
            return torch_map(lambda x, y: torch.relu(x) * y + 1, xs, y)

    mod, params = _export(Map(), (torch.ones(4, 3), torch.ones(3)))
    rng = np.random.default_rng(3)
    _agree(mod, params, Map(), rng.standard_normal((4, 3)).astype(np.float32),
           rng.standard_normal(3).astype(np.float32))


# --- on the TVM VM ----------------------------------------------------------------------------

@pytest.mark.slow
def test_while_loop_and_cond_run_on_the_tvm_vm():
    pytest.importorskip("tvm", reason="tvm is not installed (extra `tvm`)")
    from backends.tvm import build

    for program, module in ((_while_program(), _Doubling()), (_cond_program(), _Cond())):
        mod, params = program
        exe = build(mod, params=params)
        for x in (np.array([0.5, -1.0, 3.0], np.float32), np.array([-7.0, 0.0, 1.0], np.float32)):
            got = _outs(exe(x))
            with torch.no_grad():
                want = [w.numpy() for w in _outs_torch(module.eval()(torch.from_numpy(x)))]
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("symbolic", [False, True])
def test_scan_runs_on_the_tvm_vm(symbolic):
    pytest.importorskip("tvm", reason="tvm is not installed (extra `tvm`)")
    from backends.tvm import build

    module = _Scan()
    dims = (None, {0: torch.export.Dim("steps", min=1, max=32)}, None) if symbolic else None
    mod, params = _export(module, (torch.zeros(3), torch.ones(5, 3), torch.ones(3)), dims)
    exe = build(mod, params=params)
    rng = np.random.default_rng(0)
    for steps in ((2, 5) if symbolic else (5,)):
        arrays = [rng.standard_normal(s).astype(np.float32) for s in ((3,), (steps, 3), (3,))]
        with torch.no_grad():
            want = [w.numpy() for w in _outs_torch(module(*map(torch.from_numpy, arrays)))]
        for g, w in zip(_outs(exe(*arrays)), want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
