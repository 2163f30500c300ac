"""The machinery of mutant passes: a :class:`Mutant` and the site rewriter behind it.

A mutant is a plausible buggy pass ``IRModule -> IRModule``. Most are written as a
*rewrite* ``(new, old) -> Expr | None`` of one node: ``old`` is the node of the
type-annotated module (``checked_type`` set on it and its children), ``new`` the same
node rebuilt from already-rewritten children; ``None`` means "not a site".
:func:`rewrite_sites` applies the rewrite at the first site (in a fixed order: ``main``
first, then the other globals by name; post-order inside a function) whose result still
type-checks — a buggy pass that emitted ill-typed code would be caught by the type
checker alone, which is not what a mutation benchmark measures — or at every site
(``every=True``, falling back to the first well-typed single site when the all-sites
rewrite does not type-check). A program without a site comes back unchanged.

Every mutant carries a *witness*: a small program (Relay text and inputs) on which it
changes the outcome, which shows that it is not an equivalent mutant (the test suite
checks each witness).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from semantics.errors import RelayError
from semantics.expr import Call, Constant, Expr, Op
from semantics.module import IRModule
from semantics.types import TensorType, Type
from semantics.visitor import ExprMutator, post_order

__all__ = ["Mutant", "Rewrite", "rewrite_sites", "op_name", "tensor_type", "is_op",
           "call_op", "scalar_like"]

Rewrite = Callable[[Expr, Expr], "Expr | None"]


@dataclass(frozen=True)
class Mutant:
    """A mutant pass: its name, category, the bug it models and a witness program.

    ``witness`` is ``(relay_text, inputs)``: a well-typed program on which the mutant's
    output differs from the oracle's (so the mutant is not equivalent).
    """

    name: str
    category: str                 # "operator", "special-value", "structural", "type-level"
    doc: str
    fn: Callable[[IRModule], IRModule]
    witness: tuple[str, tuple[Any, ...]] = field(default=("", ()))

    def __call__(self, module: IRModule) -> IRModule:
        return self.fn(module)


class _Replace(ExprMutator):
    """Replace the nodes whose ``id`` (in the module being rebuilt) is in ``targets``."""

    def __init__(self, targets: set[int], rewrite: Rewrite) -> None:
        self.targets = targets
        self.rewrite = rewrite

    def visit_default(self, new: Expr, old: Expr) -> Expr:
        if id(old) in self.targets:
            out = self.rewrite(new, old)
            if out is not None:
                return out
        return new


# Type inference of a module, shared by the mutants run on it (keyed by identity; the entry
# keeps the module alive so that its id is not reused).
_ANNOTATED: dict[int, tuple[IRModule, IRModule | None]] = {}
_ANNOTATED_MAX = 256


def _annotated(mod: IRModule) -> IRModule | None:
    from typechecker import infer

    hit = _ANNOTATED.get(id(mod))
    if hit is not None and hit[0] is mod:
        return hit[1]
    try:
        out = infer(mod)
    except RelayError:
        out = None
    assert out is None or isinstance(out, IRModule)
    if len(_ANNOTATED) >= _ANNOTATED_MAX:
        _ANNOTATED.pop(next(iter(_ANNOTATED)))
    _ANNOTATED[id(mod)] = (mod, out)
    return out


def _well_typed(mod: IRModule) -> bool:
    from typechecker import check

    try:
        check(mod)
    except RelayError:
        return False
    except Exception:  # noqa: BLE001 - a checker crash on a mutated program: not usable
        return False
    return True


def _order(mod: IRModule) -> list[str]:
    names = sorted(mod.functions)
    if "main" in names:
        names.remove("main")
        names.insert(0, "main")
    return names


def rewrite_sites(mod: IRModule, rewrite: Rewrite, *, every: bool = False,
                  limit: int = 12) -> IRModule:
    """Apply ``rewrite`` at the first well-typed site (or at every site) of ``mod``.

    Args:
        mod: the module to mutate (well typed).
        rewrite: ``(new, old) -> replacement | None`` (see the module docstring).
        every: rewrite every site at once (when the result type-checks).
        limit: how many single sites to try before giving up.
    Returns:
        The mutated module, or ``mod`` itself when no site gives a well-typed program.
    """
    ann = _annotated(mod)
    if ann is None:
        return mod
    sites: list[tuple[str, Expr]] = []
    for name in _order(ann):
        for node in post_order(ann[name]):
            if rewrite(node, node) is not None:
                sites.append((name, node))
    if not sites:
        return mod
    if every:
        out = _apply(ann, {id(n) for _, n in sites}, {nm for nm, _ in sites}, rewrite)
        if _well_typed(out):
            return out
        # Greedily keep every site whose rewrite (with those kept so far) still type-checks.
        kept: list[tuple[str, Expr]] = []
        best: IRModule | None = None
        for site in sites[:limit]:
            trial = kept + [site]
            out = _apply(ann, {id(n) for _, n in trial}, {nm for nm, _ in trial}, rewrite)
            if _well_typed(out):
                kept, best = trial, out
        return best if best is not None else mod
    for name, node in sites[:limit]:
        out = _apply(ann, {id(node)}, {name}, rewrite)
        if _well_typed(out):
            return out
    return mod


def _apply(ann: IRModule, targets: set[int], names: set[str], rewrite: Rewrite) -> IRModule:
    fns = dict(ann.functions)
    for name in names:
        fns[name] = _Replace(targets, rewrite).mutate(fns[name])  # type: ignore[assignment]
    return ann.with_functions(fns)


# --- small helpers for rewrites ------------------------------------------------------------

def op_name(node: Expr) -> str | None:
    """The operator name of an operator call, else None."""
    if isinstance(node, Call) and isinstance(node.op, Op):
        return node.op.name
    return None


def is_op(node: Expr, *names: str) -> bool:
    return op_name(node) in names


def tensor_type(node: Expr) -> TensorType | None:
    """The (inferred) tensor type of an annotated node, else None."""
    t = node.checked_type
    return t if isinstance(t, TensorType) else None


def call_op(name: str, *args: Expr, **attrs: Any) -> Call:
    from semantics.expr import Attrs

    return Call(Op(name), tuple(args), Attrs(attrs) if attrs else Attrs())


def scalar_like(value: float | int, dtype: str) -> Constant:
    """A 0-d constant of ``dtype``."""
    return Constant(np.array(value, dtype=dtype))


def first_arg_type(node: Expr, i: int = 0) -> Type | None:
    if isinstance(node, Call) and len(node.args) > i:
        return node.args[i].checked_type
    return None


def same_types(a: Type | None, b: Type | None) -> bool:
    from conformance.strategies.typeutil import type_key

    return a is not None and b is not None and type_key(a) == type_key(b)


def args_of(node: Expr) -> Sequence[Expr]:
    return node.args if isinstance(node, Call) else ()
