"""Numerical checks of single differentiation rules, without the AD transformation.

For an operator call ``f(x_1..x_n)`` over typed variables, the rule's Relay expressions are
evaluated by the oracle (``interpreter.evaluate``) and compared with central finite
differences of the operator's numpy reference in float64:

* reverse rule: ``sum_i <grad_i, v_i>`` against
  ``(<g, f(x + eps v)> - <g, f(x - eps v)>) / (2 eps)`` for random ``g`` and directions ``v``;
* forward rule: the tangent ``jvp(x; v)`` against ``(f(x + eps v) - f(x - eps v)) / (2 eps)``
  elementwise.

Both checks also type-check the rule's expressions: each gradient must have exactly its
argument's type, the tangent exactly the output's type.

Entry points: :func:`float64_cases` (a Hypothesis strategy: a valid call from the conformance
strategies turned to float64, with inputs away from kinks), :func:`check_gradient`,
:func:`check_tangent`, :func:`check_rule_types` (any dtype; also checks that every float
operator the rule emits has rules itself), :func:`run_gradient` (values for example tests).
:mod:`second_order` differentiates rule outputs again.

Per-operator knowledge lives in four tables keyed by operator name, which other rule tests
may extend for their own operators: :data:`DOMAINS` (where inputs are drawn),
:data:`KEEP_DTYPE` and :data:`NON_DATA` (index, condition and shape-only arguments) and
:data:`INPUT_OVERRIDES` (a whole input tuple, e.g. ``arange``'s bounds).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from conformance.strategies.ops import op_call_args, op_inputs
from interpreter import evaluate
from semantics import types_equal
from semantics.errors import RelayTypeError
from semantics.expr import Attrs, Call, Expr, Function, Op, Tuple, Var
from semantics.ops import get
from semantics.ops.tables import GRADIENTS, TANGENTS
from semantics.types import TensorType, TupleType, Type
from semantics.visitor import post_order
from typechecker import infer

EPS = 1e-6
RTOL = 1e-6

# Positions that are never differentiable data (indices, conditions): their dtype is kept.
KEEP_DTYPE: dict[str, tuple[int, ...]] = {"take": (1,), "where": (0,)}
# Positions whose values do not matter (indices, conditions, shape-only arguments): no
# derivative flows into them, whatever their dtype.
NON_DATA: dict[str, tuple[int, ...]] = {
    **KEEP_DTYPE, "reshape_like": (1,), "broadcast_to_like": (1,), "collapse_sum_like": (1,),
    "zeros_like": (0,), "ones_like": (0,), "full_like": (0,),
}

# Per operator and argument position, how a standard normal sample is mapped into the
# region where the operator is smooth (away from poles, kinks and rounding boundaries).
Domain = Callable[[np.ndarray, np.random.Generator], np.ndarray]


def positive(z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Values in [0.5, inf): a safe domain for log, sqrt, rsqrt, power's base."""
    return 0.5 + np.abs(z)


