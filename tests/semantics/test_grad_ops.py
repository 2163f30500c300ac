"""The grad_ops operator family (semantics/ops/grad_ops.py): registry entries, relations,
references.

* registry completeness: exactly the five operators, each with a doc line, a named relation,
  a fusion pattern and valid/invalid call strategies in the conformance kit;
* relation soundness (Hypothesis): on valid calls the reference returns exactly the dtype and
  shape the relation infers, with no numpy warning; invalid calls are ``RelayTypeError``;
* the defining adjoint identities (Hypothesis, float64, any strides/padding/dilation/groups,
  layouts, ceil_mode, count_include_pad): ``<conv2d_transpose(y, w), x> = <y, conv2d(x, w)> =
  <conv2d_backward_weight(y, x), w>``, ``<avg_pool2d_grad(g, x), v> = <g, avg_pool2d(v)>``,
  ``<max_pool2d_grad(g, x), v> = <g, max_pool2d_pick(x, v)>`` and ``max_pool2d_pick(x, x) =
  max_pool2d(x)``;
* agreement with PyTorch's transposed convolution and autograd (when torch is installed);
* symbolic dims, unknown arguments, the text format (print, re-parse, evaluate).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.strategies.ops import (
    INVALID_CALLS,
    VALID_CALLS,
    covered_ops,
    op_call_args,
    op_inputs,
    op_invalid_call_args,
)
from conformance.strategies.ops_grad import (
    nonempty_conv2d_call,
    nonempty_pool2d_call,
)
from interpreter import evaluate
from semantics import alpha_equal, ops, parse, pretty
from semantics.errors import RelayTypeError
from semantics.ops.registry import OpPattern, Relation
from semantics.shapes import shape_var
from semantics.types import IncompleteType, TensorType

FAMILY_OPS = sorted(n for n in ops.list_ops() if ops.get(n).family == "grad_ops")
EXPECTED = ["nn.avg_pool2d_grad", "nn.conv2d_backward_weight", "nn.conv2d_transpose",
            "nn.max_pool2d_grad", "nn.max_pool2d_pick"]


def T(shape: Any, dtype: str = "float32") -> TensorType:
    return TensorType(tuple(shape), dtype)


def rel(name: str, *arg_types: Any, **attrs: Any) -> Any:
    op = ops.get(name)
    return op.relation(tuple(arg_types), op.normalize_attrs(attrs))


def inner(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.sum(a * b))


def close(a: float, b: float, scale: float) -> bool:
    return abs(a - b) <= 1e-9 * (1.0 + scale)


# --- registry ---------------------------------------------------------------------------------

def test_the_family_holds_exactly_the_backward_operators() -> None:
    assert FAMILY_OPS == EXPECTED


@pytest.mark.parametrize("name", EXPECTED)
def test_registry_entry_is_complete(name: str) -> None:
    op = ops.get(name)
    assert op.doc and isinstance(op.relation, Relation) and op.relation.name
    assert op.pattern == OpPattern.OUT_ELEMWISE_FUSABLE
    assert op.num_inputs == 2
    assert name in covered_ops() and name in VALID_CALLS and name in INVALID_CALLS


# --- relation soundness -----------------------------------------------------------------------

@pytest.mark.parametrize("name", EXPECTED)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_reference_has_the_relations_type(name: str, data: st.DataObject) -> None:
    arg_types, attrs = data.draw(op_call_args(name))
    op = ops.get(name)
    out = op.relation(tuple(arg_types), op.normalize_attrs(attrs))
    assert isinstance(out, TensorType)
    args = data.draw(op_inputs(name, arg_types, attrs))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = op.reference(*args, **attrs)
    assert result.dtype.name == out.dtype
    assert result.shape == tuple(int(d) for d in out.shape)


@pytest.mark.parametrize("name", EXPECTED)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_invalid_calls_are_type_errors(name: str, data: st.DataObject) -> None:
    arg_types, attrs = data.draw(op_invalid_call_args(name))
    op = ops.get(name)
    with pytest.raises(RelayTypeError):
        op.relation(tuple(arg_types), op.normalize_attrs(attrs))


# --- adjoint identities -----------------------------------------------------------------------

def _canonical(data: TensorType, weight: TensorType, attrs: dict[str, Any]
               ) -> tuple[tuple[int, ...], tuple[int, ...], dict[str, Any]]:
    dl, kl = attrs.get("data_layout", "NCHW"), attrs.get("kernel_layout", "OIHW")
    x = tuple(int(data.shape[dl.index(c)]) for c in "NCHW")
    w = tuple(int(weight.shape[kl.index(c)]) for c in "OIHW")
    window = {k: attrs[k] for k in ("strides", "padding", "dilation", "groups")}
    return x, w, window


@settings(max_examples=80, deadline=None)
@given(call=nonempty_conv2d_call(), seed=st.integers(0, 2**32 - 1))
def test_convolution_adjoint_identities(call: Any, seed: int) -> None:
    (data, weight), attrs = call
    xs, ws, window = _canonical(data, weight, attrs)
    rng = np.random.default_rng(seed)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    y = ops.get("nn.conv2d").reference(x, w, **window)
    g = rng.standard_normal(y.shape)
    (sh, sw), (dh, dw) = (window["strides"], window["dilation"])
    pt, pl, pb, pr = window["padding"]
    oph = xs[2] - ((y.shape[2] - 1) * sh - pt - pb + dh * (ws[2] - 1) + 1)
    opw = xs[3] - ((y.shape[3] - 1) * sw - pl - pr + dw * (ws[3] - 1) + 1)
    xt = ops.get("nn.conv2d_transpose").reference(g, w, output_padding=[oph, opw], **window)
    wt = ops.get("nn.conv2d_backward_weight").reference(g, x, kernel_size=list(ws[2:]),
                                                         **window)
    assert xt.shape == x.shape and wt.shape == w.shape
    target = inner(g, y)
    scale = float(np.abs(g * y).sum())
    assert close(inner(xt, x), target, scale), (inner(xt, x), target)
    assert close(inner(wt, w), target, scale), (inner(wt, w), target)


@settings(max_examples=80, deadline=None)
@given(call=st.booleans().flatmap(lambda avg: st.tuples(st.just(avg),
                                                          nonempty_pool2d_call(avg))),
       seed=st.integers(0, 2**32 - 1))
def test_pool_adjoint_identities(call: Any, seed: int) -> None:
    avg, ((data,), attrs) = call
    rng = np.random.default_rng(seed)
    shape = tuple(int(d) for d in data.shape)
    size = int(np.prod(shape))
    x = ((rng.permutation(size) - size / 2) * 0.25).reshape(shape)   # no ties
    v = rng.standard_normal(shape)
    if avg:
        y = ops.get("nn.avg_pool2d").reference(v, **attrs)
        g = rng.standard_normal(y.shape)
        back = ops.get("nn.avg_pool2d_grad").reference(g, x, **attrs)
        assert close(inner(back, v), inner(g, y), float(np.abs(g * y).sum()))
        return
    pooled = ops.get("nn.max_pool2d").reference(x, **attrs)
    g = rng.standard_normal(pooled.shape)
    back = ops.get("nn.max_pool2d_grad").reference(g, x, **attrs)
    picked = ops.get("nn.max_pool2d_pick").reference(x, v, **attrs)
    assert close(inner(back, v), inner(g, picked), float(np.abs(g * picked).sum()))
    itself = ops.get("nn.max_pool2d_pick").reference(x, x, **attrs)
    real = pooled > np.finfo(np.float64).min          # windows that reach the data
    np.testing.assert_array_equal(itself[real], pooled[real])
    assert not itself[~real].any()


def test_max_pool2d_grad_routes_ties_to_the_first_tap_and_sums_overlaps() -> None:
    x = np.array([[[[1.0, 4.0, 4.0], [0.0, 4.0, 2.0]]]])
    g = np.array([[[[10.0, 100.0]]]])
    back = ops.get("nn.max_pool2d_grad").reference(g, x, pool_size=[2, 2])
    np.testing.assert_array_equal(back, [[[[0.0, 110.0, 0.0], [0.0, 0.0, 0.0]]]])


def test_max_pool2d_grad_routes_nothing_from_nan_windows_or_padding_maxima() -> None:
    x = np.array([[[[np.nan, 1.0], [-np.inf, -np.inf]]]])
    g = np.ones((1, 1, 2, 1))
    back = ops.get("nn.max_pool2d_grad").reference(g, x, pool_size=[1, 2], padding=[0, 0, 0, 0])
    np.testing.assert_array_equal(back, [[[[0.0, 0.0], [1.0, 0.0]]]])
    # padded by the lowest float: it beats -inf, so the edge windows of row 1 route nothing and
    # the middle one goes to its first -inf; the NaN windows of row 0 route nothing either
    g = np.ones((1, 1, 2, 3))
    back = ops.get("nn.max_pool2d_grad").reference(g, x, pool_size=[1, 2], padding=[0, 1])
    np.testing.assert_array_equal(back, [[[[0.0, 1.0], [1.0, 0.0]]]])


# --- against PyTorch --------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(call=nonempty_conv2d_call(), seed=st.integers(0, 2**32 - 1))
def test_convolution_backward_agrees_with_torch(call: Any, seed: int) -> None:
    torch = pytest.importorskip("torch")
    (data, weight), attrs = call
    xs, ws, window = _canonical(data, weight, attrs)
    rng = np.random.default_rng(seed)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    y = ops.get("nn.conv2d").reference(x, w, **window)
    g = rng.standard_normal(y.shape)
    pt, pl, pb, pr = window["padding"]
    tx = torch.tensor(np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr))), requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    ty = torch.nn.functional.conv2d(tx, tw, stride=window["strides"],
                                    dilation=window["dilation"], groups=window["groups"])
    ty.backward(torch.tensor(g))
    (sh, sw), (dh, dw) = window["strides"], window["dilation"]
    oph = xs[2] - ((y.shape[2] - 1) * sh - pt - pb + dh * (ws[2] - 1) + 1)
    opw = xs[3] - ((y.shape[3] - 1) * sw - pl - pr + dw * (ws[3] - 1) + 1)
    xt = ops.get("nn.conv2d_transpose").reference(g, w, output_padding=[oph, opw], **window)
    wt = ops.get("nn.conv2d_backward_weight").reference(g, x, kernel_size=list(ws[2:]),
                                                         **window)
    assert tx.grad is not None and tw.grad is not None
    want_x = tx.grad.numpy()[:, :, pt:pt + xs[2], pl:pl + xs[3]]
    np.testing.assert_allclose(xt, want_x, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(wt, tw.grad.numpy(), rtol=1e-10, atol=1e-10)


def test_conv2d_transpose_agrees_with_torch_conv_transpose2d() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    y, w = rng.standard_normal((2, 4, 3, 5)), rng.standard_normal((4, 3, 3, 2))
    attrs = {"strides": [2, 3], "padding": [1, 0], "dilation": [1, 2], "groups": 2,
             "output_padding": [1, 2]}
    ours = ops.get("nn.conv2d_transpose").reference(y, w, **attrs)
    theirs = torch.nn.functional.conv_transpose2d(
        torch.tensor(y), torch.tensor(w), stride=(2, 3), padding=(1, 0), dilation=(1, 2),
        groups=2, output_padding=(1, 2)).numpy()
    assert ours.shape == theirs.shape == (2, 6, 6, 17)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("include", [True, False])
def test_pool_gradients_agree_with_torch_autograd(include: bool) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    x = ((rng.permutation(2 * 3 * 7 * 6) - 100) * 0.1).reshape(2, 3, 7, 6)
    attrs = {"pool_size": [3, 2], "strides": [2, 2], "padding": [1, 1]}
    tx = torch.tensor(x, requires_grad=True)
    ty = torch.nn.functional.avg_pool2d(tx, (3, 2), (2, 2), (1, 1),
                                        count_include_pad=include)
    g = rng.standard_normal(tuple(ty.shape))
    ty.backward(torch.tensor(g))
    ours = ops.get("nn.avg_pool2d_grad").reference(g, x, count_include_pad=include, **attrs)
    np.testing.assert_allclose(ours, tx.grad.numpy(), rtol=1e-12, atol=1e-12)
    tx = torch.tensor(x, requires_grad=True)
    ty = torch.nn.functional.max_pool2d(tx, (3, 2), (2, 2), (1, 1), dilation=1)
    ty.backward(torch.tensor(g))
    ours = ops.get("nn.max_pool2d_grad").reference(g, x, **attrs)
    np.testing.assert_allclose(ours, tx.grad.numpy(), rtol=1e-12, atol=1e-12)


# --- symbolic dims, unknown arguments, text ------------------------------------------------------

def test_symbolic_transposed_convolution_extent() -> None:
    n, h = shape_var("n"), shape_var("h")
    out = rel("nn.conv2d_transpose", T((n, 4, h, 5)), T((4, 2, 3, 3)), strides=[2, 1],
              padding=[1, 0])
    assert isinstance(out, TensorType)
    assert out.shape[0] == n and out.shape[1] == 2 and out.shape[3] == 7
    assert sympy.simplify(out.shape[2] - (2 * h - 1)) == 0


def test_unknown_arguments_wait() -> None:
    unknown = IncompleteType()
    assert rel("nn.conv2d_transpose", unknown, T((4, 2, 3, 3))) is None
    assert rel("nn.max_pool2d_grad", T((1, 1, 2, 2)), unknown, pool_size=[2, 2]) is None


def test_relation_messages() -> None:
    with pytest.raises(RelayTypeError, match="output_padding .* must be smaller than the strides"):
        rel("nn.conv2d_transpose", T((1, 4, 3, 3)), T((4, 2, 3, 3)), strides=[2, 2],
            output_padding=[2, 0])
    with pytest.raises(RelayTypeError, match="requires attribute 'kernel_size'"):
        rel("nn.conv2d_backward_weight", T((1, 2, 3, 3)), T((1, 4, 5, 5)))
    with pytest.raises(RelayTypeError, match="out_grad vs. the pooled data"):
        rel("nn.avg_pool2d_grad", T((1, 1, 3, 3)), T((1, 1, 5, 5)), pool_size=[2, 2])
    with pytest.raises(RelayTypeError, match="float dtype"):
        rel("nn.max_pool2d_pick", T((1, 1, 4, 4), "int32"), T((1, 1, 4, 4), "int32"),
            pool_size=[2, 2])


PROGRAM = """
def @main(%y: Tensor[(1, 2, 3, 3), float64], %w: Tensor[(2, 3, 3, 3), float64],
          %x: Tensor[(1, 3, 6, 6), float64], %p: Tensor[(1, 3, 3, 3), float64]) {
  %0 = nn.conv2d_transpose(%y, %w, strides=[2, 2], padding=[1, 1], output_padding=[1, 1]);
  %1 = nn.conv2d_backward_weight(%y, %x, strides=[2, 2], padding=[1, 1], kernel_size=[3, 3]);
  %2 = nn.max_pool2d_grad(%p, %x, pool_size=[2, 2], strides=[2, 2]);
  %3 = nn.avg_pool2d_grad(%p, %x, pool_size=[2, 2], strides=[2, 2], count_include_pad=True);
  %4 = nn.max_pool2d_pick(%x, %x, pool_size=[2, 2], strides=[2, 2]);
  (%0, %1, %2, %3, %4)
}
"""


def test_text_round_trip_and_evaluation() -> None:
    mod = parse(PROGRAM)
    assert alpha_equal(parse(pretty(mod)), mod)
    rng = np.random.default_rng(0)
    y, x = rng.standard_normal((1, 2, 3, 3)), rng.standard_normal((1, 3, 6, 6))
    w = rng.standard_normal((2, 3, 3, 3))
    p = rng.standard_normal((1, 3, 3, 3))
    xt, wt, mg, ag, pk = evaluate(mod, y, w, x, p)
    assert xt.shape == (1, 3, 6, 6) and wt.shape == (2, 3, 3, 3)
    assert mg.shape == ag.shape == (1, 3, 6, 6) and pk.shape == (1, 3, 3, 3)
    np.testing.assert_array_equal(pk, ops.get("nn.max_pool2d").reference(
        x, pool_size=[2, 2], strides=[2, 2]))
