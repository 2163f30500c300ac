"""Generated blocks: hot paths of the evaluator as straight-line Python, one function per node.

The driver (:meth:`Machine.run <interpreter.machine.Machine.run>`) runs the case of each node
it meets (:class:`interpreter.eval.Interpreter`: one case per rule, dispatched on the node's
type, establishing premises in place where it can). AST nodes are immutable, so all that
dispatch decides about a node can be decided once: after the driver has run a node's case
``HOT`` times, :func:`hot_step` writes the node's **block** — a Python function doing what
the cases do from that node, for that node only — and the driver runs the block instead.

What a block does (when the activation has no graph-shared node, ``env.shared`` empty, as
in every program written with ``let`` s; otherwise it runs the node's case, which consults
the memo of Semantics-Shared where needed):

* the ``let`` s of a chain (along the bodies, at most ``BLOCK_LETS``): for each, the value,
  then Semantics-Let and Γ[x ↦ v] — or Semantics-Let-Rec and Γ[x ↦ ⟨fn, Γ, x⟩] for a
  function literal. That is what the driver does when the case of one ``let`` returns
  ``Tail(body, Γ[x ↦ v])`` and the body is the next ``let``;
* then one *terminal*: a value; the application of a callee (Semantics-Call written out
  for a closure of the right arity: the body's ``Tail``, a new activation); an ``if``
  (Semantics-If-True / -False) or a ``match`` (Semantics-ADT-Match, the leading clauses
  whose pattern is a variable, a wildcard or a constructor of variables and wildcards tried
  in the block) whose chosen branch is written out in turn, at most ``BRANCH_NESTING``
  levels; or ``Tail(node)``, handing any other node to the driver.

A premise (a ``let``'s value, an argument, a condition, ...) is established in place when it
is a leaf (variable, constant, global, operator, constructor) or a tree, at most
``BLOCK_HEIGHT`` deep, of operator and constructor calls, projections, tuples and function
literals (:func:`block_plan`); else it is *awaited*: the block is then a generator and
``yield`` s ``(expr, env)`` to the driver exactly where the case's ``await_premises`` would.
The rules fire in the order of the cases — callee, arguments left to right, then
Semantics-Call-Op / -ADT-Constructor; the tuple, then Semantics-Projection; the fields,
then Semantics-Product; Semantics-Closure for a literal. Only the bookkeeping differs:

* every node's facts are constants of the function (the node, its rule, its span), and
  every intermediate value is a local variable;
* a variable bound by a ``let`` of the block, or already read in it, is read from the
  local holding its value, still firing Semantics-Id at each use. The environment answers
  the same: a later ``let`` of the block binding the same variable updates the local, and
  evaluating an awaited premise in the block's environment can only add bindings of
  variables not visible there (``Env.extend``), never change a visible one;
* an operator's value is looked up once per block (the interpreter's ``OpValue`` for a name
  is made once per evaluation), each use firing Semantics-Op;
* Semantics-Call-Op calls the reference's checked compute directly when the arguments have
  the signature whose verdict the call node's ``BoundOp`` keeps (as ``BoundOp.run`` does
  for ``Interpreter._call_op``); any other case — a new signature, a failed projection, a
  constructor applied, an unknown operator, a condition that is not a scalar bool, a
  pattern of another kind — is the interpreter's own case at that node, which fires the
  rules or raises the error with the node's span.

A block is written in two variants: *observed* (``fuel``, ``trace``: it calls
``interp.fired(rule, node)`` at every rule application, in order) and *unobserved* (no
calls: ``fired`` is a no-op then). While a derivation is recorded, no block runs (the
driver then runs the cases only). ``tests/interpreter/test_interpreter_inplace.py`` checks
that the rule sequence of an evaluation equals the recorded derivation's, on programs run
often enough for their blocks to be made.

Recursion: writing a block's source recurses at most ``BLOCK_HEIGHT`` levels per premise and
``BRANCH_NESTING`` levels of branches; a block calls no other block (awaited premises and
tail calls go through the driver), a chain longer than ``BLOCK_LETS`` continues in the next
block, and an expression in which a node occurs twice gets no block (it is graph-shared).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from interpreter.env import Env
from interpreter.machine import MISSING, NodeCache, Rule, Tail
from interpreter.values import Closure, ConstructorValue, OpValue
from semantics.errors import InternalError, RelayError, RelayRuntimeError, unbound_variable
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
    PatternConstructor,
    PatternVar,
    PatternWildcard,
    Tuple,
    TupleGetItem,
    Var,
)

__all__ = ["BLOCK_HEIGHT", "BLOCK_LETS", "HOT", "OP_FAILURES", "Step", "block", "block_plan",
           "hot_step", "lookup_parent", "op_failed", "step_cache"]

Step = Callable[[Any, Any, Env], Any]
"""What the driver runs for a node: ``step(interp, node, env)`` answers what a case answers
(a value, a ``Tail``, or a generator awaiting premises through the driver)."""

HOT = 32
"""How many runs of a node's case by the driver make it worth writing the node's block."""

BLOCK_LETS = 48
"""The most ``let`` s one block runs (a longer chain continues in the next block)."""

BLOCK_LINES = 1500
"""A chain stops after the ``let`` that makes its block longer than this (lines of source)."""

BRANCH_NESTING = 2
"""How many levels of ``match`` clauses and ``if`` branches a block writes out (deeper ones are
handed to the driver)."""

BLOCK_HEIGHT = 6
"""How deep an expression a block evaluates in place may be (it bounds the recursion)."""

OP_FAILURES = (ArithmeticError, ValueError, TypeError, IndexError, MemoryError)
"""What Semantics-Call-Op reports as "operator ... failed" (as ``Interpreter._call_op`` does)."""

_LEAVES = (Var, Constant, Op, GlobalVar, Constructor)
_CALLEES = (Op, Constructor)


def op_failed(f: OpValue, exc: BaseException, span: Any) -> RelayRuntimeError:
    """The error of an operator whose computation raised ``exc`` (``Interpreter._call_op``'s)."""
    return RelayRuntimeError(f"operator {f.name} failed: {exc}", span)


def lookup_parent(env: Env, x: Var) -> Any:
    """Γ(x) found in the frames enclosing ``env``'s own (the rest of the walk of
    ``Interpreter._eval_var``, Semantics-Id's premise).

    Raises:
        RelayRuntimeError: ``x`` is unbound.
    """
    frame = env.parent
    while frame is not None:
        v = frame.vars.get(x, MISSING)
        if v is not MISSING:
            return v
        frame = frame.parent
    raise RelayRuntimeError(unbound_variable("%" + x.name_hint), x.span)


def block_plan(e: Expr) -> bool:
    """True when a block evaluates ``e`` in place: a leaf, or a tree of operator and
    constructor calls, projections, tuples and function literals (their bodies are not
    evaluated) over leaves, at most ``BLOCK_HEIGHT`` levels deep, in which no node occurs
    twice (explicit stack)."""
    seen: set[int] = set()
    work: list[tuple[Expr, int]] = [(e, 0)]
    while work:
        node, depth = work.pop()
        t = type(node)
        if t in _LEAVES:
            continue
        if depth >= BLOCK_HEIGHT or id(node) in seen:
            return False
        seen.add(id(node))
        if t is Call and type(node.op) in _CALLEES:  # type: ignore[attr-defined]
            work.extend((a, depth + 1) for a in node.args)  # type: ignore[attr-defined]
        elif t is TupleGetItem:
            work.append((node.tuple_value, depth + 1))  # type: ignore[attr-defined]
        elif t is Tuple:
            work.extend((f, depth + 1) for f in node.fields)  # type: ignore[attr-defined]
        elif t is not Function:
            return False
    return True


_RULES = {
    "ID": Rule.SEMANTICS_ID, "CONST": Rule.SEMANTICS_CONST, "OP": Rule.SEMANTICS_OP,
    "CALL_OP": Rule.SEMANTICS_CALL_OP, "PROJECTION": Rule.SEMANTICS_PROJECTION,
    "PRODUCT": Rule.SEMANTICS_PRODUCT, "CLOSURE": Rule.SEMANTICS_CLOSURE,
    "LET": Rule.SEMANTICS_LET, "LET_REC": Rule.SEMANTICS_LET_REC, "CALL": Rule.SEMANTICS_CALL,
    "ADT_MATCH": Rule.SEMANTICS_ADT_MATCH, "PATTERN_VAR": Rule.SEMANTICS_PATTERN_VAR,
    "PATTERN_WILDCARD": Rule.SEMANTICS_PATTERN_WILDCARD,
    "PATTERN_CONSTRUCTOR": Rule.SEMANTICS_PATTERN_CONSTRUCTOR, "IF_TRUE": Rule.SEMANTICS_IF_TRUE,
    "IF_FALSE": Rule.SEMANTICS_IF_FALSE,
}


class _GraphShared(Exception):
    """A node occurs twice in what a block would evaluate: it is graph-shared, so the block
    would never run its fast path (the activation has shared nodes); none is written."""


class _Writer:
    """The source of one block, and the constants it refers to."""

    def __init__(self, observed: bool):
        self.observed = observed
        self.lines: list[str] = []
        self.names: dict[str, Any] = {
            "MISSING": MISSING, "Tail": Tail, "Closure": Closure, "ndarray": np.ndarray,
            "Env": Env, "ConstructorValue": ConstructorValue, "BOOL": np.dtype(bool),
            "RelayError": RelayError, "OP_FAILURES": OP_FAILURES, "op_failed": op_failed,
            "lookup_parent": lookup_parent,
        }
        for short, rule in _RULES.items():
            self.names["R_" + short] = rule
        self.ids: dict[int, str] = {}
        self.count = 0
        # Per variable: the local holding its value in the block (bound or already read).
        self.vars: dict[Var, str] = {}
        # Per operator name: the local holding the interpreter's OpValue.
        self.opvals: dict[str, str] = {}
        # Whether the block awaits a premise through the driver (it is then a generator).
        self.awaits = False
        # The non-leaf nodes written so far (a node met twice is graph-shared).
        self.written: set[int] = set()
        # The indentation of the code being written, and how many branches (of a match or
        # an if) it is nested in.
        self.base = 0
        self.nested = 0

    def visit(self, e: Expr) -> None:
        """Note that ``e`` (not a leaf) is written; raise :class:`_GraphShared` the second time."""
        if id(e) in self.written:
            raise _GraphShared
        self.written.add(id(e))

    def const(self, obj: Any) -> str:
        """The name of a constant of the block (``obj`` is kept alive by the namespace)."""
        name = self.ids.get(id(obj))
        if name is None:
            name = self.ids[id(obj)] = f"k{len(self.ids)}"
            self.names[name] = obj
        return name

    def tmp(self) -> str:
        self.count += 1
        return f"v{self.count}"

    def line(self, text: str, indent: int = 1) -> None:
        self.lines.append("    " * (indent + self.base) + text)

    def fire(self, rule: str, node: Any, indent: int = 1) -> None:
        if self.observed:
            self.line(f"fired(R_{rule}, {self.const(node)})", indent)

    def source(self) -> str:
        head = ["def block(interp, e, env):", "    if env.shared:",
                "        return case(interp, e, env)"]
        if self.awaits:
            head += ["    return run(interp, env)", "def run(interp, env):"]
        head.append("    sites_get = interp._sites.get")
        if self.observed:
            head.append("    fired = interp.fired")
        return "\n".join(head + self.lines) + "\n"

    def premise(self, e: Expr, height: int = 0) -> str:
        """Write Γ ⊢ e ⇓ v: in place when it can be, else awaited through the driver (an
        operator or constructor call evaluates its callee and arguments this way, the
        needed ones awaited, at most ``BLOCK_HEIGHT`` levels deep); return its local."""
        if block_plan(e):
            return self.value(e)
        self.visit(e)
        if type(e) is Call and type(e.op) in _CALLEES and height < BLOCK_HEIGHT:
            return self.call(e, height)
        v = self.tmp()
        self.line(f"{v} = yield ({self.const(e)}, env)")
        self.awaits = True
        return v

    # --- expressions evaluated in place (recursion bounded by BLOCK_HEIGHT) ----------------
    def value(self, e: Expr) -> str:
        """Write the evaluation of ``e`` (accepted by :func:`block_plan`); return its local."""
        t = type(e)
        if t is Var:
            return self.var(e)  # type: ignore[arg-type]
        if t is Constant:
            self.fire("CONST", e)  # [Semantics-Const]
            return self.const(e.data)  # type: ignore[attr-defined]
        if t is Op:
            return self.op(e)  # type: ignore[arg-type]
        if t is GlobalVar or t is Constructor:
            v = self.tmp()
            method = "_eval_global_var" if t is GlobalVar else "_eval_constructor"
            self.line(f"{v} = interp.{method}({self.const(e)}, env)")
            return v
        self.visit(e)
        if t is Function:
            v = self.tmp()
            self.fire("CLOSURE", e)  # [Semantics-Closure]
            self.line(f"{v} = Closure({self.const(e)}, env)")
            return v
        if t is TupleGetItem:
            return self.projection(e)  # type: ignore[arg-type]
        if t is Tuple:
            fields = [self.value(f) for f in e.fields]  # type: ignore[attr-defined]
            v = self.tmp()
            self.line(f"{v} = ({''.join(f + ', ' for f in fields)})")
            self.fire("PRODUCT", e)  # [Semantics-Product]
            return v
        assert t is Call, t  # block_plan accepts nothing else
        return self.call(e)  # type: ignore[arg-type]

    def var(self, x: Var) -> str:
        # [Semantics-Id]
        known = self.vars.get(x)
        if known is not None:
            self.fire("ID", x)
            return known
        v = self.tmp()
        k = self.const(x)
        self.line(f"{v} = env.vars.get({k}, MISSING)")
        self.line(f"if {v} is MISSING:")
        # the enclosing frame (a closure's), then the rest of the walk
        self.line("up = env.parent", 2)
        self.line("if up is not None:", 2)
        self.line(f"{v} = up.vars.get({k}, MISSING)", 3)
        self.line(f"if {v} is MISSING:", 2)
        self.line(f"{v} = lookup_parent(env if up is None else up, {k})", 3)
        self.fire("ID", x)
        self.vars[x] = v
        return v

    def op(self, o: Op) -> str:
        # [Semantics-Op]
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
        # [Semantics-Projection] (the case raises the errors)
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

    def call(self, e: Call, height: int = -1) -> str:
        """An operator or constructor call; its arguments in place (``height`` < 0) or
        :meth:`premise` s at ``height + 1``."""
        f = self.value(e.op)
        if height < 0:
            args = [self.value(a) for a in e.args]
        else:
            args = [self.premise(a, height + 1) for a in e.args]
        arg_list = "[" + ", ".join(args) + "]"
        v = self.tmp()
        k = self.const(e)
        if type(e.op) is not Op:
            # [Semantics-ADT-Constructor] (and its errors): the case
            self.line(f"{v} = interp.call_value({f}, {arg_list}, {k})")
            return v
        # [Semantics-Call-Op]: the reference's checked compute when the arguments have the
        # signature whose verdict the site keeps (what the case does), else the case.
        self.line(f"{v} = MISSING")
        self.line(f"site = sites_get({k})")
        self.line("if site is not None:")
        self.line("last = site.last", 2)
        self.line(f"if last is not None and site.opdef is {f}.opdef "
                  "and site.impl is site.opdef.impl:", 2)
        self.base += 1
        self.line("dt, sh, verdict = last", 2)
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
        self.base -= 1
        self.line(f"if {v} is MISSING:")
        self.line(f"{v} = interp._call_op({f}, {arg_list}, {k})", 2)
        return v

    # --- after the lets -------------------------------------------------------------------
    def chain(self, node: Expr) -> tuple[int, bool]:
        """Write the lets of the chain beginning at ``node`` and its terminal; return (the
        number of lets written, whether the terminal does more than hand its node back)."""
        lets = 0
        while type(node) is Let and lets < BLOCK_LETS and len(self.lines) < BLOCK_LINES:
            let: Let = node
            value = let.value
            if type(value) is Function:
                # [Semantics-Let-Rec]   c = ⟨fn, Γ, x⟩    Γ[x ↦ c] ⊢ e2 ⇓ v
                v = self.tmp()
                self.line(f"{v} = Closure({self.const(value)}, env, {self.const(let.var)}, "
                          f"{'%' + let.var.name_hint!r})")
                self.fire("LET_REC", let)
            else:
                # [Semantics-Let]   Γ ⊢ e1 ⇓ v1    Γ[x ↦ v1] ⊢ e2 ⇓ v
                v = self.premise(value)
                self.fire("LET", let)
            self.bind(let.var, v)
            self.vars[let.var] = v
            lets += 1
            node = let.body
        return lets, self.terminal(node)

    def bind(self, x: Var, v: str) -> None:
        """Γ[x ↦ v]: ``Env.extend`` written out (in place unless ``x`` is already visible)."""
        k = self.const(x)
        self.line(f"if {k} in env.vars or (env.parent is not None and env.parent.binds({k})):")
        self.line(f"env = Env({{{k}: {v}}}, env, env.memo, env.shared)", 2)
        self.line("else:")
        self.line(f"env.vars[{k}] = {v}", 2)

    def branch(self, node: Expr, target: str, indent: int) -> None:
        """Continue with ``node`` (a clause's or branch's expression, the rule's tail premise)
        in the environment ``target``: written here, nested at ``indent``, while the block is
        small; else ``Tail`` to the driver."""
        k = self.const(node)
        if self.nested >= BRANCH_NESTING or len(self.lines) >= BLOCK_LINES:
            self.line(f"return Tail({k}, {target})", indent)
            return
        if target != "env":
            self.line(f"env = {target}", indent)
        saved = (dict(self.vars), dict(self.opvals), self.base)
        self.base += indent - 1
        self.nested += 1
        try:
            self.chain(node)
        finally:
            self.vars, self.opvals, self.base = saved
            self.nested -= 1

    def terminal(self, node: Expr) -> bool:
        """Write what the block does after its lets (see the module docstring); False when
        that is only handing ``node`` to the driver."""
        k = self.const(node)
        t = type(node)
        if t is Let:
            self.line(f"return Tail({k}, env)")  # the chain goes on in the next block
            return False
        if block_plan(node) or (t is Call and type(node.op) in _CALLEES):  # type: ignore
            self.line(f"return {self.premise(node)}")
            return True
        if t is Call:
            f = self.premise(node.op)  # type: ignore[attr-defined]
            values = [self.premise(a) for a in node.args]  # type: ignore[attr-defined]
            self.closure_call(node, f, values)  # type: ignore[arg-type]
            return True
        if t is If:
            # [Semantics-If-True] / [Semantics-If-False] (the case raises the error)
            c = self.premise(node.cond)  # type: ignore[attr-defined]
            self.line(f"if type({c}) is ndarray and {c}.dtype is BOOL and {c}.ndim == 0:")
            self.line(f"if {c}:", 2)
            self.fire("IF_TRUE", node, 3)
            self.branch(node.true_branch, "env", 3)  # type: ignore[attr-defined]
            self.fire("IF_FALSE", node, 2)
            self.branch(node.false_branch, "env", 2)  # type: ignore[attr-defined]
            self.line(f"return interp._if({k}, env, [{c}])")
            return True
        if t is Match:
            d = self.premise(node.data)  # type: ignore[attr-defined]
            self.match(node, d)  # type: ignore[arg-type]
            return True
        self.line(f"return Tail({k}, env)")
        return False


    def closure_call(self, e: Call, f: str, values: list[str]) -> None:
        """Apply the callee's value ``f``: Semantics-Call written out for a closure of the
        right arity (``Interpreter._call_closure``), else the interpreter's own rule."""
        k = self.const(e)
        args = "[" + ", ".join(values) + "]"
        n = len(values)
        # [Semantics-Call]   ... Γc[f ↦ c][x1 ↦ v1, ..., xn ↦ vn]; ∅ ⊢ body ⇓ v
        self.line(f"if type({f}) is Closure and len({f}.function.params) == {n}:")
        self.line(f"fn = {f}.function", 2)
        self.line("params = fn.params", 2)
        frame = "{" + ", ".join(f"params[{i}]: {v}" for i, v in enumerate(values)) + "}"
        self.line(f"frame = {frame}", 2)
        self.line(f"if {f}.self_var is not None and {f}.self_var not in frame:", 2)
        self.line(f"frame[{f}.self_var] = {f}", 3)
        self.line("body = fn.body", 2)
        self.line("shared = interp._shared.get(body)", 2)
        self.line("if shared is None:", 2)
        self.line("shared = interp.shared_of(body)", 3)
        self.fire("CALL", e, 2)
        self.line(f"return Tail(body, Env(frame, {f}.env, {{}} if shared else None, shared), "
                  f"{k})", 2)
        self.line(f"return interp.call_value({f}, {args}, {k})")

    def match(self, e: Match, d: str) -> None:
        """Semantics-ADT-Match on the scrutinee's value ``d``: the leading clauses whose
        pattern is a variable, a wildcard or a constructor of variables and wildcards are
        tried here (what ``Interpreter._matches`` does for them: a clause that does not
        match fires nothing), the first other clause — or an unexpected arity — hands the
        value to the interpreter's case, which tries every clause again."""
        k = self.const(e)
        self.line(f"if type({d}) is ConstructorValue:")
        start = len(self.lines)
        for clause in e.clauses:
            p = clause.lhs
            tp = type(p)
            if tp is PatternWildcard or tp is PatternVar:
                # [Semantics-Pattern-Wildcard] / [Semantics-Pattern-Var]
                if tp is PatternVar:
                    self.fire("PATTERN_VAR", p, 2)
                    target = f"env.extend({self.const(p.var)}, {d})"  # type: ignore
                else:
                    self.fire("PATTERN_WILDCARD", p, 2)
                    target = "env"
                self.fire("ADT_MATCH", e, 2)
                self.branch(clause.rhs, target, 2)
                break
            if tp is not PatternConstructor or not all(
                    type(q) in (PatternVar, PatternWildcard) for q in p.patterns):  # type: ignore
                break
            # [Semantics-Pattern-Constructor] with variables and wildcards
            name = p.constructor.name  # type: ignore[attr-defined]
            self.line(f"if {d}.name == {name!r}:", 2)
            self.line(f"if len({d}.fields) != {len(p.patterns)}:", 3)  # type: ignore
            self.line(f"return interp._match({k}, env, [{d}])", 4)
            self.fire("PATTERN_CONSTRUCTOR", p, 3)
            target = "env"
            for i, q in enumerate(p.patterns):  # type: ignore[attr-defined]
                if type(q) is PatternVar:
                    self.fire("PATTERN_VAR", q, 3)
                    target = f"{target}.extend({self.const(q.var)}, {d}.fields[{i}])"
                else:
                    self.fire("PATTERN_WILDCARD", q, 3)
            self.fire("ADT_MATCH", e, 3)
            self.branch(clause.rhs, target, 3)
        if len(self.lines) == start:
            self.lines.pop()  # no clause is tried here
        self.line(f"return interp._match({k}, env, [{d}])")


def block(e: Expr, observed: bool, case: Step) -> Step:
    """The block of ``e`` (see the module docstring) as a step ``(interp, e, env)``.

    Args:
        e: the node the driver runs the block for.
        observed: whether the block fires the rules (fuel, trace) or not.
        case: ``e``'s case: what the block runs when the activation has graph-shared nodes,
            and what is returned instead of a block that would do nothing more.
    Returns:
        The step.
    """
    w = _Writer(observed)
    w.names["case"] = case
    try:
        return _write(w, e, case)
    except _GraphShared:
        return case


def _write(w: _Writer, e: Expr, case: Step) -> Step:
    """:func:`block`'s work (raises :class:`_GraphShared`)."""
    lets, handled = w.chain(e)
    if not handled and lets == 0:
        return case  # nothing to gain: the block would hand its own node back
    namespace = dict(w.names)
    exec(compile(w.source(), f"<block of {type(e).__name__}>", "exec"), namespace)  # noqa: S102
    step: Step = namespace["block"]
    return step


# node -> its block in each mode (the driver looks there first).
_UNOBSERVED_STEPS = NodeCache(1 << 15)
_OBSERVED_STEPS = NodeCache(1 << 15)
# node -> how many times the driver ran its case, before its block was made.
_RUNS = NodeCache(1 << 16)


def step_cache(observed: bool) -> NodeCache:
    """The blocks of one mode, filled by :func:`hot_step`."""
    return _OBSERVED_STEPS if observed else _UNOBSERVED_STEPS


def hot_step(e: Expr, cases: dict[type, Step], observed: bool) -> Step:
    """What the driver runs for ``e`` when :func:`step_cache` has nothing for it: its case
    from ``cases`` (by node type) the first ``HOT - 1`` times, then its block (:func:`block`,
    kept in :func:`step_cache`).

    Raises:
        InternalError: no case evaluates nodes of ``e``'s type.
    """
    t = type(e)
    case = cases.get(t)
    if case is None:
        raise InternalError(f"no evaluation rule for {t.__name__}")
    if t in _LEAVES:
        return step_cache(observed).put(e, case)
    runs = _RUNS.get(e, 0) + 1
    if runs < HOT:
        _RUNS.put(e, runs)
        return case
    _RUNS.pop(e, None)
    return step_cache(observed).put(e, block(e, observed, case))
