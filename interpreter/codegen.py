"""Generated blocks: the hot steps of :mod:`interpreter.compiled`, as straight-line Python.

A *block* is what the driver runs from one node when the activation has no graph-shared
node (``env.shared`` is empty, as in every program written with ``let`` s): the ``let`` s of
a chain whose values are established in place (at most ``BLOCK_LETS`` of them), then one
*terminal* — the value of an in-place tree, a call of a closure whose callee and
arguments are in place, an ``if`` or a ``match`` whose condition / scrutinee is in place,
the case of a ``let`` whose value needs the driver, or the hand-over (``Tail``) of any
other node to the driver. :func:`block` writes the Python source of one function doing
exactly what the compiled steps do along that path and compiles it once (the step of a
node is promoted to its block after ``HOT`` runs, see :func:`interpreter.compiled.step_of`).
What changes is only the bookkeeping:

* every node's facts are constants of the function (the node itself, its rule, its
  attributes' site), and every intermediate value is a local variable instead of an
  argument passed between closures;
* a variable bound by a ``let`` of the block, or already read in it, is read from the
  local holding its value (the environment the block extends would answer the same: a
  block contains no effect and no call of a closure, and a later binding of the same
  variable in the block updates the local), still firing Semantics-Id;
* an operator value is looked up once per block (the interpreter's ``OpValue`` for a name
  never changes during an evaluation), each use firing Semantics-Op.

Two variants exist per block: *observed* ones call ``interp.fired(rule, node)`` at each
rule application, in the order of the rules (fuel, ``trace``); *unobserved* ones — for an
evaluation nobody observes, where ``fired`` is a no-op — leave the calls out. Every path
that can fail or needs anything unusual (a relation to decide, a projection out of range, a
constructor applied, an unknown operator) calls the interpreter's own case there, which
fires the rule or raises the error with the node's span. A block that finds a graph-shared
node in its activation runs the compiled step it replaces (``slow``) instead: it never
has to consult the memo.

Recursion: writing a tree's source recurses at most ``INLINE_HEIGHT`` levels; the
generated code calls no other block.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from interpreter.compiled import (
    OP_FAILURES,
    Cases,
    Step,
    inline_plan,
    lookup_parent,
    op_failed,
    step_of,
)
from interpreter.machine import MISSING, NodeCache, Rule, Tail
from interpreter.values import Closure
from semantics.errors import RelayError
from semantics.expr import (
    Call,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    Tuple,
    TupleGetItem,
    Var,
)

__all__ = ["BLOCK_LETS", "HOT", "block", "hot_step"]

BLOCK_LETS = 48
"""The most ``let`` s one block runs (a longer chain continues in the next block)."""

HOT = 4
"""How many runs of a compiled step make it worth generating its block."""

_RULE_NAMES = {
    "ID": Rule.SEMANTICS_ID, "CONST": Rule.SEMANTICS_CONST, "OP": Rule.SEMANTICS_OP,
    "CALL_OP": Rule.SEMANTICS_CALL_OP, "PROJECTION": Rule.SEMANTICS_PROJECTION,
    "PRODUCT": Rule.SEMANTICS_PRODUCT, "CLOSURE": Rule.SEMANTICS_CLOSURE,
    "LET": Rule.SEMANTICS_LET, "LET_REC": Rule.SEMANTICS_LET_REC,
}


class _Writer:
    """The source of one block, and the constants it refers to."""

    def __init__(self, observed: bool):
        self.observed = observed
        self.lines: list[str] = []
        self.names: dict[str, Any] = {
            "MISSING": MISSING, "Tail": Tail, "Closure": Closure, "ndarray": np.ndarray,
            "RelayError": RelayError, "OP_FAILURES": OP_FAILURES, "op_failed": op_failed,
            "lookup_parent": lookup_parent,
        }
        for short, rule in _RULE_NAMES.items():
            self.names["R_" + short] = rule
        self.ids: dict[int, str] = {}
        self.count = 0
        # Per variable: the local holding its value in the block (bound or already read).
        self.vars: dict[Var, str] = {}
        # Per operator name: the local holding the interpreter's OpValue.
        self.opvals: dict[str, str] = {}

    def const(self, obj: Any) -> str:
        name = self.ids.get(id(obj))
        if name is None:
            name = self.ids[id(obj)] = f"k{len(self.ids)}"
            self.names[name] = obj
        return name

    def tmp(self) -> str:
        self.count += 1
        return f"v{self.count}"

    def line(self, text: str, indent: int = 1) -> None:
        self.lines.append("    " * indent + text)

    def fire(self, rule: str, node: Expr, indent: int = 1) -> None:
        if self.observed:
            self.line(f"fired(R_{rule}, {self.const(node)})", indent)

    # --- trees (recursion bounded by INLINE_HEIGHT) ---------------------------------------
    def value(self, e: Expr) -> str:
        """Write the evaluation of ``e`` (accepted by inline_plan, or a leaf); its local."""
        t = type(e)
        if t is Var:
            return self.var(e)  # type: ignore[arg-type]
        if t is Constant:
            self.fire("CONST", e)
            return self.const(e.data)  # type: ignore[attr-defined]
        if t is Op:
            return self.op(e)  # type: ignore[arg-type]
        if t is GlobalVar or t is Constructor:
            v = self.tmp()
            method = "_eval_global_var" if t is GlobalVar else "_eval_constructor"
            self.line(f"{v} = interp.{method}({self.const(e)}, env)")
            return v
        if t is Function:
            v = self.tmp()
            self.fire("CLOSURE", e)
            self.line(f"{v} = Closure({self.const(e)}, env)")
            return v
        if t is TupleGetItem:
            return self.projection(e)  # type: ignore[arg-type]
        if t is Tuple:
            fields = [self.value(f) for f in e.fields]  # type: ignore[attr-defined]
            v = self.tmp()
            self.line(f"{v} = ({''.join(f + ', ' for f in fields)})")
            self.fire("PRODUCT", e)
            return v
        assert t is Call
        return self.call(e)  # type: ignore[arg-type]

    def var(self, x: Var) -> str:
        known = self.vars.get(x)
        if known is not None:
            self.fire("ID", x)
            return known
        v = self.tmp()
        k = self.const(x)
        self.line(f"{v} = env.vars.get({k}, MISSING)")
        self.line(f"if {v} is MISSING:")
        self.line(f"{v} = lookup_parent(env, {k})", 2)
        self.fire("ID", x)
        self.vars[x] = v
        return v

    def op(self, o: Op) -> str:
        known = self.opvals.get(o.name)
        if known is not None:
            self.fire("OP", o)
            return known
        v = self.tmp()
        self.line(f"{v} = interp._ops.get({o.name!r})")
        self.line(f"if {v} is None:")
        self.line(f"{v} = interp._eval_op({self.const(o)}, env)", 2)
        if self.observed:
            self.line("else:")
            self.fire("OP", o, 2)
        self.opvals[o.name] = v
        return v

    def projection(self, e: TupleGetItem) -> str:
        t = self.value(e.tuple_value)
        v = self.tmp()
        k = self.const(e)
        if e.index < 0:
            self.line(f"{v} = interp._projection({k}, env, [{t}])")
            return v
        self.line(f"if type({t}) is tuple and {e.index} < len({t}):")
        self.line(f"{v} = {t}[{e.index}]", 2)
        self.fire("PROJECTION", e, 2)
        self.line("else:")
        self.line(f"{v} = interp._projection({k}, env, [{t}])", 2)
        return v

    def call(self, e: Call) -> str:
        f = self.value(e.op)
        args = [self.value(a) for a in e.args]
        arg_list = "[" + ", ".join(args) + "]"
        v = self.tmp()
        k = self.const(e)
        if type(e.op) is not Op:
            self.line(f"{v} = interp.call_value({f}, {arg_list}, {k})")
            return v
        # [Semantics-Call-Op]: the case's fast path (the verdict kept at the site for the
        # last argument signature), else the case itself.
        self.line(f"{v} = MISSING")
        self.line(f"site = interp._sites.get({k})")
        self.line(f"if site is not None and site.last is not None and site.opdef is {f}.opdef "
                  f"and site.impl is site.opdef.impl:")
        self.line("dt, sh, verdict = site.last", 2)
        checks = " and ".join(
            f"type({a}) is ndarray and {a}.dtype is dt[{i}] and {a}.shape == sh[{i}]"
            for i, a in enumerate(args)) or "True"
        self.line(f"if {checks}:", 2)
        self.line("try:", 3)
        self.line(f"{v} = site.decided(verdict, {arg_list}, site.attrs)", 4)
        self.line("except RelayError as err:", 3)
        self.line(f"err.with_span({k}.span)", 4)
        self.line("raise", 4)
        self.line("except OP_FAILURES as exc:", 3)
        self.line(f"raise op_failed({f}, exc, {k}.span) from exc", 4)
        self.fire("CALL_OP", e, 3)
        self.line(f"if {v} is MISSING:")
        self.line(f"{v} = interp._call_op({f}, {arg_list}, {k})", 2)
        return v


def _in_place(e: Expr) -> bool:
    return type(e) in (Var, Constant, Op, GlobalVar, Constructor) or inline_plan(e) is not None


def block(e: Expr, observed: bool, slow: Callable[[Any, Any, Any], Any],
          generic_let: Callable[[Any, Any, Any], Any]) -> Callable[[Any, Any, Any], Any]:
    """The block of ``e`` (see the module docstring) as a step ``(interp, e, env)``.

    Args:
        e: the node the driver runs the block for.
        observed: whether to fire the rules (fuel, trace) or not (nobody observes them).
        slow: the compiled step of ``e``, run when the activation has graph-shared nodes.
        generic_let: the case of a ``let`` (for a ``let`` whose value needs the driver).
    Returns:
        The step.
    """
    w = _Writer(observed)
    w.names["slow"] = slow
    w.names["generic_let"] = generic_let
    w.line("if env.shared:")
    w.line("return slow(interp, e, env)", 2)
    if observed:
        w.line("fired = interp.fired")
    node = e
    lets = 0
    while type(node) is Let and lets < BLOCK_LETS:
        let: Let = node  # type: ignore[assignment]
        value = let.value
        if type(value) is Function:
            # [Semantics-Let-Rec]
            v = w.tmp()
            w.line(f"{v} = Closure({w.const(value)}, env, {w.const(let.var)}, "
                   f"{'%' + let.var.name_hint!r})")
            w.fire("LET_REC", let)
        elif _in_place(value):
            v = w.value(value)
            w.fire("LET", let)  # [Semantics-Let]
        else:
            break
        w.line(f"env = env.extend({w.const(let.var)}, {v})")
        w.vars[let.var] = v
        lets += 1
        node = let.body
    if not _terminal(w, node) and lets == 0:
        return slow  # nothing to gain: the block would hand its own node back
    source = "def block(interp, e, env):\n" + "\n".join(w.lines) + "\n"
    namespace = dict(w.names)
    exec(compile(source, f"<block {type(e).__name__}>", "exec"), namespace)  # noqa: S102
    step: Callable[[Any, Any, Any], Any] = namespace["block"]
    step.source = source  # type: ignore[attr-defined]
    return step


def _terminal(w: _Writer, node: Expr) -> bool:
    """Write what the block does after its lets (see the module docstring); False when that
    is only handing ``node`` to the driver."""
    k = w.const(node)
    t = type(node)
    if t is Let:
        if type(node.value) is not Function and not _in_place(node.value):  # type: ignore
            w.line(f"return generic_let(interp, {k}, env)")  # the let awaits its value
            return True
        w.line(f"return Tail({k}, env)")  # the chain goes on in the next block
        return False
    if _in_place(node):
        w.line(f"return {w.value(node)}")
        return True
    if t is Call and all(_in_place(x) for x in (node.op, *node.args)):  # type: ignore
        f = w.value(node.op)  # type: ignore[attr-defined]
        args = "[" + ", ".join([w.value(a) for a in node.args]) + "]"  # type: ignore
        w.line(f"if type({f}) is Closure:")
        w.line(f"return interp._call_closure({f}, {args}, {k})", 2)
        w.line(f"return interp.call_value({f}, {args}, {k})")
        return True
    if t is If and _in_place(node.cond):  # type: ignore[attr-defined]
        w.line(f"return interp._if({k}, env, [{w.value(node.cond)}])")  # type: ignore
        return True
    if t is Match and _in_place(node.data):  # type: ignore[attr-defined]
        w.line(f"return interp._match({k}, env, [{w.value(node.data)}])")  # type: ignore
        return True
    w.line(f"return Tail({k}, env)")
    return False

# node -> its step in each mode: the compiled step counting its runs, then the block.
_UNOBSERVED_STEPS = NodeCache(1 << 16)
_OBSERVED_STEPS = NodeCache(1 << 16)


def step_cache(observed: bool) -> NodeCache:
    """The steps of one mode (what the driver looks up first), filled by :func:`hot_step`."""
    return _OBSERVED_STEPS if observed else _UNOBSERVED_STEPS


def hot_step(e: Expr, cases: Cases, observed: bool) -> Step:
    """The step of ``e`` in one mode (cached): leaves' cases as they are; for other nodes
    the compiled step (:func:`interpreter.compiled.step_of`), replaced by the node's block
    once it has run ``HOT`` times."""
    cache = step_cache(observed)
    step = cache.get(e)
    if step is not None:
        return step
    base = step_of(e, cases)
    if type(e) in _LEAVES:
        return cache.put(e, base)
    return cache.put(e, _counting(e, base, cases, observed, cache))


_LEAVES = (Var, Constant, Op, GlobalVar, Constructor)


def _counting(e: Expr, base: Step, cases: Cases, observed: bool, cache: NodeCache) -> Step:
    runs = 0

    def counting(interp: Any, node: Any, env: Any) -> Any:
        nonlocal runs
        runs += 1
        if runs < HOT:
            return base(interp, node, env)
        promoted = cache.put(e, block(e, observed, base, cases[Let]))
        return promoted(interp, node, env)
    return counting
