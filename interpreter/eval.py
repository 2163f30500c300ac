"""The big-step evaluator — the oracle (RULES.md, section "Evaluation"; paper appendix Fig. 14).

Design
------
**One case per rule.** Every rule of the evaluation section of
``semantics/RULES.md`` has exactly one case here (the pattern rules' in
:mod:`interpreter.matching`), which opens with the rule as written there and
reports itself with ``self.fired(Rule.X, node)`` when it applies (this feeds ``fuel``,
``trace`` and the derivation recorder of
``relay run --trace``). Put RULES.md and this file side by side: a rule with
premises has a *front* ``_eval_x`` naming its premises in the rule's order, and
the case receives their values (see "Premises in place" below).

**A premise is a ``yield``.** ``v = yield Eval(e, env)`` asks the driver to
establish Γ ⊢ e ⇓ v and resumes the waiting generator with ``v``. The driver
(:meth:`Machine.run <interpreter.machine.Machine.run>`) keeps the suspended
generators on an explicit list, so the depth of a derivation is bounded by memory,
never by Python's recursion limit.
Rules without premises (constants, variables, globals, functions, operators,
constructors) are plain methods returning the value directly: they cost no
generator.

**Tail positions return ``Tail(e, env)``.** The last premise of a rule whose
value is the conclusion's value (the body of a let, the chosen branch of an
``if``, the clause of a ``match``, the body of a called closure) is not
awaited: the case returns ``Tail(e, env)`` and the driver continues with ``e``
in place of the finished case. A tail-recursive loop therefore runs in
constant space, however many iterations it makes. A closure call returns
``Tail(body, env, call=node)``: the driver opens a new *activation* there.

**Depth.** ``max_depth`` bounds nested *non-tail* calls: an activation's depth
is one more than the depth of the activation whose suspended case awaits its
value, so a call in tail position keeps its caller's depth. Exceeding it is a
``RelayRuntimeError`` "stack exhausted" at the call.

**State.** Γ is :class:`interpreter.env.Env` (frames keyed by variable
identity, O(1) extension); the store Δ is the heap of
:class:`~interpreter.values.RefValue` cells (effects happen in the order the
premises are written, which is §5's left-to-right order); the sharing memo M
of Semantics-Shared lives in the activation's frame: nodes reachable along
more than one edge of a function body (graph bindings) are evaluated once per
activation (see :func:`~interpreter.machine.shared_nodes`).

**Premises in place.** A premise whose expression needs no suspended case —
a leaf (variable, constant, global, operator, constructor: never graph-shared), or,
when no node of it is graph-shared, a function literal or a small tree of operator
and constructor calls and projections over leaves (:func:`inline_plan`) — is
established *in place* by the case, without a generator or a round trip through
the driver: the same rules fire in the same order (callee, arguments left to right,
then Semantics-Call-Op / -ADT-Constructor; the tuple, then Semantics-Projection),
with the same fuel, trace and errors; only the bookkeeping
differs (earlier versions also evaluated a graph-shared function literal in place,
firing Semantics-Closure where the derivation has Semantics-Shared). So every rule with premises
is written as a *front* (``_eval_x``, listing the premises in RULES.md order) and
a *case* (opening with the rule, receiving the premises' values and firing the
rule): :meth:`Interpreter.premises` establishes the premises in place while it
can and hands the rest to the generator :meth:`Interpreter.await_premises`, which
``yield``s them to the driver. A call whose premises are all in place therefore
costs no generator at all (a closure call then returns its ``Tail`` straight to
the driver). Nothing is established in place while a derivation is recorded
(every judgment is reported, with its own ``open``/``close``).

**Speed.** Dispatch is one ``type(node) → function`` dict lookup in tables built
once per class; rule names are read from a plain-class mirror of the
:class:`~semantics.rules.Rule` enum (an Enum attribute read costs more than a whole
small rule); operator attributes are normalized once per call node and the shared
nodes once per function body, both cached across evaluations (AST nodes are
immutable); an operator call node also keeps the relation's verdict for the last
argument signature it saw, so a repeated call goes straight to the reference's checked
compute (its :class:`~semantics.ops.bound.BoundOp`); ``fired`` is bound at construction to
the cheapest variant the requested features allow (a builtin no-op when nothing observes the rules);
numpy's error state is installed once per evaluation (:meth:`Machine.run
<interpreter.machine.Machine.run>`), not per operator call.

**Blocks.** The cases above are what the driver runs for a node the first few times
it meets it. Once a node is hot (``interpreter.codegen.HOT`` runs), the driver runs the
node's *block* instead: Python source written for that node alone by
:mod:`interpreter.codegen` — the composition of these same cases along the node's
``let`` chain, its in-place premises and its terminal (a call, an ``if``, a ``match``, a
value), with every dispatch decided once and every intermediate value a local — which
fires the same rules on the same nodes in the same order and raises the same errors
(it calls the case itself on every unusual path). Blocks run only in activations without
graph-shared nodes, and never while a derivation is recorded.

**Errors.** Every failure a program can provoke is a ``RelayRuntimeError``
carrying the span of the node at fault: unbound variable, undefined global,
calling a non-function, wrong arity, projection of a non-tuple, a condition
that is not a scalar bool, non-exhaustive match, operator failures (e.g.
integer division by zero), out of fuel, stack exhausted. An operator that
returns something other than tensors is an :class:`InternalError` (a broken
registry contract, not a user error).

``grad(e)`` is a macro (paper appendix): it is expanded by the function
registered with :func:`register_grad_expander` (the ``ad`` package registers
one) and the expansion is evaluated in place (Semantics-Grad). The interpreter never
imports ``ad`` (it sits below it, docs/architecture.md "Layers"): when no expander is
registered, :func:`grad_expander` runs the installed plugins of the entry-point group
``relay.grad_expanders`` (``ad:register`` in pyproject.toml), so ``evaluate`` of text using
``grad`` works without importing ``ad`` first whenever ``ad`` is installed.

Modules
-------
This module holds the rule cases (:class:`Interpreter`: its dispatch tables, the
cases and the helpers they use) and the ``grad`` hook they use, so it reads side by
side with RULES.md. The rest of the evaluator is next to it:

* :mod:`interpreter.matching`: the matching judgment v ⊨ p ⇒ σ (the pattern rules);
* :mod:`interpreter.machine`: the driver the cases run on (:class:`Eval` and
  :class:`Tail` requests, :class:`~interpreter.machine.Machine` with the explicit
  stack, the sharing memo frames, depth accounting and the ``fired`` bookkeeping of
  fuel, ``trace`` and the :class:`Recorder`; :func:`shared_nodes`);
* :mod:`interpreter.codegen`: the blocks of hot nodes (see "Blocks" above);
* :mod:`interpreter.entry`: the public entry point (:func:`evaluate`,
  :func:`evaluate_recorded` for ``relay run --trace``), which runs an
  :class:`Interpreter`;
* :mod:`interpreter.convert`: Python arguments to values (with
  :mod:`interpreter.export` for results and :mod:`interpreter.linking` for the
  prelude); :mod:`interpreter.env` (Γ) and :mod:`interpreter.values`.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from typing import Any

import numpy as np

from interpreter.codegen import hot_step, step_cache
from interpreter.env import Env
from interpreter.grad_hook import GradExpander, grad_expander, register_grad_expander
from interpreter.machine import (
    MISSING,
    UNOBSERVED,
    Eval,
    Machine,
    NodeCache,
    Recorder,
    Rule,
    Tail,
)
from interpreter.matching import PatternMatcher
from interpreter.values import (
    Closure,
    ConstructorFunction,
    ConstructorValue,
    OpValue,
    RefValue,
    check_op_result,
    construct,
    not_a_function,
    value_str,
)
from semantics import errors, ops
from semantics.errors import (
    InternalError,
    RelayError,
    RelayRuntimeError,
    non_exhaustive_match,
    unbound_variable,
    undefined_global,
)
from semantics.expr import (
    Call,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    Grad,
    If,
    Let,
    Match,
    Op,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from semantics.module import IRModule
from semantics.ops.bound import OP_FAILURES, BoundOp

__all__ = ["INLINE_HEIGHT", "PENDING", "GradExpander", "Interpreter", "check_op_result",
           "grad_expander", "inline_plan", "register_grad_expander"]


# Operator call sites: per call node, the operator bound to its normalized attributes, which
# also keeps its relation's verdict for the last argument signature seen there (BoundOp).
_SITES = NodeCache(16384)
_BOOL = np.dtype(bool)

INLINE_HEIGHT = 6
"""How deep an expression established in place may be (it bounds the recursion)."""

_LEAF_NODES = (Var, GlobalVar, Constant, Op, Constructor)
_CALLEES = (Op, Constructor)
# Per node: the internal nodes of an expression established in place, or None.
_PLANS = NodeCache(16384)


def inline_plan(e: Expr) -> frozenset[Expr] | None:
    """The internal nodes of ``e`` when it can be established in place, else None.

    That is when ``e`` is a tree of operator or constructor calls and projections whose
    leaves are variables, constants, globals, operators or constructors, at most
    ``INLINE_HEIGHT`` levels deep (explicit stack). A node met twice is graph-shared, so
    the caller sends the expression to the driver anyway.
    """
    internal: set[Expr] = set()
    work: list[tuple[Expr, int]] = [(e, 0)]
    while work:
        node, depth = work.pop()
        t = type(node)
        if t in _LEAF_NODES:
            continue
        if depth >= INLINE_HEIGHT:
            return None
        if isinstance(node, Call) and type(node.op) in _CALLEES:
            kids: tuple[Expr, ...] = node.args
        elif isinstance(node, TupleGetItem):
            kids = (node.tuple_value,)
        else:
            return None
        if node not in internal:
            internal.add(node)
            work.extend((kid, depth + 1) for kid in kids)
    return frozenset(internal)


PENDING = object()
"""What an in-place evaluator returns when the premise needs the driver (nothing fired)."""

# A rule case receiving the values of its premises: case(interp, node, env, values).
Conclusion = Callable[[Any, Any, Env, list[Any]], Any]


# --- the interpreter --------------------------------------------------------------------------

class Interpreter(PatternMatcher, Machine):
    """Evaluates expressions of one module: the rule cases, run by :class:`Machine`.

    See the module docstring for the design. The dispatch tables (node type →
    function, called with the interpreter as first argument) are built once, below the
    class.

    Args:
        mod: the program (globals and ADTs).
        fuel: the number of rule applications allowed (None: unbounded).
        trace: called as ``trace(rule_name, node)`` for every rule application.
        max_depth: the bound on nested non-tail calls.
        recorder: a :class:`Recorder` receiving the derivation (slower; no tail calls).
    """

    # Rules without premises: node -> value.
    AXIOMS: dict[type, Callable[[Any, Any, Env], Any]]
    # Rules with premises: node -> a value, a generator or a Tail (the fronts).
    CASES: dict[type, Callable[[Any, Any, Env], Any]]
    # How a callee value is applied (Semantics-Call, -Call-Op, -ADT-Constructor).
    APPLIERS: dict[type, Callable[[Any, Any, list[Any], Any], Any]]
    # Premises established in place: node -> value, or PENDING.
    INLINE: dict[type, Callable[[Any, Any, Env], Any]]
    LEAVES: dict[type, Callable[[Any, Any, Env], Any]]
    # AXIOMS and CASES together: the case the driver runs for a node, by the node's type.
    CASES_BY_TYPE: dict[type, Callable[[Any, Any, Env], Any]]
    _direct: dict[type, Callable[[Any, Any, Env], Any]]  # leaves established in place
    _inline: dict[type, Callable[[Any, Any, Env], Any]]  # premises established in place
    _sites = _SITES

    def __init__(self, mod: IRModule, *, fuel: int | None = None,
                 trace: Callable[[str, Any], Any] | None = None, max_depth: int = 100_000,
                 recorder: Recorder | None = None):
        super().__init__(mod, fuel=fuel, trace=trace, max_depth=max_depth, recorder=recorder)
        self._globals: dict[str, Closure] = {}
        self._ops: dict[str, OpValue] = {}
        self._nullary: dict[Constructor, ConstructorValue] = {}
        self._grads: dict[Grad, Expr] = {}
        # Code being evaluated outside the module's globals (an expression given to
        # `evaluate`): the grad expander looks there for let-bound functions too.
        self.roots: tuple[Expr, ...] = ()
        # The blocks the driver runs for hot nodes (interpreter.codegen), in the variant
        # for this evaluation: observed (fuel, trace) or not.
        self._observed = self.fired is not UNOBSERVED
        self.step_cache = step_cache(self._observed)
        if recorder is not None:
            # Premises are established in place, except while recording a derivation,
            # where every judgment is reported.
            self._direct = {}
            self._inline = {}

    def step_for(self, e: Expr) -> Any:
        """What the driver runs for ``e``: its case, or its block once it is hot
        (:func:`interpreter.codegen.hot_step`)."""
        return hot_step(e, self.CASES_BY_TYPE, self._observed)

    def global_closure(self, gv: GlobalVar) -> Closure:
        """The closure of a global function (one per global per interpreter)."""
        c = self._globals.get(gv.name_hint)
        if c is None:
            fn = self.mod.functions.get(gv.name_hint)
            if fn is None:
                raise RelayRuntimeError(undefined_global("@" + gv.name_hint), gv.span)
            c = self._globals[gv.name_hint] = Closure(fn, Env(), None, "@" + gv.name_hint)
        return c

    # === establishing premises ===========================================================

    def premise(self, e: Any, env: Env, x: Expr, case: Conclusion) -> Any:
        """``case(e, env, [v])`` where Γ ⊢ x ⇓ v (:meth:`premises` for one premise)."""
        now = self._inline.get(type(x))
        if now is not None:
            v = now(self, x, env)
            if v is not PENDING:
                return case(self, e, env, [v])
        return self.await_premises(e, env, (x,), [], case)

    def premises(self, e: Any, env: Env, exprs: Sequence[Expr], case: Conclusion) -> Any:
        """``case(e, env, [v1, ..., vn])`` where Γ ⊢ exprs[i] ⇓ vi, left to right.

        The premises are established in place while they can be; at the first that
        cannot, the rest is handed to :meth:`await_premises` (a generator for the driver).
        """
        values: list[Any] = []
        inline = self._inline
        for x in exprs:
            now = inline.get(type(x))
            v = now(self, x, env) if now is not None else PENDING
            if v is PENDING:
                return self.await_premises(e, env, exprs, values, case)
            values.append(v)
        return case(self, e, env, values)

    def await_premises(self, e: Any, env: Env, exprs: Sequence[Expr], values: list[Any],
                       case: Conclusion) -> Generator[tuple[Expr, Env], Any, Any]:
        """The premises ``exprs[len(values):]`` (through the driver when needed), then ``case``."""
        inline = self._inline
        for x in exprs[len(values):]:
            now = inline.get(type(x))
            v = now(self, x, env) if now is not None else PENDING
            if v is PENDING:
                v = yield Eval(x, env)
            values.append(v)
        return case(self, e, env, values)

    def _inline_function(self, e: Function, env: Env) -> Any:
        """Γ ⊢ fn ... in place (Semantics-Closure) unless the literal is graph-shared."""
        shared = env.shared
        if shared and e in shared:
            return PENDING  # Semantics-Shared: through the driver's memo
        return self._eval_function(e, env)

    def _inline_tree(self, e: Call | TupleGetItem, env: Env) -> Any:
        """An operator/constructor call or a projection over leaves, in place; else PENDING.

        In place when the whole expression is a tree of operator and constructor calls
        and projections over leaves, at most ``INLINE_HEIGHT`` deep (see
        :func:`inline_plan`), none of whose nodes is graph-shared in this activation.
        (A closure call is never in place: its body is a tail premise for the driver.)
        """
        plan = _PLANS.get(e, MISSING)
        if plan is MISSING:
            plan = _PLANS.put(e, inline_plan(e))
        if plan is None:
            return PENDING
        shared = env.shared
        if shared and not shared.isdisjoint(plan):
            return PENDING  # Semantics-Shared: through the driver's memo
        return self._in_place(e, env)

    def _in_place(self, e: Any, env: Env) -> Any:
        """Γ ⊢ e ⇓ v for an expression :func:`inline_plan` accepted: the rules the driver
        would fire, in its order (callee, arguments left to right, then the call's rule;
        the tuple, then the projection). Recursion bounded by ``INLINE_HEIGHT``."""
        t = type(e)
        if t is Call:
            op = e.op
            direct = self._direct
            f = direct[type(op)](self, op, env)
            args = []
            for arg in e.args:
                ta = type(arg)
                # A leaf argument: its axiom directly (what the recursive call would do).
                args.append(direct[ta](self, arg, env) if ta in direct
                            else self._in_place(arg, env))
            if type(f) is OpValue:
                return self._call_op(f, args, e)
            return self.call_value(f, args, e)
        if t is TupleGetItem:
            return self._projection(e, env, [self._in_place(e.tuple_value, env)])
        return self._direct[t](self, e, env)

    # === rules without premises ==========================================================

    # [Semantics-Const]   ───────────────   Γ ⊢ const(t) ⇓ t
    def _eval_constant(self, e: Constant, env: Env) -> Any:
        self.fired(Rule.SEMANTICS_CONST, e)
        return e.data

    # [Semantics-Id]   Γ(x) = v   ⟹   Γ ⊢ x ⇓ v
    def _eval_var(self, e: Var, env: Env) -> Any:
        frame: Env | None = env
        while frame is not None:
            v = frame.vars.get(e, MISSING)
            if v is not MISSING:
                self.fired(Rule.SEMANTICS_ID, e)
                return v
            frame = frame.parent
        raise RelayRuntimeError(unbound_variable("%" + e.name_hint), e.span)

    # [Semantics-Global]   P(@g) = fn   ⟹   Γ ⊢ @g ⇓ ⟨fn, ∅⟩
    def _eval_global_var(self, e: GlobalVar, env: Env) -> Any:
        c = self._globals.get(e.name_hint) or self.global_closure(e)
        self.fired(Rule.SEMANTICS_GLOBAL, e)
        return c

    # [Semantics-Closure]   ───────────────   Γ ⊢ fn(x1, ..., xn) { e } ⇓ ⟨fn, Γ⟩
    def _eval_function(self, e: Function, env: Env) -> Any:
        self.fired(Rule.SEMANTICS_CLOSURE, e)
        return Closure(e, env)

    # [Semantics-Op]   ───────────────   Γ ⊢ op ⇓ op
    def _eval_op(self, e: Op, env: Env) -> Any:
        v = self._ops.get(e.name)
        if v is None:
            if not ops.exists(e.name):
                raise RelayRuntimeError(f"unknown operator {e.name}", e.span)
            v = self._ops[e.name] = OpValue(e.name, ops.get(e.name))
        self.fired(Rule.SEMANTICS_OP, e)
        return v

    # [Semantics-Constructor]   ───────────────   Γ ⊢ C ⇓ C      (C() when C is nullary)
    def _eval_constructor(self, e: Constructor, env: Env) -> Any:
        self.fired(Rule.SEMANTICS_CONSTRUCTOR, e)
        if e.inputs:
            return ConstructorFunction(e)
        v = self._nullary.get(e)
        if v is None:
            v = self._nullary[e] = ConstructorValue(e.name, (), e)
        return v

    # [Semantics-Shared]   e is shared    M(e) = v   ⟹   Γ; M ⊢ e ⇓ v; M
    def eval_shared(self, e: Expr, v: Any) -> Any:
        self.fired(Rule.SEMANTICS_SHARED, e)
        return v

    # === rules with premises =============================================================

    def _eval_tuple(self, e: Tuple, env: Env) -> Any:
        return self.premises(e, env, e.fields, Interpreter._product)

    # [Semantics-Product]   Γ ⊢ e1 ⇓ v1  ...  Γ ⊢ en ⇓ vn   ⟹   Γ ⊢ (e1, ..., en) ⇓ (v1, ..., vn)
    def _product(self, e: Tuple, env: Env, fields: list[Any]) -> Any:
        self.fired(Rule.SEMANTICS_PRODUCT, e)
        return tuple(fields)

    def _eval_tuple_getitem(self, e: TupleGetItem, env: Env) -> Any:
        return self.premise(e, env, e.tuple_value, Interpreter._projection)

    # [Semantics-Projection]   Γ ⊢ e ⇓ (v0, ..., vn-1)   0 ≤ i < n   ⟹   Γ ⊢ e.i ⇓ vi
    def _projection(self, e: TupleGetItem, env: Env, values: list[Any]) -> Any:
        t = values[0]
        if type(t) is not tuple:
            raise RelayRuntimeError(
                f"projection .{e.index} of a value that is not a tuple: {value_str(t, limit=60)}",
                e.span)
        if not 0 <= e.index < len(t):
            raise RelayRuntimeError(
                f"projection .{e.index} out of range for a tuple of {len(t)} fields", e.span)
        self.fired(Rule.SEMANTICS_PROJECTION, e)
        return t[e.index]

    def _eval_if(self, e: If, env: Env) -> Any:
        return self.premise(e, env, e.cond, Interpreter._if)

    def _if(self, e: If, env: Env, values: list[Any]) -> Tail:
        """The condition's value selects Semantics-If-True or -If-False."""
        c = values[0]
        if type(c) is not np.ndarray or c.dtype != _BOOL or c.ndim != 0:
            raise RelayRuntimeError(
                "the condition of an if must be a scalar bool (Tensor[(), bool]), got "
                + value_str(c, limit=60), e.cond.span or e.span)
        if c:
            return self._if_true(e, env)
        return self._if_false(e, env)

    # [Semantics-If-True]   Γ ⊢ c ⇓ True    Γ ⊢ e1 ⇓ v   ⟹   Γ ⊢ if (c) { e1 } else { e2 } ⇓ v
    def _if_true(self, e: If, env: Env) -> Tail:
        self.fired(Rule.SEMANTICS_IF_TRUE, e)
        return Tail(e.true_branch, env)

    # [Semantics-If-False]  Γ ⊢ c ⇓ False   Γ ⊢ e2 ⇓ v   ⟹   Γ ⊢ if (c) { e1 } else { e2 } ⇓ v
    def _if_false(self, e: If, env: Env) -> Tail:
        self.fired(Rule.SEMANTICS_IF_FALSE, e)
        return Tail(e.false_branch, env)

    def _eval_let(self, e: Let, env: Env) -> Any:
        """A let binding a function literal is recursive (§3); any other let is not."""
        if type(e.value) is Function:
            return self._let_rec(e, env)
        return self.premise(e, env, e.value, Interpreter._let)

    # [Semantics-Let]   Γ ⊢ e1 ⇓ v1    Γ[x ↦ v1] ⊢ e2 ⇓ v   ⟹   Γ ⊢ let x = e1; e2 ⇓ v
    #                   (e1 not a function literal)
    def _let(self, e: Let, env: Env, values: list[Any]) -> Tail:
        self.fired(Rule.SEMANTICS_LET, e)
        return Tail(e.body, env.extend(e.var, values[0]))

    # [Semantics-Let-Rec]   c = ⟨fn, Γ, x⟩    Γ[x ↦ c] ⊢ e2 ⇓ v   ⟹   Γ ⊢ let x = fn; e2 ⇓ v
    def _let_rec(self, e: Let, env: Env) -> Tail:
        fn = e.value
        assert isinstance(fn, Function)  # the front sends only function literals here
        c = Closure(fn, env, e.var, "%" + e.var.name_hint)
        self.fired(Rule.SEMANTICS_LET_REC, e)
        return Tail(e.body, env.extend(e.var, c))

    def _eval_call(self, e: Call, env: Env) -> Any:
        """The premises Semantics-Call, -Call-Op and -ADT-Constructor share: callee, then
        arguments left to right; the callee's value then selects the rule (:meth:`call_value`).

        (:meth:`premises` written out for the commonest node: no tuple of premises is
        built unless one of them needs the driver.)
        """
        inline = self._inline
        op = e.op
        now = inline.get(type(op))
        f = now(self, op, env) if now is not None else PENDING
        if f is PENDING:
            return self.await_premises(e, env, (op, *e.args), [], Interpreter._call)
        args: list[Any] = []
        for arg in e.args:
            now = inline.get(type(arg))
            v = now(self, arg, env) if now is not None else PENDING
            if v is PENDING:
                return self.await_premises(e, env, (op, *e.args), [f, *args], Interpreter._call)
            args.append(v)
        return self.call_value(f, args, e)

    def _call(self, e: Call, env: Env, values: list[Any]) -> Any:
        return self.call_value(values[0], values[1:], e)

    def call_value(self, f: Any, args: list[Any], e: Any) -> Any:
        """Apply the callee's value ``f`` (Semantics-Call, -Call-Op or -ADT-Constructor):
        a value, or the :class:`Tail` of a closure's body."""
        applier = self.APPLIERS.get(type(f))
        if applier is None:
            raise not_a_function(
                f, (e.op.span or e.span) if type(e) is Call else getattr(e, "span", None))
        return applier(self, f, args, e)

    # [Semantics-Call]   Γ ⊢ e0 ⇓ c = ⟨fn(x1, ..., xn) { body }, Γc (, f)⟩
    #                    Γ ⊢ e1 ⇓ v1  ...  Γ ⊢ en ⇓ vn
    #                    Γc[f ↦ c][x1 ↦ v1, ..., xn ↦ vn]; ∅ ⊢ body ⇓ v
    #                    ⟹   Γ ⊢ e0<τ1, ..., τk>(e1, ..., en) ⇓ v        (type arguments erased)
    def _call_closure(self, c: Closure, args: list[Any], e: Any) -> Tail:
        fn = c.function
        params = fn.params
        if len(args) != len(params):
            raise RelayRuntimeError(
                errors.wrong_arity(c.name or "the function", len(params), len(args)),
                getattr(e, "span", None))
        frame: dict[Var, Any] = dict(zip(params, args))
        if c.self_var is not None and c.self_var not in frame:
            frame[c.self_var] = c
        body = fn.body
        shared = self._shared.get(body)
        if shared is None:
            shared = self.shared_of(body)
        self.fired(Rule.SEMANTICS_CALL, e if e is not None else fn)
        return Tail(body, c.env.activation(frame, shared), e if e is not None else fn)

    # [Semantics-Call-Op]   Γ ⊢ e0 ⇓ op    Γ ⊢ e1 ⇓ v1  ...  Γ ⊢ en ⇓ vn
    #                       ⟦op⟧(v1, ..., vn; normalize_op(attrs)) = v
    #                       ⟹   Γ ⊢ e0(e1, ..., en; attrs) ⇓ v
    def _call_op(self, f: OpValue, args: list[Any], e: Any) -> Any:
        opdef = f.opdef
        if opdef.num_inputs >= 0 and len(args) != opdef.num_inputs:
            raise RelayRuntimeError(
                errors.wrong_arity(f"operator {f.name}", opdef.num_inputs, len(args)),
                getattr(e, "span", None))
        site = self._sites.get(e)
        if site is None or site.opdef is not opdef or site.impl is not opdef.impl:
            site = self.op_site(opdef, e)
        try:
            # ⟦op⟧: decided by the operator's relation, or by the verdict the call node's
            # BoundOp keeps for the last argument signature it saw.
            result = site.run(args)
        except RelayError as err:
            err.with_span(getattr(e, "span", None))
            raise
        except OP_FAILURES as exc:
            # Dynamic shapes (Any) and unchecked programs reach numpy's own checks.
            raise RelayRuntimeError(f"operator {f.name} failed: {exc}",
                                    getattr(e, "span", None)) from exc
        if type(result) is not np.ndarray:
            result = check_op_result(f.name, result)
        self.fired(Rule.SEMANTICS_CALL_OP, e if e is not None else f)
        return result

    def op_attrs(self, opdef: Any, e: Any) -> dict[str, Any]:
        """The normalized attributes of an operator call (cached per call node)."""
        return self.op_site(opdef, e).attrs

    def op_site(self, opdef: Any, e: Any) -> BoundOp:
        """The call site of an operator: its normalized attributes (cached per call node)."""
        if type(e) is not Call:
            return BoundOp(opdef, dict(opdef.normalize_attrs({})))
        site = self._sites.get(e)
        if site is not None and site.opdef is opdef and site.impl is opdef.impl:
            return site
        try:
            attrs = dict(opdef.normalize_attrs(e.attrs))
        except RelayError as err:
            err.with_span(e.span)
            raise
        return self._sites.put(e, BoundOp(opdef, attrs))

    # [Semantics-ADT-Constructor]   Γ ⊢ e0 ⇓ C    Γ ⊢ e1 ⇓ v1  ...  Γ ⊢ en ⇓ vn    n = arity(C)
    #                               ⟹   Γ ⊢ e0(e1, ..., en) ⇓ C(v1, ..., vn)
    def _call_constructor(self, f: Any, args: list[Any], e: Any) -> Any:
        value = construct(f, args, getattr(e, "span", None))
        self.fired(Rule.SEMANTICS_ADT_CONSTRUCTOR, e if e is not None else value.constructor)
        return value

    def _eval_match(self, e: Match, env: Env) -> Any:
        return self.premise(e, env, e.data, Interpreter._match)

    # [Semantics-ADT-Match]   Γ ⊢ e ⇓ v    v ⊭ p1  ...  v ⊭ pi-1    v ⊨ pi ⇒ σ    Γσ ⊢ ei ⇓ v'
    #                         ⟹   Γ ⊢ match (e) { p1 => e1 | ... | pm => em } ⇓ v'
    def _match(self, e: Match, env: Env, values: list[Any]) -> Any:
        v = values[0]
        for clause in e.clauses:
            sigma = self._matches(clause.lhs, v)
            if sigma is not None:
                self.fired(Rule.SEMANTICS_ADT_MATCH, e)
                return Tail(clause.rhs, env.extend_many(sigma) if sigma else env)
        return self._match_fail(e, v)

    # [Semantics-Match-Fail]   Γ ⊢ e ⇓ v    v ⊭ p1  ...  v ⊭ pm
    #                          ⟹   Γ ⊢ match (e) { p1 => e1 | ... | pm => em } ⇓ error
    def _match_fail(self, e: Match, v: Any) -> Any:
        self.fired(Rule.SEMANTICS_MATCH_FAIL, e)
        raise RelayRuntimeError(non_exhaustive_match(value_str(v, limit=80)), e.span)

    def _eval_ref_create(self, e: RefCreate, env: Env) -> Any:
        return self.premise(e, env, e.value, Interpreter._ref_create)

    # [Semantics-Ref-Create]   Γ; Δ ⊢ e ⇓ v; Δ'    ℓ ∉ dom(Δ')   ⟹   Γ; Δ ⊢ ref(e) ⇓ ℓ; Δ'[ℓ ↦ v]
    def _ref_create(self, e: RefCreate, env: Env, values: list[Any]) -> Any:
        self.fired(Rule.SEMANTICS_REF_CREATE, e)
        return RefValue(values[0])

    def _eval_ref_read(self, e: RefRead, env: Env) -> Any:
        return self.premise(e, env, e.ref, Interpreter._ref_read)

    # [Semantics-Ref-Read]   Γ; Δ ⊢ e ⇓ ℓ; Δ'    Δ'(ℓ) = v   ⟹   Γ; Δ ⊢ !e ⇓ v; Δ'
    def _ref_read(self, e: RefRead, env: Env, values: list[Any]) -> Any:
        r = values[0]
        if type(r) is not RefValue:
            raise RelayRuntimeError(
                f"ref_read of a value that is not a reference: {value_str(r, limit=60)}", e.span)
        self.fired(Rule.SEMANTICS_REF_READ, e)
        return r.value

    def _eval_ref_write(self, e: RefWrite, env: Env) -> Any:
        return self.premises(e, env, (e.ref, e.value), Interpreter._ref_write)

    # [Semantics-Ref-Write]   Γ; Δ ⊢ e1 ⇓ ℓ; Δ'    Γ; Δ' ⊢ e2 ⇓ v; Δ''
    #                         ⟹   Γ; Δ ⊢ e1 := e2 ⇓ (); Δ''[ℓ ↦ v]
    def _ref_write(self, e: RefWrite, env: Env, values: list[Any]) -> Any:
        r, v = values
        if type(r) is not RefValue:
            raise RelayRuntimeError(
                f"ref_write to a value that is not a reference: {value_str(r, limit=60)}",
                e.span)
        r.value = v
        self.fired(Rule.SEMANTICS_REF_WRITE, e)
        return ()

    # [Semantics-Grad]   expand_P(grad(e)) = e'    Γ; ∅ ⊢ e' ⇓ v   ⟹   Γ ⊢ grad(e) ⇓ v
    def _eval_grad(self, e: Grad, env: Env) -> Tail:
        expansion = self._grads.get(e)
        if expansion is None:
            expansion = self._grads[e] = self._expand_grad(e)
        self.fired(Rule.SEMANTICS_GRAD, e)
        shared = self.shared_of(expansion)
        return Tail(expansion, Env({}, env, {} if shared else None, shared))

    def _expand_grad(self, e: Grad) -> Expr:
        expander = grad_expander()
        if expander is None:
            raise RelayRuntimeError(
                "grad(...) needs an automatic-differentiation expander (the `ad` package)",
                e.span)
        try:
            expansion = expander(e, self.mod, self.roots)
        except RelayError as err:
            err.with_span(e.span)
            raise
        if not isinstance(expansion, Expr):
            raise InternalError(
                f"the grad expander returned {type(expansion).__name__}, not an expression")
        return expansion


