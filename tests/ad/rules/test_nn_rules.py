"""The gradient and tangent rules of the nn and grad_ops families, checked numerically without the
AD transformation.

For an operator call ``f(x1..xn)`` built over typed variables (``typechecker.infer``), the
reverse rule's expressions are evaluated with the oracle and its vector-Jacobian product is
compared with central finite differences in float64 along random directions ``v``:
``sum_i <grad_i, v_i>`` against ``<ct, f(x + eps v) - f(x - eps v)> / (2 eps)``; the tangent
rule's value against ``(f(x + eps t) - f(x - eps t)) / (2 eps)`` elementwise (some tangents
``None``). Each returned expression must type-check to exactly its argument's type (the
output's type for tangents). Calls come from the conformance kit's valid-call strategies, with
every dtype made float64 (so all their shapes and attributes are exercised: strides, padding,
dilation, groups incl. depthwise, layouts, ceil_mode, count_include_pad, zero-size tensors);
inputs of the piecewise-linear operators stay away from their kinks and ties.

Also: completeness of both tables for the two families; every operator a rule emits has a rule
itself (so gradients of gradients work) once the other families' rules are loaded; examples of
mixed dtypes (``out_dtype``), the unsupported cases, and the documented choices (max-pool ties,
dropout).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ad.rules  # noqa: F401  (registers every family's rules)
from conformance.strategies.ops import op_call_args
from conformance.strategies.ops_grad import nonempty_call
from interpreter import evaluate
from semantics import ops
from semantics.errors import RelayTypeError
from semantics.expr import Attrs, Call, Expr, Function, Op, Tuple, Var, children
from semantics.ops.tables import GRADIENTS, TANGENTS, missing
from semantics.structural.types import types_equal
from semantics.types import TensorType, TupleType, Type
from typechecker import infer

NN_OPS = sorted(n for n in ops.list_ops() if ops.get(n).family == "nn")
GRAD_OPS = sorted(n for n in ops.list_ops() if ops.get(n).family == "grad_ops")
ALL_OPS = NN_OPS + GRAD_OPS
# Inference rewrites with a tangent but, by declaration, no reverse rule (AlterOpLayout makes
# them at -O3, after differentiation; ad/rules/winograd.py gives the reason).
INFERENCE_ONLY = frozenset({"nn.contrib_conv2d_winograd_weight_transform",
                            "nn.contrib_conv2d_winograd_without_weight_transform"})

EPS = 1e-6
RULE_SETTINGS = settings(max_examples=40, deadline=None,
                         suppress_health_check=[HealthCheck.too_slow,
                                                HealthCheck.data_too_large])


# --- building and evaluating a rule ---------------------------------------------------------

def typed_call(name: str, arg_types: Sequence[Type], attrs: dict[str, Any]) -> Call:
    """``name(%a0, ..)`` over variables of ``arg_types``, type-checked."""
    params = tuple(Var(f"a{i}", t) for i, t in enumerate(arg_types))
    fn = infer(Function(params, Call(Op(name), params, Attrs(attrs))))
    assert isinstance(fn, Function) and isinstance(fn.body, Call)
    return fn.body


def typed_var(name: str, t: Type) -> Var:
    return Var(name, t, checked_type=t)


def is_float_type(t: Type) -> bool:
    return isinstance(t, TensorType) and t.dtype.startswith("float")


def run(params: Sequence[Var], body: Expr, values: Sequence[Any]) -> tuple[Any, Type]:
    """Evaluate ``body`` over ``params`` bound to ``values``; also return its checked type."""
    fn = Function(tuple(params), body)
    typed = infer(fn)
    assert isinstance(typed, Function) and typed.body.checked_type is not None
    return evaluate(fn, *values), typed.body.checked_type


def flat(value: Any) -> list[np.ndarray]:
    return [a for v in value for a in flat(v)] if isinstance(value, tuple) else [value]


def like(value: Any, rng: np.random.Generator) -> Any:
    if isinstance(value, tuple):
        return tuple(like(v, rng) for v in value)
    return rng.standard_normal(value.shape).astype(value.dtype)


def rule_grads(c: Call, values: Sequence[np.ndarray], out: Any, ct: Any
               ) -> list[np.ndarray | None]:
    """The reverse rule's entries, evaluated; each is checked to have its argument's type."""
    out_t = c.checked_type
    assert out_t is not None
    out_v, ct_v = typed_var("out", out_t), typed_var("ct", out_t)
    entries = GRADIENTS.lookup(c.op.name)(c, out_v, ct_v)  # type: ignore[attr-defined]
    assert len(entries) == len(c.args)
    present = [e for e in entries if e is not None]
    params = [a for a in c.args if isinstance(a, Var)]
    result, rtype = run([*params, out_v, ct_v], Tuple(tuple(present)), [*values, out, ct])
    assert isinstance(rtype, TupleType)
    got: list[np.ndarray | None] = []
    it = iter(zip(result, rtype.fields, strict=True))
    for arg, entry in zip(c.args, entries, strict=True):
        arg_t = arg.checked_type
        assert arg_t is not None
        if entry is None:
            assert not is_float_type(arg_t), f"no gradient for the float argument {arg_t}"
            got.append(None)
            continue
        value, t = next(it)
        assert types_equal(t, arg_t), f"gradient of type {t} for an argument of type {arg_t}"
        got.append(value)
    return got


def rule_tangent(c: Call, values: Sequence[np.ndarray], out: Any,
                 tangents: Sequence[np.ndarray | None]) -> Any:
    """The tangent rule's value (``None`` tangents passed as ``None``), type-checked."""
    out_t = c.checked_type
    assert out_t is not None
    out_v = typed_var("out", out_t)
    tvars: list[Expr | None] = [None if t is None else typed_var(f"t{i}", a.checked_type)
                                for i, (a, t) in enumerate(zip(c.args, tangents, strict=True))]
    expr = TANGENTS.lookup(c.op.name)(c, out_v, tvars)  # type: ignore[attr-defined]
    if expr is None:
        assert all(t is None for t in tangents) or not is_float_type(out_t), \
            "no tangent for a float output of float tangents"
        return None
    params = [a for a in c.args if isinstance(a, Var)]
    used = [v for v in tvars if isinstance(v, Var)]
    result, rtype = run([*params, out_v, *used], expr,
                        [*values, out, *(t for t in tangents if t is not None)])
    assert types_equal(rtype, out_t), f"tangent of type {rtype} for an output of type {out_t}"
    return result


