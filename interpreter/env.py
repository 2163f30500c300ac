"""Γ, the environment of the big-step rules: variables (by identity) to values.

Representation
--------------
An :class:`Env` is a *frame* — a dict keyed by :class:`~semantics.expr.Var`
objects (nodes hash by identity, so two binders that share a name are two
keys) — linked to the frame of the enclosing scope (``parent``). A function
activation (Semantics-Call) opens one frame whose parent is the closure's
captured environment; the lets and pattern variables of that activation go
into the same frame.

``extend(x, v)`` is Γ[x ↦ v] in O(1) and does not copy: when ``x`` is not yet
visible from the frame it is *added to the frame in place* and the frame is
returned; when ``x`` is already visible (the same Var object bound again — a
genuine shadowing of one binder by itself, as happens after a pass duplicates
code) a child frame holding just ``x`` is returned, so every holder of the old
frame still sees the old binding.

Why in-place addition is unobservable
-------------------------------------
A frame may be shared (a closure captured it; a later premise of the same rule
uses it) when a binding is added in place. The added ``x`` was not visible
from that frame, so for every well-scoped program (each use of a variable lies
inside its binder's scope) no lookup through the frame that lexically means a
different binding can find it: every binder enclosing such a use was bound
before the use's scope was entered, so it was visible and would have forced a
child frame instead. The only difference from persistent maps shows in
ill-scoped, unchecked programs: a variable used *outside* its binder's scope
after that binder ran in the same activation is found instead of being reported
unbound. ``evaluate(..., check=True)`` rejects such programs before they run.

Each frame also carries its activation's sharing memo (Semantics-Shared):
``shared`` is the set of graph-shared nodes of the function body being
evaluated and ``memo`` maps those already evaluated to their values. Child
frames share both with their parent frame of the same activation.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from semantics.expr import Expr, Var

_EMPTY_SHARED: frozenset[Expr] = frozenset()


class Env:
    """One frame of Γ. See the module docstring for the sharing argument.

    Invariants: ``vars`` maps Var objects to values; ``parent`` is the enclosing
    scope's frame (None for the outermost); ``shared`` is a frozenset of nodes and
    ``memo`` a dict (or None exactly when ``shared`` is empty) belonging to the
    activation this frame is part of.
    """

    __slots__ = ("vars", "parent", "memo", "shared")

    def __init__(self, vars: dict[Var, Any] | None = None, parent: Env | None = None,
                 memo: dict[Expr, Any] | None = None,
                 shared: frozenset[Expr] = _EMPTY_SHARED):
        self.vars = {} if vars is None else vars
        self.parent = parent
        self.memo = memo
        self.shared = shared

    def binds(self, var: Var) -> bool:
        """True when ``var`` is visible from this frame."""
        frame: Env | None = self
        while frame is not None:
            if var in frame.vars:
                return True
            frame = frame.parent
        return False

    def extend(self, var: Var, value: Any) -> Env:
        """Γ[var ↦ value] (O(1); in place unless ``var`` is already visible)."""
        if var in self.vars or (self.parent is not None and self.parent.binds(var)):
            return Env({var: value}, self, self.memo, self.shared)
        self.vars[var] = value
        return self

    def extend_many(self, bindings: Iterable[tuple[Var, Any]]) -> Env:
        """Γ[x1 ↦ v1, ..., xn ↦ vn] for a pattern's bindings (left to right)."""
        env = self
        for var, value in bindings:
            env = env.extend(var, value)
        return env

    def activation(self, vars: dict[Var, Any], shared: frozenset[Expr]) -> Env:
        """A new activation frame whose parent is this environment (Semantics-Call).

        ``shared`` is the callee body's set of shared nodes; the memo starts empty.
        """
        return Env(vars, self, {} if shared else None, shared)

    def __repr__(self) -> str:
        names = []
        frame: Env | None = self
        while frame is not None:
            names.append("{" + ", ".join("%" + v.name_hint for v in frame.vars) + "}")
            frame = frame.parent
        return "<Env " + " -> ".join(names) + ">"