Interpreter.AXIOMS = {
    Var: Interpreter._eval_var, GlobalVar: Interpreter._eval_global_var,
    Constant: Interpreter._eval_constant, Op: Interpreter._eval_op,
    Constructor: Interpreter._eval_constructor, Function: Interpreter._eval_function,
}
Interpreter.CASES = {
    Let: Interpreter._eval_let, Call: Interpreter._eval_call, Tuple: Interpreter._eval_tuple,
    TupleGetItem: Interpreter._eval_tuple_getitem, If: Interpreter._eval_if,
    Match: Interpreter._eval_match, RefCreate: Interpreter._eval_ref_create,
    RefRead: Interpreter._eval_ref_read, RefWrite: Interpreter._eval_ref_write,
    Grad: Interpreter._eval_grad,
}
Interpreter.APPLIERS = {
    Closure: Interpreter._call_closure, OpValue: Interpreter._call_op,
    ConstructorFunction: Interpreter._call_constructor,
    ConstructorValue: Interpreter._call_constructor,
}
# The leaves: never graph-shared (see shared_nodes), so always established in place.
Interpreter.LEAVES = {t: f for t, f in Interpreter.AXIOMS.items() if t is not Function}
Interpreter.INLINE = {
    **Interpreter.LEAVES, Function: Interpreter._inline_function,
    Call: Interpreter._inline_tree, TupleGetItem: Interpreter._inline_tree,
}
Interpreter.CASES_BY_TYPE = {**Interpreter.AXIOMS, **Interpreter.CASES}
Interpreter.axioms = Interpreter.AXIOMS
Interpreter.cases = Interpreter.CASES
Interpreter.appliers = Interpreter.APPLIERS
Interpreter._direct = Interpreter.LEAVES
Interpreter._inline = Interpreter.INLINE