def away_from_zero(z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Values with magnitude >= 0.5: a safe divisor."""
    return np.where(z < 0, -0.5, 0.5) + z


def off_grid(z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Values whose fractional part is in [0.1, 0.4] or [0.6, 0.9]: away from the
    discontinuities of floor, ceil, trunc and round."""
    base = np.floor(3 * z)
    frac = rng.uniform(0.1, 0.4, size=z.shape) + 0.5 * rng.integers(0, 2, size=z.shape)
    return base + frac


def some_zeros(z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Normal values with about a third of them set to exactly 0 (prod's special cases)."""
    return np.where(rng.uniform(size=z.shape) < 0.3, 0.0, z)


DOMAINS: dict[tuple[str, int], Domain] = {
    ("log", 0): positive, ("sqrt", 0): positive, ("rsqrt", 0): positive,
    ("power", 0): positive, ("divide", 1): away_from_zero, ("mod", 1): away_from_zero,
    ("floor_mod", 1): away_from_zero, ("floor_divide", 1): away_from_zero,
    ("floor", 0): off_grid, ("ceil", 0): off_grid, ("trunc", 0): off_grid,
    ("round", 0): off_grid, ("floor_divide", 0): off_grid, ("prod", 0): some_zeros,
}


# --- types -----------------------------------------------------------------------------------

def is_float_type(t: Type) -> bool:
    """A float tensor, or a tuple of them."""
    if isinstance(t, TupleType):
        return bool(t.fields) and all(is_float_type(f) for f in t.fields)
    return isinstance(t, TensorType) and t.dtype.startswith("float")


def _to_float64(t: Type) -> Type:
    if isinstance(t, TupleType):
        return TupleType(tuple(_to_float64(f) for f in t.fields))
    if isinstance(t, TensorType):
        return TensorType(tuple(t.shape), "float64")
    return t


def float64_call(name: str, arg_types: Sequence[Type], attrs: dict[str, Any]
                 ) -> tuple[tuple[Type, ...], dict[str, Any]]:
    """The same call with every data argument (and a ``dtype``/``out_dtype`` attribute) in
    float64."""
    keep = KEEP_DTYPE.get(name, ())
    types = tuple(t if i in keep else _to_float64(t) for i, t in enumerate(arg_types))
    attrs = dict(attrs)
    for key in ("dtype", "out_dtype"):
        if attrs.get(key):                 # None / "" mean "the input's dtype"
            attrs[key] = "float64"
    return types, attrs


@st.composite
def float64_calls(draw: st.DrawFn, name: str) -> tuple[tuple[Type, ...], dict[str, Any]]:
    """A valid call of ``name`` from the conformance strategies, turned to float64 (calls
    the relation then rejects, e.g. a float shape argument, are discarded)."""
    arg_types, attrs = draw(op_call_args(name))
    types, attrs = float64_call(name, arg_types, attrs)
    try:
        typed_call(name, types, attrs)
    except RelayTypeError:
        assume(False)
    return types, attrs


# --- building the call and running rules ------------------------------------------------------

def param_type(p: Var) -> Type:
    """The checked type of a typed parameter."""
    assert p.checked_type is not None, f"untyped parameter %{p.name_hint}"
    return p.checked_type


def rule_var(name: str, t: Type) -> Var:
    """A variable annotated with ``t`` and carrying it as ``checked_type`` (a rule atom)."""
    return Var(name, t, checked_type=t)


def typed_call(name: str, arg_types: Sequence[Type], attrs: dict[str, Any]
               ) -> tuple[tuple[Var, ...], Call]:
    """``fn(x_1..x_n) { name(x_1..x_n) }`` type-checked: its parameters and its typed call.

    Raises:
        RelayTypeError: the relation rejects the call.
    """
    params = tuple(Var(f"x{i}", t) for i, t in enumerate(arg_types))
    fn = infer(Function(params, Call(Op(name), params, Attrs(attrs))))
    assert isinstance(fn, Function) and isinstance(fn.body, Call)
    return fn.params, fn.body


@dataclass
class RuleRun:
    """One operator call prepared for a rule check."""

    name: str
    params: tuple[Var, ...]
    call: Call
    out: Var
    out_type: Type
    attrs: dict[str, Any] = field(default_factory=dict)


def prepare(name: str, arg_types: Sequence[Type], attrs: dict[str, Any]) -> RuleRun:
    """Type the call and make the ``out`` atom."""
    params, c = typed_call(name, arg_types, attrs)
    assert c.checked_type is not None
    return RuleRun(name, params, c, rule_var("out", c.checked_type), c.checked_type,
                   dict(attrs))


def check_differentiable_again(typed: Expr, what: str) -> None:
    """Every operator call with a float result in ``typed`` (an inferred rule expression) has
    a gradient and a tangent rule, so the rule's output can be differentiated again."""
    for node in post_order(typed):
        if isinstance(node, Call) and isinstance(node.op, Op) and node.checked_type is not None \
                and is_float_type(node.checked_type):
            assert GRADIENTS.has(node.op.name), f"{what} uses {node.op.name}: no gradient rule"
            assert TANGENTS.has(node.op.name), f"{what} uses {node.op.name}: no tangent rule"


def _check_fn_types(fn: Function, expected: Sequence[Type], what: str) -> None:
    typed = infer(fn)
    assert isinstance(typed, Function)
    check_differentiable_again(typed.body, what)
    ret = typed.body.checked_type
    assert isinstance(ret, TupleType), ret
    assert len(ret.fields) == len(expected)
    for got, want in zip(ret.fields, expected, strict=True):
        assert types_equal(got, want), f"{what}: rule built {got}, expected {want}"


def gradient_exprs(run: RuleRun, g: Var) -> list[Expr | None]:
    """The gradient rule's expressions for ``run``."""
    rule = GRADIENTS.lookup(run.name)
    grads = rule(run.call, run.out, g)
    assert len(grads) == len(run.call.args), f"{run.name}: one entry per argument"
    return list(grads)


def tangent_expr(run: RuleRun, tangents: list[Var | None]) -> Expr | None:
    """The tangent rule's expression for ``run``."""
    rule = TANGENTS.lookup(run.name)
    return rule(run.call, run.out, list(tangents))


def check_rule_types(name: str, arg_types: Sequence[Type], attrs: dict[str, Any]) -> None:
    """The gradient and tangent rules build well-typed expressions of the argument / output
    types, ``None`` exactly for the arguments that carry no derivative (any dtype)."""
    run = prepare(name, arg_types, attrs)
    g = rule_var("g", run.out_type)
    grads = gradient_exprs(run, g)
    present = [i for i, e in enumerate(grads) if e is not None]
    for i in present:
        assert is_float_type(param_type(run.params[i])), \
            f"{name}: a gradient for non-float argument {i}"
    fn = Function(run.params + (run.out, g), Tuple(tuple(e for e in grads if e is not None)))
    _check_fn_types(fn, [param_type(run.params[i]) for i in present], f"{name} gradient")
    tangents = [rule_var(f"t{i}", param_type(p)) if is_float_type(param_type(p)) else None
                for i, p in enumerate(run.params)]
    t = tangent_expr(run, tangents)
    if t is None:
        return
    assert is_float_type(run.out_type), f"{name}: a tangent for a non-float output"
    fn = Function(run.params + (run.out,) + tuple(v for v in tangents if v is not None),
                  Tuple((t,)))
    _check_fn_types(fn, [run.out_type], f"{name} tangent")


# --- values ----------------------------------------------------------------------------------

def _leaves(v: Any) -> list[np.ndarray]:
    if isinstance(v, tuple):
        return [a for f in v for a in _leaves(f)]
    return [np.asarray(v)]


def inner(a: Any, b: Any) -> float:
    """``<a, b>`` over tensors or (nested) tuples of tensors, in float64."""
    return float(sum(np.sum(np.asarray(x, np.float64) * np.asarray(y, np.float64))
                     for x, y in zip(_leaves(a), _leaves(b), strict=True)))


def _random_like(t: Type, rng: np.random.Generator) -> Any:
    if isinstance(t, TupleType):
        return tuple(_random_like(f, rng) for f in t.fields)
    assert isinstance(t, TensorType)
    shape = []
    for d in t.shape:
        assert isinstance(d, int), f"a concrete shape is needed, got {t}"
        shape.append(d)
    return rng.standard_normal(tuple(shape))


def _random_like_value(v: Any, rng: np.random.Generator) -> Any:
    if isinstance(v, tuple):
        return tuple(_random_like_value(f, rng) for f in v)
    return rng.standard_normal(np.shape(v))


def _axpy(x: Any, v: Any, eps: float) -> Any:
    if isinstance(x, tuple):
        return tuple(_axpy(a, b, eps) for a, b in zip(x, v, strict=True))
    return np.asarray(x + eps * v, dtype=np.float64)


def _sub_scale(a: Any, b: Any, scale: float) -> Any:
    if isinstance(a, tuple):
        return tuple(_sub_scale(x, y, scale) for x, y in zip(a, b, strict=True))
    return (np.asarray(a, np.float64) - np.asarray(b, np.float64)) / scale


def arange_inputs(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """``start, stop, step`` whose length ``ceil((stop - start) / step)`` is far from a jump."""
    start = 3 * rng.standard_normal()
    step = rng.choice([-1.0, 1.0]) * rng.uniform(0.3, 1.5)
    stop = start + step * (rng.integers(0, 7) + rng.uniform(0.2, 0.8))
    return tuple(np.asarray(v, dtype=np.float64) for v in (start, stop, step))


# Operators whose whole input tuple is drawn by a function of the generator.
INPUT_OVERRIDES: dict[str, Callable[[np.random.Generator], tuple[Any, ...]]] = {
    "arange": arange_inputs,
}


@st.composite
def rule_inputs(draw: st.DrawFn, name: str, arg_types: Sequence[Type],
                attrs: dict[str, Any]) -> tuple[Any, ...]:
    """Arguments for a float64 call: index / condition arrays from the conformance
    strategies, float data from a seeded normal sample mapped through :data:`DOMAINS`."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    override = INPUT_OVERRIDES.get(name)
    if override is not None and all(is_float_type(t) for t in arg_types):
        return override(rng)
    if all(isinstance(t, TensorType) for t in arg_types):
        base = draw(op_inputs(name, tuple(arg_types), attrs, exact=True))
    else:               # a tuple argument (concatenate, stack): float data only
        base = tuple(_random_like(t, rng) for t in arg_types)
    out = []
    for i, (t, v) in enumerate(zip(arg_types, base, strict=True)):
        if not is_float_type(t) or i in NON_DATA.get(name, ()):
            out.append(v)
            continue
        domain = DOMAINS.get((name, i))
        sample = _random_like(t, rng)
        if domain is not None:
            sample = _map(sample, functools.partial(_apply_domain, domain, rng))
        out.append(sample)
    return tuple(out)


def _apply_domain(domain: Domain, rng: np.random.Generator, z: np.ndarray) -> np.ndarray:
    return domain(z, rng)


def _map(v: Any, f: Callable[[np.ndarray], np.ndarray]) -> Any:
    if isinstance(v, tuple):
        return tuple(_map(x, f) for x in v)
    return f(v)


def run_gradient(name: str, arg_types: Sequence[Type], attrs: dict[str, Any],
                 args: Sequence[Any], out: Any, g: Any) -> list[Any]:
    """The values of the gradient rule's expressions (``None`` entries dropped) for ``args``,
    the output value ``out`` and the adjoint ``g``."""
    run = prepare(name, arg_types, attrs)
    gv = rule_var("g", run.out_type)
    exprs = gradient_exprs(run, gv)
    fn = Function(run.params + (run.out, gv), Tuple(tuple(e for e in exprs if e is not None)))
    return list(evaluate(fn, *args, out, g))


def reference(run: RuleRun, args: Sequence[Any]) -> Any:
    """The operator's numpy reference on ``args`` (float64 everywhere)."""
    return get(run.name).reference(*args, **run.attrs)


def _close(a: float, b: float, scale: float, what: str) -> None:
    assert abs(a - b) <= RTOL * (1.0 + scale), f"{what}: rule {a!r} vs finite difference {b!r}"


def check_gradient(name: str, arg_types: Sequence[Type], attrs: dict[str, Any],
                   args: Sequence[Any], seed: int) -> None:
    """Check the reverse rule of ``name`` at ``args`` against central finite differences.

    Raises:
        AssertionError: a gradient has the wrong type, or ``sum_i <grad_i, v_i>`` differs from
            the finite difference of ``<g, f>`` along ``v``.
    """
    rng = np.random.default_rng(seed)
    run = prepare(name, arg_types, attrs)
    g = rule_var("g", run.out_type)
    grads = gradient_exprs(run, g)
    present = [i for i, e in enumerate(grads) if e is not None]
    for i, p in enumerate(run.params):
        if p.checked_type is not None and is_float_type(p.checked_type) \
                and i not in NON_DATA.get(name, ()):
            assert grads[i] is not None, f"{name}: no gradient for float argument {i}"
    fn = Function(run.params + (run.out, g), Tuple(tuple(e for e in grads if e is not None)))
    _check_fn_types(fn, [param_type(run.params[i]) for i in present], f"{name} gradient")
    out_value = reference(run, args)
    assume(all(np.all(np.isfinite(a)) for a in _leaves(out_value)))
    g_value = _random_like_value(out_value, rng)
    values = evaluate(fn, *args, out_value, g_value)
    directions = {i: _random_like(run.params[i].checked_type, rng)  # type: ignore[arg-type]
                  for i in present}
    lhs = sum(inner(values[k], directions[i]) for k, i in enumerate(present))
    plus = [_axpy(a, directions[i], EPS) if i in directions else a for i, a in enumerate(args)]
    minus = [_axpy(a, directions[i], -EPS) if i in directions else a
             for i, a in enumerate(args)]
    rhs = (inner(g_value, reference(run, plus)) - inner(g_value, reference(run, minus))) \
        / (2 * EPS)
    scale = sum(float(np.sum(np.abs(x))) for x in _leaves(values)) + abs(rhs)
    _close(lhs, rhs, scale, f"{name} gradient")


def check_tangent(name: str, arg_types: Sequence[Type], attrs: dict[str, Any],
                  args: Sequence[Any], seed: int) -> None:
    """Check the forward rule of ``name`` at ``args`` against central finite differences.

    Raises:
        AssertionError: the tangent has the wrong type or differs from the finite difference.
    """
    rng = np.random.default_rng(seed)
    run = prepare(name, arg_types, attrs)
    diff = [i for i, p in enumerate(run.params)
            if p.checked_type is not None and is_float_type(p.checked_type)
            and i not in NON_DATA.get(name, ())]
    tangents: list[Var | None] = [None] * len(run.params)
    for i in diff:
        t = run.params[i].checked_type
        assert t is not None
        tangents[i] = rule_var(f"t{i}", t)
    expr = tangent_expr(run, tangents)
    if not diff or not is_float_type(run.out_type):
        assert expr is None, f"{name}: a tangent where none can flow"
        return
    assert expr is not None, f"{name}: no tangent for a float output"
    tvars = tuple(v for v in tangents if v is not None)
    fn = Function(run.params + (run.out,) + tvars, Tuple((expr,)))
    _check_fn_types(fn, [run.out_type], f"{name} tangent")
    directions = {i: _random_like(run.params[i].checked_type, rng)  # type: ignore[arg-type]
                  for i in diff}
    out_value = reference(run, args)
    assume(all(np.all(np.isfinite(a)) for a in _leaves(out_value)))
    (value,) = evaluate(fn, *args, out_value, *(directions[i] for i in diff))
    plus = [_axpy(a, directions[i], EPS) if i in directions else a for i, a in enumerate(args)]
    minus = [_axpy(a, directions[i], -EPS) if i in directions else a
             for i, a in enumerate(args)]
    fd = _sub_scale(reference(run, plus), reference(run, minus), 2 * EPS)
    for got, want in zip(_leaves(value), _leaves(fd), strict=True):
        assert got.shape == want.shape, f"{name} tangent: shape {got.shape} vs {want.shape}"
        scale = 1.0 + np.abs(want)
        bad = np.abs(got - want) > 10 * RTOL * scale
        assert not np.any(bad), f"{name} tangent: rule {got[bad]} vs finite difference " \
            f"{want[bad]}"


@st.composite
def float64_cases(draw: st.DrawFn, name: str) -> tuple[tuple[Type, ...], dict[str, Any],
                                                       tuple[Any, ...], int]:
    """``(arg_types, attrs, args, seed)`` for a float64 rule check of ``name``."""
    types, attrs = draw(float64_calls(name))
    args = draw(rule_inputs(name, types, attrs))
    return types, attrs, args, draw(st.integers(0, 2**32 - 1))
