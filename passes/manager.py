"""The pass manager: named passes, ``Sequential`` pipelines with re-checking, ``optimize``.

Design note. The paper (§4): "between each pass, Relay performs type inference
and checking". A pass here is a *pure function* ``program -> program``
(docs/architecture.md#api): it accepts an :class:`IRModule` or an expression and
returns the same kind, never mutating its input.

* :class:`Pass` wraps a module-level transformation ``IRModule -> IRModule``
  with its TVM name (``DeadCodeElimination``), its snake_case function name
  (``dead_code_elimination``) and the ``opt_level`` at which
  :func:`optimize` runs it. Calling a pass on an expression runs it on a
  one-function module whose ``main`` is the expression (a nullary function
  around it unless it is a function) and unwraps the result, so every pass
  is written once, for modules.
* :func:`register_pass` keeps the registry (:func:`get_pass` finds a pass by
  either name; :func:`list_passes` lists them); the conformance kit's
  ``relay conformance --pass NAME`` and ``relay opt --pass NAME`` read it.
* :class:`Sequential` composes passes. With ``check=True`` it type-checks the
  input (an ill-typed input is the *user's* ``RelayTypeError``) and re-infers
  after every pass: a pass that produces an ill-typed program is a bug in the
  pass and ends in :class:`PassError` (an ``InternalError``) naming the pass.
* Instrumentation: ``Sequential(..., on_pass=callback)`` (and
  :func:`optimize`) call ``callback(PassRecord)`` after each pass with its
  name, wall time and the program size before and after — ``relay opt
  --time`` prints them as a table.

Invariants: passes never see a checked_type they did not compute (with
``check=True`` each pass receives the freshly inferred program); the
registry holds each name once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from semantics.errors import (
    InternalError,
    RelayArgumentTypeError,
    RelayArgumentValueError,
    RelayTypeError,
)
from semantics.expr import Expr, Function
from semantics.module import IRModule
from semantics.visitor import post_order

__all__ = [
    "Pass", "PassError", "PassRecord", "Sequential", "get_pass", "list_passes", "optimize",
    "program_size", "register_pass",
]

P = TypeVar("P", IRModule, Expr)


class PassError(InternalError):
    """A pass broke its contract (e.g. produced an ill-typed program): a bug, not a user error."""


@dataclass(frozen=True)
class PassRecord:
    """What one pass did: its name, wall time in seconds, program size (nodes) before/after."""

    name: str
    seconds: float
    size_before: int
    size_after: int


@dataclass(frozen=True)
class Pass:
    """A named, pure program transformation.

    Attributes:
        name: TVM's name (``"FoldConstant"``).
        func_name: our function name (``"fold_constant"``).
        run: the transformation of modules.
        opt_level: the lowest ``optimize`` level that runs it (``None``: never by default).
        doc: one line for listings.
    """

    name: str
    func_name: str
    run: Callable[[IRModule], IRModule]
    opt_level: int | None = None
    doc: str = ""

    def __call__(self, program: P) -> P:
        """Transform a module or an expression; the result has the input's kind."""
        if isinstance(program, IRModule):
            return self.run(program)  # type: ignore[return-value]  # P is IRModule here
        if isinstance(program, Expr):
            return _run_on_expr(self.run, program)
        raise RelayArgumentTypeError(f"pass {self.name}: expected an IRModule or an expression, "
                        f"got {type(program).__name__}")

    def __repr__(self) -> str:
        return f"<Pass {self.name}>"


def _run_on_expr(run: Callable[[IRModule], IRModule], expr: Expr) -> Expr:
    """Run a module pass on an expression: wrap it as ``main``, run, unwrap."""
    wrapped = expr if isinstance(expr, Function) else Function((), expr, span=expr.span)
    out = run(IRModule({"main": wrapped}))
    main = out["main"]
    if isinstance(expr, Function):
        return main
    return main.body


_PASSES: dict[str, Pass] = {}


def register_pass(name: str, func_name: str, *, opt_level: int | None = None,
                  doc: str = "") -> Callable[[Callable[[IRModule], IRModule]], Pass]:
    """Decorator: register a module transformation as a :class:`Pass` (returned in its place).

    Args:
        name: TVM's name of the pass; func_name: the snake_case name.
        opt_level: the ``optimize`` level from which it runs (None: not part of ``optimize``).
        doc: a one-line description (default: the function's first docstring line).
    Raises:
        ValueError: a name is registered twice (a programming error).
    """

    def deco(fn: Callable[[IRModule], IRModule]) -> Pass:
        line = doc or (fn.__doc__ or "").strip().split("\n")[0]
        p = Pass(name, func_name, fn, opt_level, line)
        for key in (name, func_name):
            if key in _PASSES:
                raise ValueError(f"pass {key} registered twice")
        _PASSES[name] = p
        _PASSES[func_name] = p
        return p

    return deco


PASS_PLUGINS = ("pe",)
"""Packages above ``passes`` (docs/architecture.md#layers) that register passes on import (``pe``:
PartialEvaluate). :func:`get_pass` loads them by name when a name is not registered yet — a
plugin, not an import (as the interpreter reaches ``ad`` for ``grad``), so ``passes`` never
depends on them and ``get_pass("PartialEvaluate")`` works without importing ``pe`` first."""


def _load_plugins() -> None:
    import importlib

    for module in PASS_PLUGINS:
        try:
            importlib.import_module(module)
        except ImportError:
            continue


