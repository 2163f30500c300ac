"""Gradient checking against central finite differences (JAX's ``check_grads``).

:func:`check_grads` converts the function to float64 (every floating-point type, literal and
``dtype`` attribute), then, along a few random directions ``v`` over the float arguments,
compares the derivative AD computes with the central difference
``(S(x + eps v) - S(x - eps v)) / (2 eps)`` of ``S = sum of the outputs``:

* ``"rev"``: ``<grad(f)(x), v>`` (reverse mode, :func:`ad.grad`);
* ``"fwd"``: the summed output tangent of ``jvp(f)(x, v)`` (forward mode, :func:`ad.jvp`).

``order=2`` also checks the second derivative: the same comparison for the function
``x -> grad(f)(x).1`` (its summed output is ``<grad S, 1>``), whose gradient AD obtains by
differentiating the gradient program (reverse over reverse; forward over reverse).
A mismatch raises ``AssertionError`` with the mode, the order, both numbers and the direction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from semantics.errors import RelayTypeError
from semantics.expr import Call, Constant, Constructor, Expr, Function, TupleGetItem, Var
from semantics.module import IRModule
from semantics.rewrite import ScopedMutator
from semantics.type_visitor import TypeMutator
from semantics.types import TensorType, Type, TypeData

__all__ = ["check_grads", "module_to_float64", "to_float64"]


class _F64Type(TypeMutator):
    def leave(self, old: Type, new: Type) -> Type:
        if isinstance(new, TensorType) and new.dtype.startswith(("float", "bfloat")):
            return TensorType(new.shape, "float64", span=new.span)
        return new


def _is_float_dtype(s: Any) -> bool:
    return isinstance(s, str) and s.startswith(("float", "bfloat"))


class _F64Expr(ScopedMutator):
    """Every float type, literal and dtype attribute of an expression made float64."""

    def __init__(self) -> None:
        self._types = _F64Type()

    def _t(self, t: Type | None) -> Type | None:
        return None if t is None else self._types.mutate(t)

    def function(self, fn: Function) -> Function:
        out = self.mutate(fn)
        assert isinstance(out, Function)  # a function's rewrite is a function (visit_function)
        return out

    def bind(self, var: Var, site: Any) -> Var:
        t = self._t(var.type_annotation)
        if t is var.type_annotation:
            return var
        return Var(var.name_hint, t, span=var.span)

    def visit_constant(self, new: Constant, old: Constant) -> Expr:
        if _is_float_dtype(new.data.dtype.name):
            return Constant(new.data.astype(np.float64), span=new.span)
        return new

    def visit_call(self, new: Call, old: Call) -> Expr:
        attrs = new.attrs
        changed = {k: "float64" for k, v in attrs.items()
                   if k in ("dtype", "out_dtype") and _is_float_dtype(v)}
        type_args = tuple(self._types.mutate(t) for t in new.type_args)
        if not changed and all(a is b for a, b in zip(type_args, new.type_args)):
            return new
        return Call(new.op, new.args, attrs.replace(**changed) if changed else attrs,
                    type_args, span=new.span)

    def visit_function(self, new: Function, old: Function) -> Expr:
        ret = self._t(new.ret_type)
        if ret is new.ret_type:
            return new
        return Function(new.params, new.body, ret, new.type_params, new.attrs, span=new.span)


def to_float64(e: Expr) -> Expr:
    """``e`` with every floating-point type, literal and ``dtype`` attribute made float64."""
    return _F64Expr().mutate(e)


def module_to_float64(mod: IRModule) -> IRModule:
    """``mod`` with every function (:func:`to_float64`) and ADT field made float64."""
    types = _F64Type()
    out = mod.with_functions({k: _F64Expr().function(v) for k, v in mod.functions.items()})
    for td in mod.types.values():
        ctors = tuple(Constructor(c.name, tuple(types.mutate(t) for t in c.inputs), td.header,
                                  c.tag, span=c.span) for c in td.constructors)
        if any(a is not b for c, n in zip(td.constructors, ctors)
               for a, b in zip(c.inputs, n.inputs)):
            out = out.with_type(TypeData(td.header, td.type_vars, ctors, span=td.span))
    return out


def _runner(fn: Expr, mod: IRModule | None) -> Callable[..., Any]:
    from interpreter import evaluate

    if mod is None:
        return lambda *a: evaluate(fn, *a)
    assert isinstance(fn, Function)
    m = mod.with_function("__check_grads", fn)
    return lambda *a: evaluate(m, *a, entry="__check_grads")


def _runner_of(lifted: Any, mod: IRModule | None) -> Callable[..., Any]:
    """A runner of a transformation's function in a module with its lifted ADT copies."""
    if not lifted.types:
        return _runner(lifted.function, mod)
    from interpreter import evaluate

    m = lifted.module(mod, "__check_grads")
    return lambda *a: evaluate(m, *a, entry="__check_grads")


def _flat_floats(value: Any) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, tuple):
            stack.extend(reversed(v))
        elif isinstance(v, np.ndarray) and v.dtype.kind == "f":
            out.append(v)
    return out


def _total(value: Any) -> float:
    return float(sum(np.sum(a, dtype=np.float64) for a in _flat_floats(value)))


