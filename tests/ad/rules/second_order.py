"""Second-order checks of the rules: differentiate a rule's *output* with the rules again.

A rule's expression is straight-line code (operator calls, tuples, projections over atoms),
so a few lines of reverse mode suffice to differentiate it — a test-only stand-in for the AD
transformation, which is written in parallel.  :func:`reverse` turns ``fn(params) { body }``
into ``fn(params, h) { (body, (adjoint of each param)) }`` by let-binding every node,
walking the bindings backwards and asking ``GRADIENTS`` for each operator call with a float
result (the same contract the AD transformation uses: atoms with ``checked_type``).

:func:`check_second_order` applies it to the gradient rule of an operator with ``out``
replaced by the call itself, so the result is a Hessian-vector product of ``<g, f(x)>``, and
to the tangent rule (reverse over forward), and compares both with central finite
differences of the rule expression evaluated by the oracle.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from hypothesis import assume
from rulecheck import (
    EPS,
    NON_DATA,
    RTOL,
    _axpy,
    _leaves,
    _random_like_value,
    inner,
    is_float_type,
    prepare,
    reference,
    rule_var,
)

from ad.rules._build import call, item, tup, zeros_like
from interpreter import evaluate
from semantics.expr import Call, Constant, Expr, Function, Let, Op, Tuple, TupleGetItem, Var
from semantics.expr import children as expr_children
from semantics.ops.tables import GRADIENTS, TANGENTS
from semantics.types import TupleType, Type
from semantics.visitor import post_order
from typechecker import infer


def _typed(node: Expr, args: tuple[Expr, ...]) -> Expr:
    """``node`` rebuilt over atom children, keeping its checked type."""
    t = node.checked_type
    if isinstance(node, Call):
        return Call(node.op, args[1:], node.attrs, node.type_args, checked_type=t)
    if isinstance(node, Tuple):
        return Tuple(args, checked_type=t)
    if isinstance(node, TupleGetItem):
        return TupleGetItem(args[0], node.index, checked_type=t)
    raise TypeError(f"straight-line rule code only, got {type(node).__name__}")


def _add(a: Expr, b: Expr, t: Type) -> Expr:
    if isinstance(t, TupleType):
        return tup(*(_add(item(a, i), item(b, i), f) for i, f in enumerate(t.fields)))
    return call("add", a, b)


def reverse(params: tuple[Var, ...], body: Expr) -> Function:
    """``fn(params..., h) { (body, (d<h, body>/d param for each float param)) }``."""
    typed = infer(Function(params, body))
    assert isinstance(typed, Function)
    params, root = typed.params, typed.body
    atom: dict[int, Expr] = {}
    bindings: list[tuple[Var, Expr]] = []
    for node in post_order(root):
        if isinstance(node, (Var, Constant, Op)):
            atom[id(node)] = node
            continue
        value = _typed(node, tuple(atom[id(k)] for k in expr_children(node)))
        assert node.checked_type is not None
        v = rule_var(f"v{len(bindings)}", node.checked_type)
        bindings.append((v, value))
        atom[id(node)] = v
    assert root.checked_type is not None
    h = rule_var("h", root.checked_type)
    adjoints: dict[int, list[Expr]] = {id(atom[id(root)]): [h]}
    backward: list[tuple[Var, Expr]] = []

    def total(v: Expr) -> Expr | None:
        parts = adjoints.get(id(v))
        if not parts:
            return None
        assert v.checked_type is not None
        acc = parts[0]
        for p in parts[1:]:
            acc = _add(acc, p, v.checked_type)
        g = rule_var(f"a{len(backward)}", v.checked_type)
        backward.append((g, acc))
        return g

    for v, value in reversed(bindings):
        g = total(v)
        if g is None:
            continue
        if isinstance(value, Call):
            if not is_float_type(v.checked_type):  # type: ignore[arg-type]
                continue
            assert isinstance(value.op, Op)
            grads = GRADIENTS.lookup(value.op.name)(value, v, g)
            for arg, gr in zip(value.args, grads, strict=True):
                if gr is not None and not isinstance(arg, Constant):
                    adjoints.setdefault(id(arg), []).append(gr)
        elif isinstance(value, Tuple):
            for i, f in enumerate(value.fields):
                if not isinstance(f, Constant):
                    adjoints.setdefault(id(f), []).append(item(g, i))
        else:
            assert isinstance(value, TupleGetItem)
            t = value.tuple_value.checked_type
            assert isinstance(t, TupleType)
            src = value.tuple_value
            adjoints.setdefault(id(src), []).append(tup(*(
                g if j == value.index else zeros_like(item(src, j))
                for j in range(len(t.fields)))))
    results: list[Expr] = []
    for p in params:
        if p.checked_type is None or not is_float_type(p.checked_type):
            continue
        g = total(p)
        results.append(g if g is not None else _zero(p))
    out: Expr = tup(atom[id(root)], tup(*results))
    for v, value in reversed(bindings + backward):
        out = Let(v, value, out)
    return Function(tuple(params) + (h,), out)


def _zero(p: Var) -> Expr:
    t = p.checked_type
    if isinstance(t, TupleType):
        return tup(*(zeros_like(item(p, i)) for i in range(len(t.fields))))
    return zeros_like(p)


def _check_vjp(fn_params: tuple[Var, ...], body: Expr, args: Sequence[Any],
               rng: np.random.Generator, what: str, fixed: Sequence[int] = ()) -> None:
    """The reverse mode of ``body`` against finite differences at ``args`` (the parameters
    at positions ``fixed`` are not perturbed: indices, conditions)."""
    primal = Function(fn_params, body)
    value = evaluate(primal, *args)
    assume(all(np.all(np.isfinite(a)) for a in _leaves(value)))
    h = _random_like_value(value, rng)
    grad_fn = reverse(fn_params, body)
    _, adjoints = evaluate(grad_fn, *args, h)
    floats = [i for i, p in enumerate(fn_params)
              if p.checked_type is not None and is_float_type(p.checked_type)]
    directions = {i: _random_like_value(args[i], rng) for i in floats if i not in fixed}
    lhs = sum(inner(a, directions[i]) for a, i in zip(adjoints, floats, strict=True)
              if i in directions)
    plus = [_axpy(a, directions[i], EPS) if i in directions else a for i, a in enumerate(args)]
    minus = [_axpy(a, directions[i], -EPS) if i in directions else a
             for i, a in enumerate(args)]
    rhs = (inner(h, evaluate(primal, *plus)) - inner(h, evaluate(primal, *minus))) / (2 * EPS)
    scale = sum(float(np.sum(np.abs(x))) for x in _leaves(adjoints)) + abs(rhs)
    assert abs(lhs - rhs) <= 10 * RTOL * (1.0 + scale), \
        f"{what}: second-order rule {lhs!r} vs finite difference {rhs!r}"


def check_second_order(name: str, arg_types: Sequence[Type], attrs: dict[str, Any],
                       args: Sequence[Any], seed: int) -> None:
    """Reverse mode (by the rules) of the gradient rule and of the tangent rule of ``name``,
    with ``out`` bound to the call, against finite differences.

    Raises:
        AssertionError: a second-order product differs from the finite difference.
    """
    rng = np.random.default_rng(seed)
    run = prepare(name, arg_types, attrs)
    out_value = reference(run, args)
    assume(all(np.all(np.isfinite(a)) for a in _leaves(out_value)))
    c = run.call
    g = rule_var("g", run.out_type)
    grads = GRADIENTS.lookup(name)(c, c, g)
    present = [e for e in grads if e is not None]
    if present:
        _check_vjp(run.params + (g,), tup(*present), list(args) + [
            _random_like_value(out_value, rng)], rng, f"{name} gradient",
            NON_DATA.get(name, ()))
    diff = [i for i, p in enumerate(run.params)
            if p.checked_type is not None and is_float_type(p.checked_type)
            and i not in NON_DATA.get(name, ())]
    tangents: list[Var | None] = [None] * len(run.params)
    for i in diff:
        t = run.params[i].checked_type
        assert t is not None
        tangents[i] = rule_var(f"t{i}", t)
    expr = TANGENTS.lookup(name)(c, c, list(tangents))
    if expr is None:
        return
    tvars = tuple(v for v in tangents if v is not None)
    _check_vjp(run.params + tvars, tup(expr), list(args) + [
        _random_like_value(args[i], rng) for i in diff], rng, f"{name} tangent",
        NON_DATA.get(name, ()))