def apply(name: str, values: Sequence[np.ndarray], attrs: dict[str, Any]) -> Any:
    return ops.get(name).reference(*values, **attrs)


def shifted(values: Sequence[np.ndarray], dirs: Sequence[np.ndarray | None], h: float
            ) -> list[np.ndarray]:
    return [v if d is None else v + h * d for v, d in zip(values, dirs, strict=True)]


def difference(name: str, values: Sequence[np.ndarray], dirs: Sequence[np.ndarray | None],
               attrs: dict[str, Any]) -> list[np.ndarray]:
    """``(f(x + eps d) - f(x - eps d)) / (2 eps)``, per output field (subtracting first, so
    that max pooling's padding value, the lowest float, cancels exactly)."""
    hi = flat(apply(name, shifted(values, dirs, EPS), attrs))
    lo = flat(apply(name, shifted(values, dirs, -EPS), attrs))
    return [(a - b) / (2 * EPS) for a, b in zip(hi, lo, strict=True)]


def check_rules(name: str, arg_types: Sequence[Type], attrs: dict[str, Any],
                values: Sequence[np.ndarray], rng: np.random.Generator,
                keep: Sequence[bool]) -> None:
    """Both rules of ``name`` against central differences at ``values`` (see the docstring)."""
    c = typed_call(name, arg_types, attrs)
    floats = [is_float_type(t) for t in arg_types]
    out = apply(name, values, attrs)
    ct = like(out, rng)
    dirs = [like(v, rng) if f else None for v, f in zip(values, floats, strict=True)]
    fd = difference(name, values, dirs, attrs)
    # reverse: sum_i <grad_i, v_i> = <ct, J v>
    if name not in INFERENCE_ONLY:
        grads = rule_grads(c, values, out, ct)
        lhs_terms = [g * d for g, d in zip(grads, dirs, strict=True) if g is not None
                     and d is not None]
        lhs = sum(float(t.sum()) for t in lhs_terms)
        rhs_terms = [a * b for a, b in zip(flat(ct), fd, strict=True)]
        rhs = sum(float(t.sum()) for t in rhs_terms)
        scale = sum(float(np.abs(t).sum()) for t in lhs_terms + rhs_terms)
        assert abs(lhs - rhs) <= 1e-6 * (1.0 + scale), \
            f"{name}: <grad, v> = {lhs} but the finite difference gives {rhs}"
    # forward: the tangent along the kept directions
    tdirs = [d if k else None for d, k in zip(dirs, keep, strict=True)]
    tangent = rule_tangent(c, values, out, tdirs)
    want = difference(name, values, tdirs, attrs)
    got = flat(tangent) if tangent is not None else [np.zeros_like(w) for w in want]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6,
                                   err_msg=f"{name}: tangent vs. finite difference")


