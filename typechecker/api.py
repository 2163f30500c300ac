"""The type checker's entry points (docs/architecture.md#api): ``infer``, ``type_of``, ``check``.

* ``infer(p)`` — ``p`` an :class:`IRModule` or an expression; returns the
  same kind of program, rebuilt so that every expression node has its
  ``checked_type`` (the input is not mutated).
* ``type_of(e, mod=None)`` — the type of an expression (or of expression
  text, parsed with the prelude in scope).
* ``check(p)`` — None, or ``RelayTypeError``.

An expression that comes without a module is checked against the prelude
(``semantics.prelude.prelude_module()``), loaded the first time the
expression mentions a global, constructor or ADT name.

Only :class:`~semantics.errors.RelayError`\\ s escape (``ParseError`` for bad
text, ``RelayTypeError`` otherwise); anything else that goes wrong inside is
a bug in the checker or in an operator's relation and surfaces as
:class:`~semantics.errors.InternalError`.
"""

from __future__ import annotations

from typing import Any

from semantics.errors import InternalError, RelayError, RelayTypeError
from semantics.expr import Expr
from semantics.module import IRModule
from semantics.types import Type
from typechecker.annotate import Annotator
from typechecker.program import annotate_module, expression_inferencer, module_typing

__all__ = ["check", "infer", "type_of"]


def infer(p: IRModule | Expr) -> IRModule | Expr:
    """Infer the types of a module or expression.

    Args:
        p: an ``IRModule`` or an expression.
    Returns:
        A new program of the same kind whose every expression node has
        ``checked_type`` set to its (fully resolved) type.
    Raises:
        RelayTypeError: the program is ill-typed or ill-kinded, or a type
            cannot be determined ("underconstrained").
    """
    return _guard(_infer, p)


def type_of(e: Expr | str, mod: IRModule | None = None) -> Type:
    """The type of an expression.

    Args:
        e: an expression, or its text (parsed with the prelude in scope).
        mod: the module whose globals and ADTs the expression may use; when
            omitted, the prelude's if the expression mentions any.
    Returns:
        The expression's type; a function literal's free type variables are
        generalized into its ``type_params``.
    Raises:
        ParseError: ``e`` is text that does not parse.
        RelayTypeError: the expression is ill-typed.
    """
    return _guard(_type_of, e, mod)


def check(p: IRModule | Expr) -> None:
    """Check a module or an expression.

    Returns:
        None when ``p`` is well typed.
    Raises:
        RelayTypeError: otherwise (see :func:`infer`).
    """
    _guard(_check, p)


def global_types(mod: IRModule) -> dict[str, Type]:
    """The type (scheme) of every global of a checked module, by name (``relay check``).

    Raises:
        RelayTypeError: the module is ill-typed.
    """
    return dict(_guard(lambda m: module_typing(m).schemes, mod))


def _guard(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except RelayError:
        raise
    except InternalError:
        raise
    except RecursionError as exc:
        raise InternalError("the type checker recursed too deeply") from exc
    except Exception as exc:  # noqa: BLE001 - anything else is a checker bug
        raise InternalError(f"type checker crashed: {type(exc).__name__}: {exc}") from exc


def _infer(p: IRModule | Expr) -> IRModule | Expr:
    if isinstance(p, IRModule):
        return annotate_module(module_typing(p))
    if not isinstance(p, Expr):
        raise RelayTypeError(f"cannot type-check a {type(p).__name__}")
    inf, _ = _expression(p, None)
    return Annotator(inf).expr(p)


def _check(p: IRModule | Expr) -> None:
    if isinstance(p, IRModule):
        module_typing(p)
        return
    if not isinstance(p, Expr):
        raise RelayTypeError(f"cannot type-check a {type(p).__name__}")
    inf, _ = _expression(p, None)
    Annotator(inf).verify()


def _type_of(e: Expr | str, mod: IRModule | None) -> Type:
    if isinstance(e, str):
        from semantics.parser import parse_expr

        # prelude names resolve to the prelude's own objects: its (cached) typing serves
        e = parse_expr(e)
    if not isinstance(e, Expr):
        raise RelayTypeError(f"cannot type-check a {type(e).__name__}")
    inf, raw = _expression(e, mod)
    ann = Annotator(inf)
    ann.verify()
    return ann.final(raw, e)


def _expression(e: Expr, mod: IRModule | None) -> Any:
    if mod is None:
        return expression_inferencer(e, None, _prelude)
    return expression_inferencer(e, module_typing(mod))


def _prelude() -> IRModule | None:
    try:
        from semantics.prelude import prelude_module
    except ImportError:
        return None
    return prelude_module()
