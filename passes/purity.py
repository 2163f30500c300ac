"""Effect analysis: what evaluating an expression may do besides producing its value.

Design note. DCE, CSE and constant folding each need a different notion of
"pure", so the analysis computes a small set of **effect flags** per node and
each pass asks the question it needs:

* ``WRITES`` — may run ``ref_write`` (directly or in a called function);
* ``READS`` — may read a reference (its value depends on the store);
* ``ALLOCATES`` — may create a reference (each evaluation a fresh one);
* ``MAY_FAIL`` — may end in a runtime error or never end: integer division
  family, ``power`` on integers, ``arange``, ``take``, non-exhaustive
  ``match?``, operators on dynamic (``?``) shapes, recursion, and calls of
  anything the analysis cannot see into.

Derived questions: :func:`removable` (DCE may drop the expression when its
value is unused: no writes, cannot fail — reads and unused allocations are
unobservable), :func:`shareable` (CSE may evaluate it once for two
occurrences: no writes, reads or allocations) and :func:`foldable`.

Calls are analysed interprocedurally: a call's flags are its callee's and
arguments' flags plus the callee's *latent* flags — those of its body when the
callee is an operator (per operator, above), a constructor (none), a function
literal, a variable let-bound to a function literal, or a global (analysed
once each, callees first; recursion — a callee still being analysed — counts
as everything). Any other callee (a parameter, a call result, a projection)
is unknown: every flag.

Invariants: flags are computed once per node (memoized by identity over the
DAG), iteratively; the analysis is conservative — a flag missing means the
effect is impossible.
"""

from __future__ import annotations

from collections.abc import Iterable

from semantics import ops
from semantics.analysis import global_vars
from semantics.expr import (
    Call,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    Grad,
    Let,
    Match,
    Op,
    RefCreate,
    RefRead,
    RefWrite,
    Var,
    children,
)
from semantics.graphs import strongly_connected_components
from semantics.module import IRModule
from semantics.ops import Traps
from semantics.shapes import is_any
from semantics.types import TensorType, Type
from semantics.visitor import post_order

__all__ = [
    "Effect", "EffectAnalysis", "callees_first", "foldable", "removable", "shareable",
]


class Effect:
    """What evaluating an expression may do: bit flags (plain ints, combined with ``|``)."""

    NONE = 0
    WRITES = 1
    READS = 2
    ALLOCATES = 4
    MAY_FAIL = 8
    ALL = 15




def removable(flags: int) -> bool:
    """DCE may drop an unused expression with these flags."""
    return not flags & (Effect.WRITES | Effect.MAY_FAIL)


def shareable(flags: int) -> bool:
    """CSE may merge two occurrences of an expression with these flags."""
    return not flags & (Effect.WRITES | Effect.READS | Effect.ALLOCATES)


def foldable(flags: int) -> bool:
    """Constant folding may evaluate an expression with these flags at compile time."""
    return not flags & (Effect.WRITES | Effect.READS | Effect.ALLOCATES)


# What evaluating a node of each kind does itself, besides its children's effects (calls and
# incomplete matches depend on more than the kind: ``_node_flags``); values do nothing.
_OWN_EFFECT = {RefCreate: Effect.ALLOCATES, RefRead: Effect.READS, RefWrite: Effect.WRITES,
               Grad: Effect.MAY_FAIL}
_VALUES = frozenset((Var, Constant, Op, Constructor, GlobalVar, Function))