# --- calls and inputs -------------------------------------------------------------------------

def as_float64(t: Type, keep_int: bool = False) -> Type:
    if isinstance(t, TensorType) and not (keep_int and not t.dtype.startswith("float")):
        return TensorType(t.shape, "float64")
    return t


@st.composite
def float64_calls(draw: st.DrawFn, name: str) -> tuple[tuple[Type, ...], dict[str, Any]]:
    """A valid call of ``name`` from the conformance kit (for the windowed operators mostly one
    with elements everywhere), every tensor made float64 (nn.pad's pad value sometimes keeps an
    integer dtype) and ``out_dtype`` dropped."""
    nonempty = nonempty_call(name)
    use_kit = nonempty is None or draw(st.sampled_from(("nonempty", "nonempty", "kit"))) == "kit"
    arg_types, attrs = draw(op_call_args(name) if use_kit or nonempty is None else nonempty)
    keep_int = name == "nn.pad" and draw(st.booleans())
    types = tuple(as_float64(t, keep_int and i == 1) for i, t in enumerate(arg_types))
    return types, {k: v for k, v in attrs.items() if k != "out_dtype"}


KINKED_DATA = {"nn.relu": 0, "nn.leaky_relu": 0, "nn.max_pool2d": 0, "nn.global_max_pool2d": 0,
               "nn.max_pool2d_grad": 1, "nn.max_pool2d_pick": 0}


def inputs(name: str, arg_types: Sequence[Type], rng: np.random.Generator) -> list[np.ndarray]:
    """Arguments away from kinks and ties (distinct values 0.05 apart for the max pools, |x| >=
    0.2 for the rectifiers) and with positive variance for batch_norm."""
    out = []
    for i, t in enumerate(arg_types):
        assert isinstance(t, TensorType)
        shape = tuple(int(d) for d in t.shape)
        if not t.dtype.startswith("float"):
            out.append(rng.integers(-3, 4, size=shape).astype(t.dtype))
            continue
        x = rng.standard_normal(shape)
        if KINKED_DATA.get(name) == i:
            if name in ("nn.relu", "nn.leaky_relu"):
                x = np.sign(x + (x == 0)) * rng.uniform(0.2, 2.0, shape)
            else:
                size = int(np.prod(shape))
                x = ((rng.permutation(size) - size / 2) * 0.05).reshape(shape)
        if name == "nn.batch_norm" and i == 4:
            x = rng.uniform(0.5, 2.0, shape)
        out.append(x.astype(t.dtype))
    return out


