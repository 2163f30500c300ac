"""The online partial evaluator: an interpreter over partially static values (paper §4.3, Fig. 14).

Design note
-----------
**What it computes.** ``PartialEvaluator(mod).residualize(fn)`` runs the
body of a global function with its parameters *dynamic* and returns an
equivalent function whose static sub-computations are done: operators on
static tensors are evaluated with the registry's reference implementation
(the oracle's own ``Semantics-Call-Op``), ``if``/``match`` on static values
select their branch, known closures and globals are unfolded, projections of
static tuples and reads of simulated references are answered. Values are the
partially static values of :mod:`pe.values`.

**Residual program in A-normal form.** Every residual computation is pushed
on the current frame's let-list in evaluation order and named by a fresh
variable (the paper's ``push``), so an effect (``ref``, ``ref_write``, a
dynamic call, an operator that may fail) is never duplicated, dropped or
moved: each source occurrence that runs once produces exactly one residual
binding at the point where it ran. Static values get their residual binding
lazily, when code that is not partially evaluated needs them (``force``);
those bindings are pure and go to the frame that created the value.

**Store simulation** (flow-sensitive, as the appendix's ``curStore``):
``ref(e)`` allocates a simulated cell and emits the real allocation;
``ref_write`` on a known cell updates the simulation (and emits the write);
``ref_read`` of a known cell with a known content is answered statically, and
a residual read's result is remembered until the cell may change. The store is
*invalidated* — escaped cells forgotten — after a dynamic call, a call of a
residual function or specialization, and a write through an unknown
reference; a dynamic ``if``/``match`` runs each arm on a copy of the store and
keeps afterwards only the entries no arm changed; a residual function body
starts from an empty store (it runs at unknown times). A cell *escapes* when its
atom is used by residual code other than a read or write of it in the function
context that allocated it (see :class:`pe.values.RefCell`).

**Unfolding and termination.** Calls of known closures and globals are
unfolded (their original body partially evaluated in the callee's environment,
binders of the residual are fresh variables, so unfolding the same body twice
never shares a binder). Termination on every program rests on three rules:

1. *Static recursion unrolls.* A call of a function that is already being
   unfolded is unfolded again only when it is reached from the innermost
   unfolding of that function through static control alone (no dynamic
   ``if``/``match`` arm and no residual function body opened since), and at
   most :data:`UNROLL_LIMIT` activations of one function (and
   :data:`MAX_ACTIVE` in all) are nested.
2. *Dynamic recursion is residualized* (:mod:`pe.specialize`) through a
   *specialization*: a residual
   let-bound recursive function for the callee, memoized by the callee and the
   static parts of its arguments (tensors and ADT values are generalized to
   parameters; closures, operators, constructors and globals are kept by
   identity, tuples by structure up to depth :data:`KEY_DEPTH`; references are
   generalized too, as a specialization's body starts from an empty store), and
   for a polymorphic function by the instance of its type parameters. Recursive
   calls inside a specialization's body find it in the memo. At most
   :data:`MAX_SPECS` specializations with static parts are made per function;
   beyond that, and whenever the key has no static part at all, the call goes
   to the generic residual function: the forced closure, or the global itself.
3. *Fuel backstop.* Every visit of a compound node costs one unit of
   :data:`DEFAULT_FUEL`; once it is spent, nothing more is unfolded or
   specialized: a call of a known closure becomes a call of its residual
   function and a call of a global stays a call.

**Bound.** Every step of the evaluator is the visit of a compound node (or
the forcing of a static value one such visit made, at most once per value).
With fuel ``F`` the first ``F`` visits may unfold; after that nothing is
unfolded or specialized any more, so what remains is finishing the
activations already open and residualizing the closure values already made,
each body once without unfolding — about one visit per node reached. As a
hard guarantee, the partial evaluation of one global gives up after
``visit_limit(F, n) = 2F + 8n`` visits (``n``: the nodes of the module) and
keeps that global as it is (the source is a correct residual of itself). So
PE of any program ends within ``2F + 8n`` visits per global; on the
conformance kit's generated programs it stays far below that (about ``2n``)
and never gives up (``tests/pe/test_pe_properties.py`` checks both).

**Types.** The residual program must type-check. The input is typed first
(``checked_type`` on every node); unfolding a polymorphic function records
the instance of its type parameters at the call (matched from the
arguments' types), and annotations of residual binders (parameters of
residual functions, pattern variables of residual matches) are instantiated
with it; an annotation that still mentions a type or shape variable not in
scope in the residual global is dropped, for type inference to recover. A
constructor value whose fields leave a type parameter of its ADT open (``Nil``)
is bound with its type as annotation. A nullary constructor value is residualized
as the call ``Nil()`` (``Call(Nil, ())``), never the bare ``Constructor`` node:
that is what the parser builds from ``Nil`` (TVM's convention: a constructor
is a function, the printer shows a zero-argument call of it by its name), so a
printed residual parses back alpha-equal, and the interpreter, the type
checker and the backends see the one form they already see in parsed text.

**Robustness.** No Python recursion on program depth: every case is a
generator that ``yield``s its premises to a driver with an explicit stack
(:func:`drive`; leaves answer immediately without a generator); let spines are
walked in a loop. Operator failures at partial-evaluation time (integer
division by zero, numpy errors) are not errors of the partial evaluator: the
call is residualized and fails at run time exactly as the oracle does.

Known limits: static information does not flow into the arms of a dynamic
``match`` (the arms see their pattern variables as dynamic, and the scrutinee
is not refined); a residualized polymorphic function literal becomes
monomorphic (its annotations that mention its own type parameters are
dropped); the shapes of dynamic tensors are not used (``shape_of`` of a
dynamic tensor stays a call); ``grad(e)`` is residualized unexpanded.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from pe.specialize import KEY_DEPTH, MAX_SPECS, Specializer, Step, instantiation
from pe.static_ops import MAX_STATIC_ELEMENTS, evaluate_op, static_tensors
from pe.values import (
    Env,
    Frame,
    PValue,
    RefCell,
    SClosure,
    SCtor,
    SCtorFn,
    SGlobal,
    SOp,
    SRef,
    STensor,
    Store,
    STuple,
)
from semantics.analysis import free_shape_vars, free_type_vars
from semantics.errors import InternalError
from semantics.expr import (
    Call,
    Clause,
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
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    pattern_vars,
)
from semantics.module import IRModule
from semantics.rewrite import rename_pattern
from semantics.types import TupleType, Type, TypeCall
from semantics.visitor import count_uses, post_order, run_recursive
from typechecker.unify import substitute as substitute_type

__all__ = ["DEFAULT_FUEL", "KEY_DEPTH", "MAX_ACTIVE", "MAX_SPECS", "MAX_STATIC_ELEMENTS",
           "UNROLL_LIMIT", "PartialEvaluator", "drive", "visit_limit"]

DEFAULT_FUEL = 200_000
"""Compound-node visits with unfolding allowed (the termination backstop)."""

UNROLL_LIMIT = 256
"""Nested activations of one function unfolded under static control."""

MAX_ACTIVE = 4096
"""Nested unfolded activations of all functions together."""

_UNKNOWN = object()  # a static match that cannot be decided


class _GiveUp(Exception):
    """The visit limit was reached: the global being residualized is kept as it is."""


def visit_limit(fuel: int, size: int) -> int:
    """The most compound-node visits one global's partial evaluation may make.

    ``2 × fuel + 8 × size`` (``size``: the nodes of the module): the fuel with unfolding,
    then finishing without unfolding, which needs about one visit per node reached. A global
    whose partial evaluation would go further is left as it is.
    """
    return 2 * fuel + 8 * size


# Generator-based recursion is driven by the one shared driver (ready values allowed).
drive = run_recursive


class PartialEvaluator(Specializer):
    """Partially evaluates the functions of one module (see the module docstring).

    Args:
        mod: the program; its globals are unfolded by name.
        fuel: compound-node visits allowed with unfolding (:data:`DEFAULT_FUEL`).
    """

    def __init__(self, mod: IRModule, fuel: int = DEFAULT_FUEL):
        self.mod = mod
        self.fuel = fuel
        self.unfolding = fuel > 0
        self.visits = 0
        self.frame = Frame(None, 0)
        self.store = Store()
        self.dyn_depth = 0
        self.active: dict[int, list[int]] = {}
        self.active_total = 0
        self.spec_counts: dict[int, int] = {}
        self._ctx = itertools.count(1)
        self._globals: dict[str, PValue] = {}
        self._shared: set[int] = set()
        self._keep: list[Expr] = []
        self._scope_tvars: set[int] = set()
        self._scope_svars: set[str] = set()
        self._ctor_typing: dict[Constructor, bool] = {}
        size = 0
        for fn in mod.functions.values():
            order = post_order(fn)
            size += len(order)
            uses = count_uses(fn, order=order)
            self._shared.update(id(n) for n in order
                                if uses.get(id(n), 0) > 1 and not _is_leaf(n))
            self._keep.append(fn)
        self.size = size
        self.limit = visit_limit(fuel, size)

    # === entry ===================================================================================

    def residualize(self, fn: Function) -> Function:
        """``fn`` with its body partially evaluated (parameters dynamic, the same binders).

        Returns:
            An equivalent function; its binders are the original parameters and fresh
            variables.
        Raises:
            InternalError: a broken invariant of the partial evaluator (never a user error).
        """
        frame = Frame(None, next(self._ctx))
        self.frame, self.store, self.dyn_depth = frame, Store(), 0
        self._scope_tvars = {id(tv) for tv in fn.type_params}
        self._scope_svars = set()
        for p in fn.params:
            if p.type_annotation is not None:
                self._scope_svars.update(free_shape_vars(p.type_annotation))
        env = Env().activation({p: PValue(None, p) for p in fn.params})
        try:
            atom = drive(self._visit_and_force(fn.body, env))
        except _GiveUp:
            return fn  # the visit limit: the source is its own residual
        body = frame.build(atom)
        return Function(fn.params, body, fn.ret_type, fn.type_params, fn.attrs, span=fn.span)

    def _visit_and_force(self, e: Expr, env: Env) -> Step:
        pv = yield self.visit(e, env)
        return (yield self.force(pv))

    # === the cases ===============================================================================

    def visit(self, e: Expr, env: Env) -> Any:
        """The partially static value of ``e``: a PValue, or a generator producing it."""
        t = type(e)
        if t is Var:
            found = env.lookup(e)  # type: ignore[arg-type]
            return found if found is not None else PValue(None, e)  # a free variable
        if t is Constant:
            return PValue(STensor(e.data), e)  # type: ignore[attr-defined]
        if t is GlobalVar:
            return self.global_value(e.name_hint)  # type: ignore[attr-defined]
        if t is Op:
            return PValue(SOp(e), e)  # type: ignore[arg-type]
        if t is Constructor:
            return self._constructor_value(e, env)  # type: ignore[arg-type]
        if id(e) in self._shared:
            hit = env.memo.get(id(e))
            if hit is not None and self._in_scope(hit[1]):
                return hit[0]
            return self._memoized(e, env)
        return self._case(e, env)

    def _case(self, e: Expr, env: Env) -> Any:
        self._count()
        t = type(e)
        if t is Function:
            return PValue(SClosure(e, env, None), None, self.frame)  # type: ignore[arg-type]
        return _CASES[t](self, e, env)

    def _count(self) -> None:
        """One compound-node visit: past the fuel, stop unfolding; past the limit, give up."""
        self.visits += 1
        if self.visits > self.fuel:
            self.unfolding = False
        if self.visits > self.limit:
            raise _GiveUp

    def _memoized(self, e: Expr, env: Env) -> Step:
        """Semantics-Shared: a graph-shared node is partially evaluated once per activation
        (reused only where its residual atom is in scope)."""
        frame = self.frame
        pv = yield self._case(e, env)
        env.memo[id(e)] = (pv, frame)
        return pv

    def _in_scope(self, frame: Frame) -> bool:
        f: Frame | None = self.frame
        while f is not None:
            if f is frame:
                return not frame.closed
            f = f.parent
        return False

    def annotation(self, t: Type | None, env: Env) -> Type | None:
        """An annotation for a residual binder: ``t`` instantiated, or None when it cannot be.

        Unfolding a polymorphic function instantiates its type parameters (``env.tsub``);
        an annotation still mentioning a type or shape variable that is not in scope in
        the residual function is dropped (type inference recovers it).
        """
        if t is None:
            return None
        if env.tsub:
            t = substitute_type(t, env.tsub, {})
        if any(id(tv) not in self._scope_tvars for tv in free_type_vars(t)):
            return None
        if any(sv not in self._scope_svars for sv in free_shape_vars(t)):
            return None
        return t

    def _constructor_value(self, c: Constructor, env: Env) -> PValue:
        if c.inputs:
            return PValue(SCtorFn(c), c)
        return self._nullary(c, self.annotation(c.checked_type, env))

    def _underdetermined(self, c: Constructor) -> bool:
        """True when ``c``'s fields do not mention every type parameter of its ADT (then a
        residual ``C(...)`` leaves part of its type to the context: it is annotated)."""
        found = self._ctor_typing.get(c)
        if found is None:
            try:
                params = {id(tv) for tv in self.mod.get_type(c.belong_to).type_vars}
            except KeyError:
                params = set()
            used = {id(tv) for tv in free_type_vars(TupleType(c.inputs))}
            found = self._ctor_typing[c] = not params <= used
        return found

    def _nullary(self, c: Constructor, ty: Type | None) -> PValue:
        if isinstance(ty, TypeCall) and ty.args:
            return PValue(SCtor(c, (), ty), None, self.frame)  # bound with its type if needed
        # residualized as the call ``C()``, which is what ``C`` prints as and parses back to
        # (a bare Constructor node would print the same but not be alpha-equal to the parse)
        return PValue(SCtor(c, ()), Call(c, (), span=c.span))

    def global_value(self, name: str) -> PValue:
        pv = self._globals.get(name)
        if pv is None:
            pv = self._globals[name] = PValue(SGlobal(name), GlobalVar(name))
        return pv

    # Semantics-Let / -Let-Rec at PE time. A static value is bound in the environment and
    # nothing is emitted; a function literal is a recursive closure (its variable is in
    # scope inside it).
    def _let(self, e: Let, env: Env) -> Step:
        while True:
            value = e.value
            if type(value) is Function:
                pv: PValue = PValue(SClosure(value, env, e.var), None, self.frame)
            else:
                pv = yield self.visit(value, env)
                self._name_after(pv, e.var)
            env = env.extend(e.var, pv)
            body = e.body
            if type(body) is not Let or id(body) in self._shared:
                break
            e = body
            self._count()
        return (yield self.visit(body, env))

    def _name_after(self, pv: PValue, var: Var) -> None:
        """Give the residual binding a let's value just made the let's name (readability).

        Only when that binding is the frame's last one and its variable is the value's atom:
        then nothing refers to the variable yet but ``pv``, whose atom is replaced.
        """
        last = self.frame.last
        if pv.static is None and last is not None and last[0] is pv.atom \
                and last[0].type_annotation is None:
            named = Var(var.name_hint)
            self.frame.last = (named, last[1])
            pv.atom = named

    def _call(self, e: Call, env: Env) -> Step:
        f = yield self.visit(e.op, env)
        args = []
        for a in e.args:
            args.append((yield self.visit(a, env)))
        return (yield self.apply(f, args, e, env))

    def apply(self, f: PValue, args: list[PValue], call: Call, env: Env) -> Any:
        """The value of calling ``f`` on ``args`` (unfolding, specializing or residualizing)."""
        s = f.static
        t = type(s)
        if t is SOp:
            return self._call_op(s.op, args, call)  # type: ignore[union-attr]
        if t is SCtorFn:
            ctor = s.ctor  # type: ignore[union-attr]
            if len(args) == len(ctor.inputs):
                ty = self.annotation(call.checked_type, env) if self._underdetermined(ctor) \
                    else None
                return PValue(SCtor(ctor, tuple(args), ty), None, self.frame)
        elif t is SCtor and not s.fields and not args:  # type: ignore[union-attr]
            # a nullary constructor called with no arguments
            return self._nullary(s.ctor, self.annotation(call.checked_type, env))  # type: ignore
        elif t is SClosure or t is SGlobal:
            return self._call_known(f, args, call, env)
        return self._call_dynamic(f, args, call)

    def _call_dynamic(self, f: PValue, args: list[PValue], call: Call) -> Step:
        callee = yield self.force(f)
        atoms = yield self.force_all(args)
        var = self.push(Call(callee, atoms, call.attrs, span=call.span), "x")
        self.store.invalidate_escaped()
        return PValue(None, var)

    # Semantics-Call-Op. All arguments static: the oracle's reference at partial-evaluation time.
    def _call_op(self, op: Op, args: list[PValue], call: Call) -> Any:
        arrays = [static_tensors(a) for a in args]
        if all(a is not None for a in arrays):
            result = evaluate_op(op, arrays, call)
            if result is not None:
                return self.static_result(result, call)
        return self._residual_op(op, args, call)

    def _residual_op(self, op: Op, args: list[PValue], call: Call) -> Step:
        atoms = yield self.force_all(args)
        var = self.push(Call(op, atoms, call.attrs, span=call.span), "x")
        return PValue(None, var)

    def static_result(self, value: Any, call: Call) -> PValue:
        if isinstance(value, np.ndarray):
            return PValue(STensor(value), Constant(value, span=call.span))
        fields = tuple(self.static_result(v, call) for v in value)
        return PValue(STuple(fields), None if fields else Tuple(()), self.frame)

    # Semantics-Call / -Global of a known closure or global: unfold, or go through a specialization.
    def _call_known(self, f: PValue, args: list[PValue], call: Call, caller: Env) -> Step:
        s = f.static
        if isinstance(s, SGlobal):
            fn = self.mod.functions.get(s.name)
            base = Env()
            self_var = None
        else:
            assert isinstance(s, SClosure)
            fn, base, self_var = s.fn, s.env, s.self_var
        if fn is None or len(fn.params) != len(args):
            return (yield self._call_dynamic(f, args, call))  # fails at run time, as the oracle
        if not self._should_unfold(fn):
            return (yield self._specialize(f, fn, base, self_var, args, call, caller))
        env = base.activation(dict(zip(fn.params, args)), instantiation(fn, call, caller))
        if self_var is not None:
            env = env.extend(self_var, f)
        stack = self.active.setdefault(id(fn), [])
        stack.append(self.dyn_depth)
        self.active_total += 1
        try:
            return (yield self.visit(fn.body, env))
        finally:
            stack.pop()
            self.active_total -= 1

    def _should_unfold(self, fn: Function) -> bool:
        if not self.unfolding:
            return False
        stack = self.active.get(id(fn))
        if not stack:
            return self.active_total < MAX_ACTIVE
        return (len(stack) < UNROLL_LIMIT and self.active_total < MAX_ACTIVE
                and stack[-1] == self.dyn_depth)

    def _tuple(self, e: Tuple, env: Env) -> Step:
        fields = []
        for x in e.fields:
            fields.append((yield self.visit(x, env)))
        return PValue(STuple(tuple(fields)), None if fields else Tuple(()), self.frame)

    def _tuple_getitem(self, e: TupleGetItem, env: Env) -> Step:
        t = yield self.visit(e.tuple_value, env)
        s = t.static
        if type(s) is STuple and 0 <= e.index < len(s.fields):
            return s.fields[e.index]
        atom = yield self.force(t)
        return PValue(None, self.push(TupleGetItem(atom, e.index, span=e.span), "x"))

    # Semantics-If-True / -If-False when the condition is static; a dynamic one keeps both arms.
    def _if(self, e: If, env: Env) -> Step:
        c = yield self.visit(e.cond, env)
        s = c.static
        if type(s) is STensor and s.data.ndim == 0 and s.data.dtype == np.bool_:
            return (yield self.visit(e.true_branch if bool(s.data) else e.false_branch, env))
        cond = yield self.force(c)
        arms = yield self.branches([(e.true_branch, env), (e.false_branch, env)])
        return PValue(None, self.push(If(cond, arms[0], arms[1], span=e.span), "x"))

    def branches(self, arms: list[tuple[Expr, Env]]) -> Step:
        """Partially evaluate the arms of a dynamic branch, each in its own frame and store."""
        outer, before = self.frame, self.store
        out: list[Expr] = []
        after: list[Store] = []
        self.dyn_depth += 1
        try:
            for expr, env in arms:
                frame = self.frame = Frame(outer, outer.ctx)
                self.store = before.copy()
                atom = yield self._visit_and_force(expr, env)
                out.append(frame.build(atom))
                after.append(self.store)
                self.frame = outer
        finally:
            self.dyn_depth -= 1
            self.frame = outer
        self.store = Store.merge(before, after)
        return out

    # Semantics-ADT-Match when the scrutinee is static enough to select a clause;
    # otherwise a residual match whose arms are partially evaluated like a dynamic if's.
    def _match(self, e: Match, env: Env) -> Step:
        d = yield self.visit(e.data, env)
        for clause in e.clauses:
            found = self._match_static(clause.lhs, d)
            if found is None:
                continue
            if found is _UNKNOWN:
                break
            for var, value in found:
                env = env.extend(var, value)
            return (yield self.visit(clause.rhs, env))
        data = yield self.force(d)
        arms: list[tuple[Expr, Env]] = []
        lhss: list[Pattern] = []
        for clause in e.clauses:
            renamed: dict[int, Var] = {}
            arm_env = env
            for v in pattern_vars(clause.lhs):
                fresh = Var(v.name_hint, self.annotation(v.type_annotation, env))
                renamed[id(v)] = fresh
                arm_env = arm_env.extend(v, PValue(None, fresh))
            lhss.append(rename_pattern(clause.lhs, renamed))
            arms.append((clause.rhs, arm_env))
        rhss = yield self.branches(arms)
        clauses = tuple(Clause(lhs, rhs, span=c.span) for lhs, rhs, c in zip(lhss, rhss, e.clauses))
        return PValue(None, self.push(Match(data, clauses, e.complete, span=e.span), "x"))

    def _match_static(self, p: Pattern, pv: PValue) -> Any:
        """Bindings when ``pv`` matches ``p``, None when it cannot, ``_UNKNOWN`` when not known."""
        bindings: list[tuple[Var, PValue]] = []
        unknown = False
        work: list[tuple[Pattern, PValue]] = [(p, pv)]
        while work:
            q, v = work.pop()
            t = type(q)
            if t is PatternWildcard:
                continue
            if t is PatternVar:
                bindings.append((q.var, v))  # type: ignore[attr-defined]
                continue
            s = v.static
            if isinstance(q, PatternConstructor):
                if not isinstance(s, SCtor):
                    unknown = True
                    continue
                if s.ctor.name != q.constructor.name or len(s.fields) != len(q.patterns):
                    return None
                work.extend(zip(q.patterns, s.fields))
            elif isinstance(q, PatternTuple):
                if isinstance(s, STuple) and len(s.fields) == len(q.patterns):
                    work.extend(zip(q.patterns, s.fields))
                else:
                    unknown = True
            else:
                unknown = True
        return _UNKNOWN if unknown else bindings

    # Semantics-Ref-Create: the allocation is emitted; the cell is simulated.
    def _ref_create(self, e: RefCreate, env: Env) -> Step:
        v = yield self.visit(e.value, env)
        atom = yield self.force(v)
        var = self.push(RefCreate(atom, span=e.span), "r")
        cell = RefCell(self.frame.ctx)
        self.store.write(cell, v)
        return PValue(SRef(cell), var)

    # Semantics-Ref-Read: a known cell with known contents is read statically.
    def _ref_read(self, e: RefRead, env: Env) -> Step:
        r = yield self.visit(e.ref, env)
        s = r.static
        if type(s) is SRef:
            cell = s.cell
            self._touch(cell)
            known = self.store.read(cell)
            if known is not None:
                return known
            var = self.push(RefRead(r.atom, span=e.span), "x")
            result = PValue(None, var)
            self.store.write(cell, result)
            return result
        atom = yield self.force(r)
        return PValue(None, self.push(RefRead(atom, span=e.span), "x"))

    # Semantics-Ref-Write: the write is emitted; a known cell's simulated contents follow it.
    def _ref_write(self, e: RefWrite, env: Env) -> Step:
        r = yield self.visit(e.ref, env)
        v = yield self.visit(e.value, env)
        value = yield self.force(v)
        s = r.static
        if type(s) is SRef:
            self._touch(s.cell)
            self.push(RefWrite(r.atom, value, span=e.span), "w")
            self.store.write(s.cell, v)
        else:
            ref = yield self.force(r)
            self.push(RefWrite(ref, value, span=e.span), "w")
            self.store.invalidate_escaped()
        return PValue(STuple(()), Tuple(()))

    def _touch(self, cell: RefCell) -> None:
        """A read or write of ``cell``: from another residual function it escapes."""
        if cell.ctx != self.frame.ctx:
            cell.escaped = True

    def _grad(self, e: Grad, env: Env) -> Step:
        f = yield self.visit(e.func, env)
        atom = yield self.force(f)
        var = self.push(Grad(atom, span=e.span), "x")
        self.store.invalidate_escaped()
        return PValue(None, var)

    # === residual code ===========================================================================

    def push(self, value: Expr, hint: str) -> Var:
        """Emit ``let %hint = value`` in the current frame and return the variable."""
        return self._bind_in(self.frame, Var(hint), value)

    @staticmethod
    def _bind_in(frame: Frame | None, var: Var, value: Expr) -> Var:
        if frame is None or frame.closed:
            raise InternalError("partial evaluator: a static value outlived its residual scope")
        return frame.bind(var, value)

    def force(self, pv: PValue) -> Any:
        """The residual atom of ``pv`` (an Expr, or a generator producing it).

        Builds the residual bindings of static tuples, ADT values and closures on
        demand (in the frames that created them) and marks every simulated cell
        reached as escaped.
        """
        if pv.atom is not None and type(pv.static) is not SRef:
            return pv.atom
        return self._force(pv)

    def _force(self, root: PValue) -> Step:
        stack: list[tuple[PValue, bool]] = [(root, False)]
        while stack:
            pv, expanded = stack.pop()
            s = pv.static
            if type(s) is SRef:
                s.cell.escaped = True
                continue
            if pv.atom is not None:
                continue
            if type(s) is SClosure:
                yield self._residualize_closure(pv, s)
                continue
            assert isinstance(s, (STuple, SCtor))
            if not expanded:
                stack.append((pv, True))
                stack.extend((x, False) for x in reversed(s.fields))
                continue
            atoms = tuple(x.atom for x in s.fields)
            if any(a is None for a in atoms):
                raise InternalError("partial evaluator: a field was not forced")
            if isinstance(s, STuple):
                pv.atom = self._bind_in(pv.frame, Var("t"), Tuple(atoms))  # type: ignore[arg-type]
            else:
                value = Call(s.ctor, atoms)  # type: ignore[arg-type]
                pv.atom = self._bind_in(pv.frame, Var("c", s.ty), value)
        return root.atom

    def force_all(self, pvs: list[PValue]) -> Step:
        atoms = []
        for pv in pvs:
            atoms.append((yield self.force(pv)))
        return tuple(atoms)

    def _residualize_closure(self, pv: PValue, s: SClosure) -> Step:
        """``let %f = fn (params) { body }``: the closure's body with dynamic parameters."""
        fn = s.fn
        var = Var(s.self_var.name_hint if s.self_var is not None else "f")
        pv.atom = var  # recursive uses inside the body refer to it
        params = tuple(Var(p.name_hint, self.annotation(p.type_annotation, s.env))
                       for p in fn.params)
        outer, saved = self.frame, (self.store, self.dyn_depth)
        self.frame = Frame(pv.frame, next(self._ctx))
        self.store, self.dyn_depth = Store(), self.dyn_depth + 1
        try:
            env = s.env.activation({p: PValue(None, q) for p, q in zip(fn.params, params)})
            if s.self_var is not None:
                env = env.extend(s.self_var, pv)
            atom = yield self._visit_and_force(fn.body, env)
            body_frame = self.frame
        finally:
            self.frame = outer
            self.store, self.dyn_depth = saved
        residual = Function(params, body_frame.build(atom), self.annotation(fn.ret_type, s.env),
                            (), fn.attrs, span=fn.span)
        self._bind_in(pv.frame, var, residual)
        return var


_CASES: dict[type, Any] = {
    Let: PartialEvaluator._let, Call: PartialEvaluator._call, Tuple: PartialEvaluator._tuple,
    TupleGetItem: PartialEvaluator._tuple_getitem, If: PartialEvaluator._if,
    Match: PartialEvaluator._match, RefCreate: PartialEvaluator._ref_create,
    RefRead: PartialEvaluator._ref_read, RefWrite: PartialEvaluator._ref_write,
    Grad: PartialEvaluator._grad,
}

_LEAVES = (Var, Constant, GlobalVar, Op, Constructor)


def _is_leaf(e: Expr) -> bool:
    return type(e) in _LEAVES
