"""Automatic differentiation: reverse and forward mode over the whole language (paper §4.2).

Public API (docs/architecture.md#api):

* :func:`grad` — ``grad(f, mode="reverse"|"forward", mod=None)``: the gradient function
  ``fn(T1..Tn) -> (O, (T1..Tn))`` of ``f`` (Type-Gradient), a closed :class:`Function`;
* :func:`jvp` — ``fn(x1..xn, v1..vn) -> (O, O)``: the value and the directional derivative;
* :func:`grad_module` — the gradient of a module's global as a module: ``@main`` is the
  gradient, the lifted globals it calls are globals of the module (``@g__rev``/``@g__fwd``);
* :func:`check_grads` — compare AD with central finite differences in float64 (JAX's name).

The transformations are in :mod:`ad.reverse` (design note there) and :mod:`ad.forward`; the
per-operator rules in :mod:`ad.rules`. :func:`register` installs the reverse-mode expander
of ``grad(e)`` nodes in the interpreter (Semantics-Grad); it is the ``relay.grad_expanders``
plugin entry point, and importing this package calls it.
"""

from __future__ import annotations

from typing import Any

import ad.rules  # noqa: F401  (fills the GRADIENTS / TANGENTS tables)
from ad.check import check_grads
from ad.forward import forward_grad, jvp_function
from ad.lift import Lifted, let_bound_functions
from ad.reverse import reverse_grad
from semantics.errors import RelayArgumentValueError, RelayTypeError
from semantics.expr import Expr, Function, GlobalVar, Grad
from semantics.module import IRModule

__all__ = ["check_grads", "grad", "grad_module", "jvp", "register"]

_MODES = ("reverse", "forward")


def _target(f: Expr | str, mod: IRModule | None) -> Expr:
    if isinstance(f, str):
        if mod is None:
            raise RelayTypeError(f"grad: the global @{f.lstrip('@')} needs its module (mod=...)")
        name = f.lstrip("@")
        if name not in mod.functions:
            raise RelayTypeError(f"grad: undefined global @{name}")
        return GlobalVar(name)
    if not isinstance(f, Expr):
        raise RelayTypeError(f"grad: expected a function expression, got {type(f).__name__}")
    return f


def grad(f: Expr | str, mode: str = "reverse", mod: IRModule | None = None) -> Function:
    """The gradient function of ``f`` (Type-Gradient).

    Args:
        f: a closed function expression of type ``fn(T1..Tn) -> O`` over tensors (or tuples of
            tensors), or the name of a global of ``mod``. Its body may use closures, tuples,
            ADTs, ``if``, ``match``, recursion (global, let-bound, mutual), references and
            ``grad`` itself.
        mode: ``"reverse"`` (closures and references, the paper's Fig. 4) or ``"forward"``
            (dual numbers; one forward sweep per input element, so shapes must be static).
        mod: the module ``f``'s globals and ADTs come from (None: the prelude only).
    Returns:
        A closed ``Function`` of type ``fn(T1..Tn) -> (O, (T1..Tn))``: the value of ``f`` and
        the gradient of the sum of its output with respect to each argument. The globals it
        needs are bound inside it (lifted copies); ``f`` and ``mod`` are not modified. If
        ``f`` uses an ADT with a float field that is not a type parameter, the function uses a
        lifted copy of the ADT (``Box__rev``): it evaluates as it is, and
        :func:`grad_module` gives a module that also type-checks.
    Raises:
        RelayTypeError: ``f`` is ill-typed, not a monomorphic function over tensors, or uses an
            operator without a gradient rule (the message names it, with its span).
    """
    return _gradient(f, mode, mod).function


def _gradient(f: Expr | str, mode: str, mod: IRModule | None) -> Lifted:
    if mode not in _MODES:
        raise RelayArgumentValueError(f"grad: mode must be one of {_MODES}, got {mode!r}")
    target = _target(f, mod)
    if mode == "forward":
        return forward_grad(target, mod)
    return reverse_grad(target, mod)


def jvp(f: Expr | str, mod: IRModule | None = None) -> Function:
    """The Jacobian-vector product of ``f`` by forward mode.

    Args:
        f: as for :func:`grad`.
        mod: as for :func:`grad`.
    Returns:
        A closed ``Function`` ``fn(x1..xn, v1..vn) -> (O, O)``: ``f(x)`` and the derivative of
        ``f`` at ``x`` in the direction ``v`` (a tangent per argument, of its type).
    Raises:
        RelayTypeError: as for :func:`grad`.
    """
    return jvp_function(_target(f, mod), mod).function


def grad_module(mod: IRModule, entry: str = "main", mode: str = "reverse") -> IRModule:
    """The gradient of the global ``entry`` of ``mod`` as a module.

    Args:
        mod: the module (not modified).
        entry: the global to differentiate.
        mode: ``"reverse"`` or ``"forward"``.
    Returns:
        ``mod`` with ``@main`` bound to the gradient of ``@entry`` (when ``entry`` is ``main``
        the original is replaced), in reverse mode the lifted globals it calls added as
        ``@g__rev``, and the lifted copies of ADTs with float fields (``Box__rev``) it uses.
    Raises:
        RelayTypeError: as for :func:`grad`.
    """
    if mode not in _MODES:
        raise RelayArgumentValueError(f"grad: mode must be one of {_MODES}, got {mode!r}")
    target = _target(entry, mod)
    if mode == "forward":
        return forward_grad(target, mod).module(mod)
    return reverse_grad(target, mod, closed=False).module(mod)


def _expand_grad_node(node: Grad, mod: IRModule, roots: tuple[Expr, ...] = ()) -> Expr:
    """The interpreter's expander of ``grad(e)`` (Semantics-Grad): reverse mode. ``roots``:
    code evaluated outside ``mod``'s globals, searched for let-bound functions too."""
    key = (id(mod), tuple(id(r) for r in roots))
    defs = _DEFS_CACHE.get(key)
    if defs is None or defs[0] is not mod or any(a is not b for a, b in zip(defs[1], roots)):
        defs = (mod, roots, let_bound_functions(list(mod.functions.values()) + list(roots)))
        _DEFS_CACHE.clear()
        _DEFS_CACHE[key] = defs
    return reverse_grad(node.func, mod, defs=defs[2]).function


_DEFS_CACHE: dict[tuple[int, tuple[int, ...]], tuple[IRModule, tuple[Expr, ...], Any]] = {}


def register() -> None:
    """Give the interpreter's ``grad(e)`` nodes their meaning: install the reverse-mode
    expander with :func:`interpreter.register_grad_expander`.

    This is the ``relay.grad_expanders`` plugin entry point (pyproject.toml), which the
    interpreter runs on the first ``grad`` node it meets with no expander; importing
    ``ad`` also calls it.
    """
    from interpreter import register_grad_expander

    register_grad_expander(_expand_grad_node)


register()