@pytest.mark.parametrize("name", ALL_OPS)
@RULE_SETTINGS
@given(data=st.data())
def test_rules_match_central_differences(name: str, data: st.DataObject) -> None:
    arg_types, attrs = data.draw(float64_calls(name), label="call")
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    keep = data.draw(st.lists(st.booleans(), min_size=len(arg_types),
                              max_size=len(arg_types)), label="tangents kept")
    rng = np.random.default_rng(seed)
    check_rules(name, arg_types, attrs, inputs(name, arg_types, rng), rng, keep)


# --- completeness and closure -------------------------------------------------------------------

def test_every_nn_and_grad_ops_operator_has_both_rules() -> None:
    assert missing(GRADIENTS, among=ALL_OPS) == []
    assert missing(TANGENTS, among=ALL_OPS) == []
    for name in ALL_OPS:
        assert TANGENTS.has(name), name
        assert GRADIENTS.has(name) != (name in INFERENCE_ONLY), name
    for name in INFERENCE_ONLY:
        assert "inference rewrite" in (GRADIENTS.reason(name) or ""), name


def emitted_ops(e: Expr | None) -> set[str]:
    """The operators called anywhere in ``e``."""
    found: set[str] = set()
    stack = [] if e is None else [e]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Call) and isinstance(node.op, Op):
            found.add(node.op.name)
        stack.extend(children(node))
    return found


@pytest.mark.parametrize("name", ALL_OPS)
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_rules_emit_only_differentiable_operators(name: str, data: st.DataObject) -> None:
    arg_types, attrs = data.draw(float64_calls(name))
    c = typed_call(name, arg_types, attrs)
    assert c.checked_type is not None
    out, g = typed_var("out", c.checked_type), typed_var("g", c.checked_type)
    used: set[str] = set()
    for entry in ([] if name in INFERENCE_ONLY else GRADIENTS.lookup(name)(c, out, g)):
        used |= emitted_ops(entry)
    tangents = [typed_var(f"t{i}", a.checked_type) if is_float_type(a.checked_type) else None
                for i, a in enumerate(c.args)]
    used |= emitted_ops(TANGENTS.lookup(name)(c, out, tangents))
    for op in used:
        assert ops.exists(op)
        if ops.get(op).family in ("nn", "grad_ops") or _other_families_loaded():
            assert GRADIENTS.has(op) or op in INFERENCE_ONLY, \
                f"{name}'s rules emit {op}, which has no gradient"
            assert TANGENTS.has(op), f"{name}'s rules emit {op}, which has no tangent"


def _other_families_loaded() -> bool:
    """Whether the rules of the tensor, reduce and transform families (another module's) are
    registered; until then only this file's families are checked for closure."""
    return all(f in ad.rules.FAMILIES for f in ("tensor", "reduce", "transform"))


# --- examples ---------------------------------------------------------------------------------

def T(shape: Sequence[int], dtype: str = "float64") -> TensorType:
    return TensorType(tuple(shape), dtype)


