"""Helpers the passes share: typing a program when possible, rebuilding over the DAG.

* :func:`typed_or_same` — passes that can use types (operator dtypes for the
  effect analysis, static shapes for folding ``shape_of``) run type inference
  first; a program that does not check (an open expression, an ill-typed
  module handed to a single pass) is transformed untyped, conservatively.
* :func:`reachable_globals` — the globals reachable from ``main`` (all of them
  for a module without ``main``), in first-reference order.
"""

from __future__ import annotations

from semantics.analysis import global_vars
from semantics.errors import RelayError
from semantics.module import IRModule

__all__ = ["reachable_globals", "typed_or_same"]


def typed_or_same(mod: IRModule) -> IRModule:
    """``infer(mod)`` when the module checks, else ``mod`` itself (its nodes untyped).

    A module that is already typed (every function has its ``checked_type``, as
    ``Sequential`` leaves it) is used as it is.
    """
    from typechecker import infer

    if mod.functions and all(fn.checked_type is not None for fn in mod.functions.values()):
        return mod

    try:
        out = infer(mod)
    except RelayError:
        return mod
    assert isinstance(out, IRModule)
    return out


def reachable_globals(mod: IRModule) -> list[str]:
    """Global names reachable from ``main`` through references (every global without ``main``)."""
    if "main" not in mod:
        return list(mod.functions)
    order = ["main"]
    seen = {"main"}
    stack = ["main"]
    while stack:
        name = stack.pop()
        for gv in global_vars(mod.functions[name]):
            callee = gv.name_hint
            if callee in mod.functions and callee not in seen:
                seen.add(callee)
                order.append(callee)
                stack.append(callee)
    return order
