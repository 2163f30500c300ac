"""Linking a program with the prelude definitions it uses (docs/architecture.md#api, ``evaluate``).

:func:`prelude_for_expr` / :func:`with_prelude` supply the prelude definitions
(:mod:`semantics.prelude`) that an expression or a hand-built module uses but does
not define, so that ``evaluate`` can run it. (Re-exported by
:mod:`interpreter.convert`.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from semantics.expr import Expr, Function, GlobalVar, Let, Var
from semantics.module import IRModule
from semantics.types import GlobalTypeVar, Type, TypeCall, type_children
from semantics.visitor import post_order

__all__ = ["prelude_for_expr", "with_prelude"]


def _references(roots: Sequence[Expr]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Global names and ADT names that ``roots`` use (through code, patterns or annotations)."""
    from semantics.analysis import constructors_used

    globals_: dict[str, Any] = {}
    adts: dict[str, Any] = {}
    annotations: list[Type] = []
    for root in roots:
        for node in post_order(root):
            if isinstance(node, GlobalVar):
                globals_.setdefault(node.name_hint, node.span)
            elif isinstance(node, Var) and node.type_annotation is not None:
                annotations.append(node.type_annotation)
            elif isinstance(node, Function):
                annotations.extend(p.type_annotation for p in node.params
                                   if p.type_annotation is not None)
                if node.ret_type is not None:
                    annotations.append(node.ret_type)
            elif isinstance(node, Let) and node.var.type_annotation is not None:
                annotations.append(node.var.type_annotation)
        for ctor in constructors_used(root):
            adts.setdefault(ctor.belong_to.name, ctor.span)
    while annotations:
        t = annotations.pop()
        if isinstance(t, TypeCall):
            adts.setdefault(t.func.name, t.span)
        elif isinstance(t, GlobalTypeVar):
            adts.setdefault(t.name, t.span)
        annotations.extend(type_children(t))
    return globals_, adts


def prelude_for_expr(expr: Expr) -> IRModule:
    """A module with the prelude definitions ``expr`` uses (empty when it uses none)."""
    from semantics.prelude import needed_definitions

    globals_, adts = _references([expr])
    if not globals_ and not adts:
        return IRModule()
    functions, types = needed_definitions(globals_, adts)
    return IRModule(functions, types)


_WITH_PRELUDE: dict[int, tuple[IRModule, IRModule]] = {}


def with_prelude(mod: IRModule) -> IRModule:
    """``mod`` plus the prelude definitions it uses but does not define (itself if none).

    The answer is remembered for the last few modules (held strongly, compared by
    identity), so evaluating one module repeatedly scans it once.
    """
    cached = _WITH_PRELUDE.get(id(mod))
    if cached is not None and cached[0] is mod:
        return cached[1]
    result = _with_prelude(mod)
    if len(_WITH_PRELUDE) >= 16:
        _WITH_PRELUDE.clear()
    _WITH_PRELUDE[id(mod)] = (mod, result)
    return result


def _with_prelude(mod: IRModule) -> IRModule:
    from semantics.prelude import needed_definitions

    globals_, adts = _references(list(mod.functions.values()))
    missing_globals = {g: s for g, s in globals_.items() if g not in mod.functions}
    missing_types = {t: s for t, s in adts.items() if t not in mod.types}
    if not missing_globals and not missing_types:
        return mod
    functions, types = needed_definitions(
        missing_globals, missing_types, defined_functions=mod.functions,
        defined_types=mod.types, defined_constructors=mod.constructors)
    if not functions and not types:
        return mod
    return mod.merged(IRModule(functions, types))