def _map_floats(x: Any, fn: Callable[[np.ndarray, int], Any], counter: list[int]) -> Any:
    if isinstance(x, tuple):
        return tuple(_map_floats(v, fn, counter) for v in x)
    arr = np.asarray(x)
    if arr.dtype.kind == "f":
        counter[0] += 1
        return fn(arr, counter[0] - 1)
    return x


def _dot(a: Any, b: list[np.ndarray]) -> float:
    fa = _flat_floats(a)
    return float(sum(np.sum(p.astype(np.float64) * q) for p, q in zip(fa, b)))


def _directions(point: tuple[Any, ...], rng: np.random.Generator) -> list[np.ndarray]:
    """One random standard-normal array per float array of ``point`` (flattened order)."""
    dirs: list[np.ndarray] = []

    def pick(arr: np.ndarray, _: int) -> np.ndarray:
        dirs.append(rng.standard_normal(arr.shape))
        return arr

    counter = [0]
    for a in point:
        _map_floats(a, pick, counter)
    return dirs


def _along(point: tuple[Any, ...], dirs: list[np.ndarray], step: float | None) -> tuple[Any, ...]:
    """``point + step * dirs`` (``step`` None: the directions themselves, shaped as ``point``)."""
    counter = [0]

    def move(arr: np.ndarray, i: int) -> np.ndarray:
        return dirs[i].copy() if step is None else arr + step * dirs[i]

    return tuple(_map_floats(a, move, counter) for a in point)


def check_grads(f: Expr | str, args: Sequence[Any], order: int = 1, mod: IRModule | None = None,
                modes: Sequence[str] = ("fwd", "rev"), atol: float | None = None,
                rtol: float | None = None, eps: float = 1e-4, directions: int = 2,
                seed: int = 0) -> None:
    """Check the derivatives of ``f`` at ``args`` against central finite differences.

    Args:
        f: a function expression, or the name of a global of ``mod``.
        args: the point (numpy arrays / scalars / tuples; float ones are made float64).
        order: 1 (first derivatives) or 2 (also the derivative of the gradient).
        mod: the module of ``f``'s globals and ADTs.
        modes: ``"fwd"`` and/or ``"rev"``.
        atol / rtol: tolerances (default 1e-5 and 1e-4 at order 1, 1e-3 and 1e-3 at order 2).
        eps: the finite-difference step.
        directions: the number of random directions tried.
        seed: the seed of the directions.
    Raises:
        AssertionError: AD and finite differences disagree (the message has both values).
        RelayTypeError: ``f`` is not differentiable.
    """
    if order not in (1, 2):
        raise ValueError(f"check_grads: order must be 1 or 2, got {order}")
    for m in modes:
        if m not in ("fwd", "rev"):
            raise ValueError(f"check_grads: unknown mode {m!r} (expected 'fwd' or 'rev')")
    if isinstance(f, str):
        if mod is None:
            raise RelayTypeError(f"check_grads: the global @{f} needs its module")
        f = mod[f]
    fn = to_float64(f)
    mod64 = None if mod is None else module_to_float64(mod)
    point = tuple(_map_floats(a, lambda arr, _: arr.astype(np.float64), [0]) for a in args)
    _check_order(fn, point, mod64, modes, 1, atol, rtol, eps, directions, seed)
    if order == 2:
        from ad.reverse import reverse_grad

        lifted = reverse_grad(fn, mod64)
        if lifted.types:
            mod64 = lifted.module(mod64, "__check_grads_gradient")
        g = lifted.function
        xs = [Var(p.name_hint, p.type_annotation) for p in g.params]
        second = Function(tuple(xs), TupleGetItem(Call(g, tuple(xs)), 1))
        _check_order(second, point, mod64, modes, 2, atol, rtol, eps, directions, seed)


def _check_order(fn: Expr, point: tuple[Any, ...], mod: IRModule | None, modes: Sequence[str],
                 order: int, atol: float | None, rtol: float | None, eps: float,
                 directions: int, seed: int) -> None:
    atol = atol if atol is not None else (1e-5 if order == 1 else 1e-3)
    rtol = rtol if rtol is not None else (1e-4 if order == 1 else 1e-3)
    from ad.forward import jvp_function
    from ad.reverse import reverse_grad

    run = _runner(fn, mod)
    rng = np.random.default_rng(seed)
    grad_fn = _runner_of(reverse_grad(fn, mod), mod) if "rev" in modes else None
    jvp_fn = _runner_of(jvp_function(fn, mod), mod) if "fwd" in modes else None
    g_value = grad_fn(*point) if grad_fn is not None else None
    for _ in range(directions):
        dirs = _directions(point, rng)
        plus = _along(point, dirs, eps)
        minus = _along(point, dirs, -eps)
        numeric = (_total(run(*plus)) - _total(run(*minus))) / (2 * eps)
        results = []
        if g_value is not None:
            results.append(("rev", _dot(g_value[1], dirs)))
        if jvp_fn is not None:
            out = jvp_fn(*point, *_along(point, dirs, None))
            results.append(("fwd", _total(out[1])))
        for mode, analytic in results:
            if not abs(analytic - numeric) <= atol + rtol * abs(numeric):
                raise AssertionError(
                    f"check_grads: {mode}-mode derivative of order {order} disagrees with "
                    f"finite differences: AD {analytic!r} vs numerical {numeric!r} "
                    f"(|diff| {abs(analytic - numeric):.3g} > atol {atol} + rtol {rtol} * "
                    f"|numerical|) along a random direction {dirs!r}")