def _check(name: str, arg_types: Sequence[Type], attrs: dict[str, Any], seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    check_rules(name, arg_types, attrs, inputs(name, arg_types, rng), rng,
                [True] * len(arg_types))


@pytest.mark.parametrize("attrs", [
    {"strides": [2, 2], "padding": [1, 1]},
    {"strides": [3, 2], "padding": [0, 1, 2, 0], "dilation": [2, 1]},
    {"groups": 2},
    {"groups": 4, "strides": [2, 2], "padding": [1]},            # depthwise
    {"data_layout": "NHWC", "kernel_layout": "HWIO", "strides": [2, 1]},
    {"data_layout": "NHWC", "kernel_layout": "HWOI", "out_layout": "NCHW", "groups": 4},
])
def test_conv2d_examples(attrs: dict[str, Any]) -> None:
    dl, kl = attrs.get("data_layout", "NCHW"), attrs.get("kernel_layout", "OIHW")
    dims = {"N": 2, "C": 4, "H": 7, "W": 6}
    groups = attrs.get("groups", 1)
    wdims = {"O": 4, "I": 4 // groups, "H": 3, "W": 2}
    _check("nn.conv2d", [T([dims[a] for a in dl]), T([wdims[a] for a in kl])], attrs)


def test_conv2d_second_order_operators_check_too() -> None:
    """The data gradient of conv2d is a conv2d_transpose whose rules are again checked."""
    _check("nn.conv2d_transpose", [T((2, 4, 3, 3)), T((4, 3, 3, 3))],
           {"strides": [2, 2], "padding": [1, 1], "output_padding": [1, 0]})
    _check("nn.conv2d_backward_weight", [T((2, 4, 4, 4)), T((2, 3, 7, 6))],
           {"strides": [2, 2], "padding": [1, 1], "kernel_size": [3, 2]})


@pytest.mark.parametrize("name, attrs", [
    ("nn.max_pool2d", {"pool_size": [3, 3], "strides": [2, 2], "padding": [1],
                       "ceil_mode": True}),
    ("nn.avg_pool2d", {"pool_size": [3, 2], "strides": [2, 2], "padding": [1, 0, 2, 1],
                       "ceil_mode": True, "count_include_pad": True}),
    ("nn.avg_pool2d", {"pool_size": [2, 2], "padding": [1], "count_include_pad": False}),
    ("nn.max_pool2d", {"pool_size": [2, 2], "dilation": [2, 1], "layout": "NHWC",
                       "out_layout": "NCHW"}),
])
def test_pool_examples(name: str, attrs: dict[str, Any]) -> None:
    layout = attrs.get("layout", "NCHW")
    dims = {"N": 2, "C": 3, "H": 7, "W": 6}
    _check(name, [T([dims[a] for a in layout])], attrs)


def test_mixed_precision_gradients_are_cast_back() -> None:
    """float32 operands with a float64 out_dtype: gradients come back as float32 and agree
    with the float64 computation."""
    rng = np.random.default_rng(1)
    cases = [("nn.dense", [T((3, 4), "float32"), T((5, 4), "float32")], {}),
             ("nn.batch_matmul", [T((1, 3, 4), "float32"), T((2, 5, 4), "float32")], {}),
             ("nn.conv2d", [T((1, 2, 5, 5), "float32"), T((3, 2, 3, 3), "float32")],
              {"strides": [2, 2]})]
    for name, types, attrs in cases:
        values = [rng.standard_normal(tuple(t.shape)).astype("float32") for t in types]
        c32 = typed_call(name, types, {**attrs, "out_dtype": "float64"})
        c64 = typed_call(name, [T(t.shape) for t in types], attrs)
        out = apply(name, values, {**attrs, "out_dtype": "float64"})
        ct = rng.standard_normal(out.shape)
        got = rule_grads(c32, values, out, ct)
        want = rule_grads(c64, [v.astype("float64") for v in values], out, ct)
        for g, w in zip(got, want, strict=True):
            assert g is not None and w is not None and g.dtype == np.float32
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_integer_operands_carry_no_gradient() -> None:
    c = typed_call("nn.dense", [T((2, 3), "int8"), T((4, 3), "int8")], {"out_dtype": "int32"})
    out, g = typed_var("out", c.checked_type), typed_var("g", c.checked_type)  # type: ignore
    assert GRADIENTS.lookup("nn.dense")(c, out, g) == [None, None]
    c = typed_call("nn.pad", [T((2, 3)), T((), "int32")], {"pad_width": [[1, 0], [0, 2]]})
    out, g = typed_var("out", c.checked_type), typed_var("g", c.checked_type)  # type: ignore
    grads = GRADIENTS.lookup("nn.pad")(c, out, g)
    assert grads[0] is not None and grads[1] is None


def test_blocked_conv_layouts_are_rejected_with_a_type_error() -> None:
    c = typed_call("nn.conv2d", [T((1, 1, 4, 4, 4)), T((2, 1, 3, 3, 4, 4))],
                   {"data_layout": "NCHW4c", "kernel_layout": "OIHW4i4o"})
    out, g = typed_var("out", c.checked_type), typed_var("g", c.checked_type)  # type: ignore
    with pytest.raises(RelayTypeError, match="no gradient for this call of nn.conv2d: blocked"):
        GRADIENTS.lookup("nn.conv2d")(c, out, g)


def test_max_pool_gradient_goes_to_the_first_maximum_of_a_window() -> None:
    x = np.array([[[[1.0, 3.0], [3.0, 2.0]]]])
    c = typed_call("nn.max_pool2d", [T((1, 1, 2, 2))], {"pool_size": [2, 2]})
    (dx,) = rule_grads(c, [x], apply("nn.max_pool2d", [x], {"pool_size": [2, 2]}),
                       np.array([[[[5.0]]]]))
    np.testing.assert_array_equal(dx, [[[[0.0, 5.0], [0.0, 0.0]]]])


def test_dropout_is_the_identity_at_inference() -> None:
    c = typed_call("nn.dropout", [T((2, 3))], {"rate": 0.3})
    x = np.arange(6.0).reshape(2, 3)
    ct = (np.full((2, 3), 2.0), np.full((2, 3), 7.0))
    (dx,) = rule_grads(c, [x], apply("nn.dropout", [x], {"rate": 0.3}), ct)
    np.testing.assert_array_equal(dx, ct[0])
    tangent = rule_tangent(c, [x], apply("nn.dropout", [x], {}), [np.ones((2, 3))])
    np.testing.assert_array_equal(tangent[0], np.ones((2, 3)))
    np.testing.assert_array_equal(tangent[1], np.zeros((2, 3)))


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad_modes(mode: str) -> None:
    _check("nn.pad", [T((3, 4, 2)), T(())],
           {"pad_width": [[2, 1], [0, 3], [1, 1]], "pad_mode": mode})


# --- symbolic shapes ----------------------------------------------------------------------------

def _rule_types(c: Call) -> tuple[list[Type | None], Type | None]:
    """The checked types of the gradient entries and of the full tangent of ``c``."""
    assert c.checked_type is not None
    out, g = typed_var("out", c.checked_type), typed_var("g", c.checked_type)
    params = [a for a in c.args if isinstance(a, Var)]
    entries = GRADIENTS.lookup(c.op.name)(c, out, g)  # type: ignore[attr-defined]
    fn = infer(Function((*params, out, g), Tuple(tuple(e for e in entries if e is not None))))
    assert isinstance(fn, Function) and isinstance(fn.body.checked_type, TupleType)
    it = iter(fn.body.checked_type.fields)
    grads: list[Type | None] = [None if e is None else next(it) for e in entries]
    tvars = [typed_var(f"t{i}", a.checked_type) if is_float_type(a.checked_type) else None
             for i, a in enumerate(c.args)]  # type: ignore[arg-type]
    expr = TANGENTS.lookup(c.op.name)(c, out, tvars)  # type: ignore[attr-defined]
    if expr is None:
        return grads, None
    tfn = infer(Function((*params, out, *(v for v in tvars if v is not None)), expr))
    assert isinstance(tfn, Function)
    return grads, tfn.body.checked_type


@pytest.mark.parametrize("name, types, attrs", [
    ("nn.dense", [("n", "m", 4), (3, 4)], {}),
    ("nn.batch_matmul", [("n", 3, 4), ("n", 5, 4)], {}),
    ("nn.softmax", [("n", 5)], {"axis": 1}),
    ("nn.log_softmax", [(2, "n")], {}),
    ("nn.conv2d", [("n", 3, "h", "w"), (4, 3, 3, 3)], {"padding": [1, 1]}),
    ("nn.max_pool2d", [("n", 3, "h", "w")], {"pool_size": [2, 2], "strides": [2, 2]}),
    ("nn.avg_pool2d", [("n", 3, "h", "w")], {"pool_size": [3, 3], "padding": [1]}),
    ("nn.batch_norm", [("n", 3, "h"), (3,), (3,), (3,), (3,)], {}),
    ("nn.bias_add", [("n", 3), (3,)], {"axis": -1}),
    ("nn.batch_flatten", [("n", 3, 4)], {}),
    ("nn.pad", [("n", 3), ()], {"pad_width": [[1, 2], [0, 1]]}),
    ("nn.relu", [("n",)], {}),
])
def test_rules_type_check_over_symbolic_shapes(name: str, types: list[tuple[Any, ...]],
                                               attrs: dict[str, Any]) -> None:
    from semantics.shapes import shape_var

    arg_types = [T([shape_var(d) if isinstance(d, str) else d for d in shape]) for shape in types]
    c = typed_call(name, arg_types, attrs)
    grads, tangent = _rule_types(c)
    for arg, t in zip(c.args, grads, strict=True):
        assert t is not None and arg.checked_type is not None
        assert types_equal(t, arg.checked_type), (t, arg.checked_type)
    assert tangent is not None and c.checked_type is not None
    assert types_equal(tangent, c.checked_type), (tangent, c.checked_type)


@pytest.mark.parametrize("name, types, attrs, what", [
    ("nn.conv2d", [(1, 3, "h", 8), (4, 3, 3, 3)], {"strides": [2, 2]}, "the data's height"),
    ("nn.global_avg_pool2d", [(1, 3, "h", 4)], {}, "the data's height"),
    ("nn.pad", [("n", 3)], {"pad_width": [[1, 0], [0, 0]], "pad_mode": "edge"}, "axis 0"),
])
def test_rules_that_need_concrete_extents_say_so(name: str, types: list[tuple[Any, ...]],
                                                 attrs: dict[str, Any], what: str) -> None:
    from semantics.shapes import shape_var

    arg_types = [T([shape_var(d) if isinstance(d, str) else d for d in shape]) for shape in types]
    if name == "nn.pad":
        arg_types.append(T(()))
    c = typed_call(name, arg_types, attrs)
    out, g = typed_var("out", c.checked_type), typed_var("g", c.checked_type)  # type: ignore
    with pytest.raises(RelayTypeError, match=f"no gradient for this call of {name}: {what}"):
        GRADIENTS.lookup(name)(c, out, g)


@pytest.mark.parametrize("name", ALL_OPS)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_rule_outputs_print_and_reparse(name: str, data: st.DataObject) -> None:
    """What the rules build is ordinary Relay text: it prints and re-parses alpha-equivalently
    (attribute values such as nested pad widths and ``None`` slice ends included)."""
    from semantics import alpha_equal, parse_expr, pretty

    arg_types, attrs = data.draw(float64_calls(name))
    c = typed_call(name, arg_types, attrs)
    assert c.checked_type is not None
    out, g = typed_var("out", c.checked_type), typed_var("g", c.checked_type)
    params = [a for a in c.args if isinstance(a, Var)]
    entries = [] if name in INFERENCE_ONLY else [
        e for e in GRADIENTS.lookup(name)(c, out, g) if e is not None]
    tvars = [typed_var(f"t{i}", a.checked_type) if is_float_type(a.checked_type) else None
             for i, a in enumerate(c.args)]  # type: ignore[arg-type]
    tangent = TANGENTS.lookup(name)(c, out, tvars)
    body = Tuple((*entries, *(() if tangent is None else (tangent,))))
    fn = Function((*params, out, g, *(v for v in tvars if v is not None)), body)
    assert alpha_equal(parse_expr(pretty(fn)), fn)