def get_pass(name: str) -> Pass:
    """The pass called ``name`` (TVM's or ours, including the :data:`PASS_PLUGINS` ones);
    ``RelayTypeError`` "unknown pass" otherwise."""
    if not isinstance(name, str):
        raise RelayArgumentTypeError(f"a pass name is a string, not {type(name).__name__}")
    found = _PASSES.get(name)
    if found is None:
        _load_plugins()
        found = _PASSES.get(name)
    if found is None:
        known = ", ".join(p.func_name for p in list_passes())
        raise RelayTypeError(f"unknown pass {name!r} (known passes: {known})")
    return found


def list_passes() -> list[Pass]:
    """Every registered pass once, in registration order."""
    seen: dict[int, Pass] = {}
    for p in _PASSES.values():
        seen.setdefault(id(p), p)
    return list(seen.values())


def program_size(program: IRModule | Expr) -> int:
    """The number of distinct expression nodes of a program (shared nodes counted once)."""
    if isinstance(program, IRModule):
        return sum(len(post_order(fn)) for fn in program.functions.values())
    return len(post_order(program))


class Sequential:
    """Run passes in order; with ``check`` re-infer types after each one (the paper's discipline).

    Args:
        passes: the passes (``Pass`` objects, or names known to :func:`get_pass`).
        check: type-check the input and re-infer after every pass.
        on_pass: called with a :class:`PassRecord` after each pass.
        name: the pipeline's name in messages.
    """

    def __init__(self, passes: Iterable[Pass | str], *, check: bool = True,
                 on_pass: Callable[[PassRecord], None] | None = None,
                 name: str = "Sequential"):
        self.passes: tuple[Pass, ...] = tuple(
            get_pass(p) if isinstance(p, str) else p for p in passes)
        self.check = check
        self.on_pass = on_pass
        self.name = name

    def __call__(self, program: P) -> P:
        """Run the pipeline on a module or an expression (the result has the input's kind).

        Raises:
            RelayTypeError: the input is ill-typed (with ``check``).
            PassError: a pass produced an ill-typed program (with ``check``).
        """
        from typechecker import infer

        current: Any = program
        if self.check:
            current = infer(current)  # the user's error, if any, surfaces here unchanged
        for p in self.passes:
            before = program_size(current) if self.on_pass else 0
            start = time.perf_counter()
            previous, current = current, p(current)
            elapsed = time.perf_counter() - start
            if self.check and not _unchanged(previous, current):
                try:
                    current = infer(current)
                except RelayTypeError as err:
                    raise PassError(
                        f"pass {p.name} produced an ill-typed program: {err.message}") from err
            if self.on_pass is not None:
                self.on_pass(PassRecord(p.name, elapsed, before, program_size(current)))
        return current

    def __repr__(self) -> str:
        return f"<Sequential {[p.name for p in self.passes]}>"


def _unchanged(before: Any, after: Any) -> bool:
    """``after`` is ``before`` or holds the very same (already checked) functions and type
    definitions: a pass that changed nothing needs no second inference (which would give the
    same types; on a 20,000-binding program each inference costs seconds)."""
    if after is before:
        return True
    if not (isinstance(before, IRModule) and isinstance(after, IRModule)):
        return False
    return (before.functions.keys() == after.functions.keys()
            and all(after.functions[k] is f for k, f in before.functions.items())
            and before.types.keys() == after.types.keys()
            and all(after.types[k] is d
                    for k, d in before.types.items()))


def passes_at(opt_level: int) -> list[Pass]:
    """The registered passes ``optimize`` runs at ``opt_level``, in pipeline order.

    The pipeline is :data:`PIPELINE` restricted to the passes registered at or below
    ``opt_level``. A name may appear twice: FoldConstant runs again after the layout and
    scale passes, which leave weight arithmetic to fold — unless no other pass ran since
    its first run. Registered passes the pipeline does not name run last, in registration
    order.
    """
    enabled = {p.name: p for p in list_passes()
               if p.opt_level is not None and p.opt_level <= opt_level}
    out: list[Pass] = []
    for name in PIPELINE:
        p = enabled.get(name)
        if p is None:
            continue
        if out and out[-1] is p:
            continue  # a re-run right after its own run would change nothing
        out.append(p)
    out.extend(p for name, p in enabled.items() if name not in PIPELINE)
    return out


# The order optimize runs passes in (names of TVM's passes).
PIPELINE = (
    "Inline", "SimplifyInference", "CanonicalizeOps", "FoldConstant", "EliminateCommonSubexpr",
    "FoldScaleAxis", "CombineParallelConv2D", "AlterOpLayout", "FoldConstant",
    "DeadCodeElimination", "FuseOps",
)


def optimize(program: P, opt_level: int = 2, *, check: bool = True,
             on_pass: Callable[[PassRecord], None] | None = None,
             only: Sequence[str] | None = None) -> P:
    """The standard pipeline at ``opt_level`` 0–3 (``-O0``..``-O3``).

    Args:
        program: a module or an expression.
        opt_level: 0 runs nothing; each level adds the passes registered at it
            (see ``relay opt --help`` / README for the table).
        check: re-infer types after each pass.
        on_pass: instrumentation callback (see :class:`Sequential`).
        only: run exactly these passes instead (names), in this order.
    Raises:
        RelayTypeError: ill-typed input, or an opt_level outside 0–3.
    """
    if type(opt_level) is not int and not isinstance(opt_level, np.integer):
        raise RelayArgumentTypeError(f"bad opt_level {opt_level!r}: expected 0, 1, 2 or 3")
    if not 0 <= opt_level <= 3:
        raise RelayArgumentValueError(f"bad opt_level {opt_level}: expected 0, 1, 2 or 3")
    opt_level = int(opt_level)
    chosen: list[Pass | str] = list(only) if only is not None else list(passes_at(opt_level))
    return Sequential(chosen, check=check, on_pass=on_pass, name=f"O{opt_level}")(program)