class EffectAnalysis:
    """Effect flags of the nodes of a module (or of a lone expression).

    Args:
        mod: the module whose globals calls may reach (None: globals are unknown).
    """

    def __init__(self, mod: IRModule | None = None):
        self.mod = mod
        self._flags: dict[int, int] = {}
        self._keep: list[Expr] = []  # keeps analysed nodes alive (ids stay unique)
        self._let_functions: dict[int, Function] = {}
        self._global_latent: dict[str, int] = {}
        if mod is not None:
            self._analyse_globals(mod)

    # --- public ---------------------------------------------------------------------------
    def flags(self, expr: Expr) -> int:
        """The effect flags of evaluating ``expr`` (analysing it first if needed)."""
        found = self._flags.get(id(expr))
        if found is None:
            self._analyse(expr)
            found = self._flags[id(expr)]
        return found

    def latent(self, callee: Expr) -> int:
        """The flags of *calling* the value of ``callee`` (not of evaluating ``callee``)."""
        t = type(callee)
        if t is Op:
            return Effect.NONE  # per call site: see _call_flags
        if t is Constructor:
            return Effect.NONE
        if isinstance(callee, Function):
            return self._body_flags(callee)
        if t is Var:
            fn = self._let_functions.get(id(callee))
            if fn is not None:
                return self._body_flags(fn)
            return Effect.ALL
        if isinstance(callee, GlobalVar):
            return self._global_latent.get(callee.name_hint, Effect.ALL)
        return Effect.ALL

    # --- the analysis -----------------------------------------------------------------------
    def _body_flags(self, fn: Function) -> int:
        found = self._flags.get(id(fn.body))
        # A body still being analysed (recursion through a let-bound function) is unknown.
        return Effect.ALL if found is None else found

    def _analyse(self, root: Expr) -> None:
        order = post_order(root)
        for node in order:
            if type(node) is Let and type(node.value) is Function:
                self._let_functions[id(node.var)] = node.value
        flags = self._flags
        for node in order:
            if id(node) in flags:
                continue
            flags[id(node)] = self._node_flags(node)
            self._keep.append(node)

    def _node_flags(self, node: Expr) -> int:
        t = type(node)
        if t in _VALUES:
            return Effect.NONE  # a value (a function literal evaluates to a closure)
        own = _OWN_EFFECT.get(t, Effect.NONE)
        flags = self._flags
        for kid in children(node):
            own |= flags[id(kid)]
        if isinstance(node, Call):
            return own | self._call_flags(node)
        if isinstance(node, Match) and not node.complete:
            return own | Effect.MAY_FAIL
        return own

    def _call_flags(self, call: Call) -> int:
        op = call.op
        if type(op) is Op:
            return _op_flags(op.name, call)
        return self.latent(op)

    def _analyse_globals(self, mod: IRModule) -> None:
        """Latent flags of every global, callees first (recursion: every flag)."""
        for name in callees_first(mod):
            fn = mod.functions[name]
            self._analyse(fn)
            self._global_latent[name] = self._flags[id(fn.body)]


def _op_flags(name: str, call: Call) -> int:
    """The latent flags of an operator call (may it fail on these arguments?): what the
    registry says the operator ``traps`` on, and dynamic shapes (checked at run time)."""
    traps = ops.get(name).traps if ops.exists(name) else Traps.NEVER
    if traps is Traps.ALWAYS:
        return Effect.MAY_FAIL
    if traps is Traps.ON_INTEGERS and not _all_float(call.args):
        return Effect.MAY_FAIL
    if any(_is_dynamic(a.checked_type) for a in call.args):
        return Effect.MAY_FAIL
    return Effect.NONE


def _all_float(args: Iterable[Expr]) -> bool:
    for a in args:
        t = a.checked_type
        if not isinstance(t, TensorType) or not t.dtype.startswith("float"):
            return False
    return True


def _is_dynamic(t: Type | None) -> bool:
    if t is None:
        return False
    return isinstance(t, TensorType) and any(is_any(d) for d in t.shape)


def callees_first(mod: IRModule) -> list[str]:
    """Global names in an order where callees precede callers (a cycle's members together)."""
    calls = {name: _calls(mod, name) for name in mod.functions}
    return [name for component in strongly_connected_components(mod.functions, calls)
            for name in component]


def _calls(mod: IRModule, name: str) -> list[str]:
    return [g.name_hint for g in global_vars(mod.functions[name])]
