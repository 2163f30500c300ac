"""The public entry point of the interpreter: ``evaluate`` (docs/architecture.md#api).

:func:`evaluate` validates its options, dispatches on what it is given (an
:class:`~semantics.module.IRModule` and its entry global, an expression, or program
text to parse), type-checks first when ``check=True``, converts the Python arguments
(:mod:`interpreter.convert`), runs an :class:`interpreter.eval.Interpreter` and exports
the result; only ``RelayError`` s (and ``InternalError`` s, for bugs) get out.
:func:`evaluate_recorded` does the same while reporting the derivation to a
:class:`~interpreter.machine.Recorder` (``relay run --trace``).
:mod:`interpreter` exports :func:`evaluate`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from interpreter.convert import convert_arguments, convert_value
from interpreter.eval import Interpreter
from interpreter.export import export_value
from interpreter.linking import prelude_for_expr, with_prelude
from interpreter.machine import CallbackError, NodeCache, Recorder, Rule
from interpreter.values import Closure, ConstructorFunction, OpValue, value_str
from semantics import errors
from semantics.errors import InternalError, RelayError, RelayRuntimeError
from semantics.expr import Expr, Function, GlobalVar
from semantics.module import IRModule
from semantics.parser import parse

__all__ = ["evaluate", "evaluate_recorded"]

# The @entry reference of an application from Python, per entry function (nodes are
# immutable, so one per function serves every evaluation).
_ENTRY_NODES = NodeCache(256)


# --- the public entry point -------------------------------------------------------------------

def evaluate(p: Any, *args: Any, entry: str = "main", check: bool = True,
             fuel: int | None = None, trace: Callable[[str, Any], Any] | None = None,
             max_depth: int = 100_000) -> Any:
    """Run a program with the big-step semantics (docs/architecture.md#api).

    Args:
        p: an :class:`IRModule` (its ``entry`` function is applied to ``args``), an
            expression (closed; when ``args`` are given it must evaluate to a function, which
            is applied to them) or module text (parsed with ``semantics.parse``). Prelude
            definitions the program uses are available.
        args: numpy arrays, Python scalars (converted to the parameter's declared dtype),
            tuples, :class:`~interpreter.values.ConstructorValue` s (resolved by name).
        entry: the global to run when ``p`` is a module or text.
        check: type-check the program first (``typechecker.check``).
        fuel: the number of rule applications allowed (None: no bound).
        trace: called as ``trace(rule_name, node)`` for every rule application, with the
            rule's name in ``semantics/RULES.md``.
        max_depth: the bound on nested non-tail calls.
    Returns:
        The value: an ndarray of exactly the Relay dtype (0-d for scalars), a tuple, a
        ConstructorValue, a Closure, a RefValue or an OpValue.
    Raises:
        ParseError: malformed program text.
        RelayTypeError: ``check`` is on and the program is ill-typed.
        RelayRuntimeError: wrong arguments, or the evaluation fails (non-exhaustive match,
            integer division by zero, out of fuel, stack exhausted, ...).
    """
    _check_options(entry, fuel, trace, max_depth)
    return _guarded(p, args, entry, check, fuel, trace, max_depth, None)


def evaluate_recorded(p: Any, *args: Any, recorder: Recorder, entry: str = "main",
                      check: bool = True, fuel: int | None = None,
                      max_depth: int = 100_000) -> Any:
    """:func:`evaluate` reporting the derivation to ``recorder`` (``relay run --trace``).

    While recording, tail premises are awaited like the others (the derivation is a tree),
    so tail calls count towards ``max_depth``. Raises as :func:`evaluate` does.
    """
    _check_options(entry, fuel, None, max_depth)
    return _guarded(p, args, entry, check, fuel, None, max_depth, recorder)


def _guarded(p: Any, args: tuple[Any, ...], entry: str, check: bool, fuel: int | None,
             trace: Callable[[str, Any], Any] | None, max_depth: int,
             recorder: Recorder | None) -> Any:
    """Run :func:`_evaluate`; only RelayErrors (and InternalErrors, for bugs) get out."""
    try:
        with np.errstate(all="ignore"):
            return _evaluate(p, args, entry, check, fuel, trace, max_depth, recorder)
    except CallbackError as err:
        raise err.original from None
    except (RelayError, InternalError):
        raise
    except RecursionError as exc:  # pragma: no cover - would be an interpreter bug
        raise InternalError(f"the interpreter recursed too deeply: {exc}") from exc
    except Exception as exc:
        raise InternalError(f"evaluation failed unexpectedly: {type(exc).__name__}: {exc}") \
            from exc


def _check_options(entry: Any, fuel: Any, trace: Any, max_depth: Any) -> None:
    if not isinstance(entry, str):
        raise RelayRuntimeError(f"entry must be a global's name, got {entry!r}")
    if fuel is not None and (isinstance(fuel, bool) or not isinstance(fuel, int) or fuel < 0):
        raise RelayRuntimeError(f"fuel must be a non-negative integer or None, got {fuel!r}")
    if trace is not None and not callable(trace):
        raise RelayRuntimeError(f"trace must be callable, got {trace!r}")
    if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1:
        raise RelayRuntimeError(f"max_depth must be a positive integer, got {max_depth!r}")


def _evaluate(p: Any, args: tuple[Any, ...], entry: str, check: bool, fuel: int | None,
              trace: Callable[[str, Any], Any] | None, max_depth: int,
              recorder: Recorder | None) -> Any:
    if isinstance(p, str):
        p = parse(p)
    if isinstance(p, IRModule):
        mod = with_prelude(p)
        fn = mod.functions.get(entry.lstrip("@"))
        if fn is None:
            raise RelayRuntimeError(f"the module has no global @{entry.lstrip('@')}")
        where = "@" + entry.lstrip("@")
        if len(args) != len(fn.params):
            raise RelayRuntimeError(
                errors.wrong_arity(where, len(fn.params), len(args)),
                fn.span)
        param_types = _type_check(mod, fn, entry.lstrip("@")) if check else None
        values = convert_arguments(fn.params, args, mod, where, param_types)
        interp = Interpreter(mod, fuel=fuel, trace=trace, max_depth=max_depth,
                             recorder=recorder)
        gv = _ENTRY_NODES.get((fn, where))
        if gv is None:
            gv = _ENTRY_NODES.put((fn, where), GlobalVar(entry.lstrip("@"), span=fn.span))
        closure = interp.global_closure(gv)
        interp.fired(Rule.SEMANTICS_GLOBAL, gv)
        return export_value(interp.apply(closure, values, fn))
    if isinstance(p, Expr):
        mod = prelude_for_expr(p)
        param_types = None
        if check:
            wrapped = IRModule.from_expr(p, mod.functions, mod.types)
            param_types = _type_check(wrapped, wrapped["main"], "main")
        interp = Interpreter(mod, fuel=fuel, trace=trace, max_depth=max_depth,
                             recorder=recorder)
        interp.roots = (p,)
        value = interp.run(p, interp.root_env(p), 0)
        if args:
            if type(value) is Closure:
                where = value.name or "the function"
                types_ = param_types if value.function is p else None
                value = interp.apply(
                    value, convert_arguments(value.params, args, mod, where, types_), p)
            elif type(value) in (OpValue, ConstructorFunction):
                value = interp.apply(value, [convert_value_untyped(a, mod) for a in args], p)
            else:
                raise RelayRuntimeError(
                    "arguments were given, but the expression's value is not a function: "
                    + value_str(value, limit=60), p.span)
        return export_value(value)
    raise RelayRuntimeError(
        "evaluate expects an IRModule, an expression or program text, got "
        + type(p).__name__)


def convert_value_untyped(x: Any, mod: IRModule) -> Any:
    """A Python argument as a value when no parameter type is known (operators, constructors)."""
    return convert_value(x, None, mod)


def _type_check(mod: IRModule, fn: Function, name: str) -> list[Any] | None:
    """Type-check ``mod``; return the entry's parameter types when some are not annotated."""
    try:
        import typechecker
    except ImportError as exc:
        raise InternalError(f"check=True needs the type checker: {exc}") from exc
    if all(param.type_annotation is not None for param in fn.params):
        typechecker.check(mod)
        return None
    inferred = typechecker.infer(mod)
    if not isinstance(inferred, IRModule):
        raise InternalError("typechecker.infer of a module returned no module")
    return [getattr(param, "checked_type", None) for param in inferred[name].params]
