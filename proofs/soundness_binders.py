"""Type soundness with binders: functions (closures by substitution), ``let``, and an ADT with
``match`` — proved in Z3 by structural induction, lemma by lemma.

The calculus (a fragment of RULES.md's, tensors abstracted to scalars as in
:mod:`proofs.soundness`): boolean and integer literals, ``add``, ``if``; variables as de Bruijn
indices; ``fn (x: A) { e }`` (``Lam``), application, ``let``; a binary sum type
``A + B`` — the shape of every ADT with two one-field constructors — with ``Inl``/``Inr``
(the other side's type annotated) and ``match`` with one binding clause per constructor;
general recursion ``fix (f: A) { e }`` (``e`` may call ``f``; it unrolls by substituting
itself: how a recursive global function is called).
Typing is a Z3 recursive function ``typeof(ctx, t)`` (``TErr`` when no rule applies; ``ctx``
a list of types); evaluation is call-by-value small step ``step(t)`` (``Stuck`` when no rule
applies) with capture-free substitution of *closed* values (``subst(t, j, v)``), which is
how a closure's environment is applied in a substitution semantics.

Proved, each by one Z3 query per constructor with the induction hypotheses instantiated at
exactly the subterms and contexts the case needs (so every query is quantifier-free):

1. ``lookup_append`` (induction on the context): appending to a context keeps the types of
   the variables it binds;
2. ``lookup_remove``: removing entry ``j`` shifts the later variables down by one;
3. ``weakening`` (induction on terms): a term typed in ``c0`` has the same type in
   ``c0 ++ c`` — in particular a closed value is typed the same in every context;
4. ``substitution``: if ``ctx[j] = A`` and the closed ``v`` has type ``A``, then
   ``subst(t, j, v)`` has ``t``'s type in ``ctx`` without entry ``j``;
5. ``progress``: a well-typed closed term is a value or steps;
6. ``preservation``: a step keeps the type (beta, ``let``, ``match`` and the unrolling of
   ``fix`` by lemma 4).

Not in this fragment: polymorphism, references, tensors' shapes and the operator
relations — the bounded model check of :mod:`proofs.soundness` covers the
full language by testing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import z3

from proofs.core import PROVED, REFUTED, UNKNOWN, Verdict, obligation


@dataclass(frozen=True)
class Calculus:
    """The sorts and recursive functions of the calculus (built once per variant)."""

    Ty: z3.DatatypeSortRef
    Tm: z3.DatatypeSortRef
    Ctx: z3.DatatypeSortRef
    typeof: z3.FuncDeclRef
    value: z3.FuncDeclRef
    step: z3.FuncDeclRef
    subst: z3.FuncDeclRef
    lookup: z3.FuncDeclRef
    remove: z3.FuncDeclRef
    append: z3.FuncDeclRef
    wf: z3.FuncDeclRef


@functools.cache
def calculus(broken: str = "") -> Calculus:
    """Build the calculus. ``broken`` (tests only): ``"match"`` drops the premise that both
    clauses of a match have one type; ``"fix"`` the premise that a recursive body has the
    declared type; ``"subst"`` forgets to shift the variables above the substituted one."""
    ty = z3.Datatype("BTy")
    ty.declare("TBool")
    ty.declare("TInt")
    ty.declare("TFun", ("dom", ty), ("cod", ty))
    ty.declare("TSum", ("left", ty), ("right", ty))
    ty.declare("TErr")
    Ty = ty.create()

    tm = z3.Datatype("BTm")
    tm.declare("BoolLit", ("bval", z3.BoolSort()))
    tm.declare("IntLit", ("ival", z3.IntSort()))
    tm.declare("Add", ("a1", tm), ("a2", tm))
    tm.declare("If", ("c", tm), ("th", tm), ("el", tm))
    tm.declare("Var", ("idx", z3.IntSort()))
    tm.declare("Lam", ("aty", Ty), ("body", tm))
    tm.declare("App", ("fn", tm), ("arg", tm))
    tm.declare("Let", ("bound", tm), ("lbody", tm))
    tm.declare("Inl", ("rty", Ty), ("lval", tm))
    tm.declare("Inr", ("lty", Ty), ("rval", tm))
    tm.declare("Match", ("scrut", tm), ("lclause", tm), ("rclause", tm))
    tm.declare("Fix", ("fty", Ty), ("fbody", tm))
    tm.declare("Stuck")
    Tm = tm.create()

    cx = z3.Datatype("BCtx")
    cx.declare("Nil")
    cx.declare("Cons", ("hd", Ty), ("tl", cx))
    Ctx = cx.create()

    sfx = f"_{broken}" if broken else ""
    I = z3.IntSort()   # noqa: E741
    wf = z3.RecFunction(f"wf{sfx}", Ty, z3.BoolSort())
    lookup = z3.RecFunction(f"lookup{sfx}", Ctx, I, Ty)
    remove = z3.RecFunction(f"remove{sfx}", Ctx, I, Ctx)
    append = z3.RecFunction(f"append{sfx}", Ctx, Ctx, Ctx)
    typeof = z3.RecFunction(f"typeof{sfx}", Ctx, Tm, Ty)
    value = z3.RecFunction(f"value{sfx}", Tm, z3.BoolSort())
    subst = z3.RecFunction(f"subst{sfx}", Tm, I, Tm, Tm)
    step = z3.RecFunction(f"step{sfx}", Tm, Tm)

    T = z3.Const("T", Ty)
    z3.RecAddDefinition(wf, [T], z3.If(
        Ty.is_TErr(T), False, z3.If(
            Ty.is_TFun(T), z3.And(wf(Ty.dom(T)), wf(Ty.cod(T))), z3.If(
                Ty.is_TSum(T), z3.And(wf(Ty.left(T)), wf(Ty.right(T))), True))))

    c, c2 = z3.Const("c", Ctx), z3.Const("c2", Ctx)
    i = z3.Int("i")
    z3.RecAddDefinition(lookup, [c, i], z3.If(
        z3.Or(Ctx.is_Nil(c), i < 0), Ty.TErr,
        z3.If(i == 0, Ctx.hd(c), lookup(Ctx.tl(c), i - 1))))
    z3.RecAddDefinition(remove, [c, i], z3.If(
        Ctx.is_Nil(c), Ctx.Nil,
        z3.If(i == 0, Ctx.tl(c), Ctx.Cons(Ctx.hd(c), remove(Ctx.tl(c), i - 1)))))
    z3.RecAddDefinition(append, [c, c2], z3.If(
        Ctx.is_Nil(c), c2, Ctx.Cons(Ctx.hd(c), append(Ctx.tl(c), c2))))

    t = z3.Const("t", Tm)
    err = Ty.TErr

    def ok(x: z3.ExprRef) -> z3.BoolRef:
        return x != err

    def ty_of(ctx: z3.ExprRef, x: z3.ExprRef) -> z3.ExprRef:
        return typeof(ctx, x)

    a1, a2 = Tm.a1(t), Tm.a2(t)
    f_ty = ty_of(c, Tm.fn(t))
    s_ty = ty_of(c, Tm.scrut(t))
    lcl = ty_of(Ctx.Cons(Ty.left(s_ty), c), Tm.lclause(t))
    rcl = ty_of(Ctx.Cons(Ty.right(s_ty), c), Tm.rclause(t))
    e_ty = ty_of(c, Tm.bound(t))
    z3.RecAddDefinition(typeof, [c, t], z3.If(
        Tm.is_BoolLit(t), Ty.TBool, z3.If(
            Tm.is_IntLit(t), Ty.TInt, z3.If(
                Tm.is_Add(t), z3.If(z3.And(ty_of(c, a1) == Ty.TInt, ty_of(c, a2) == Ty.TInt),
                                    Ty.TInt, err), z3.If(
                    Tm.is_If(t), z3.If(z3.And(ty_of(c, Tm.c(t)) == Ty.TBool,
                                              ok(ty_of(c, Tm.th(t))),
                                              ty_of(c, Tm.th(t)) == ty_of(c, Tm.el(t))),
                                       ty_of(c, Tm.th(t)), err), z3.If(
                        Tm.is_Var(t), lookup(c, Tm.idx(t)), z3.If(
                            Tm.is_Lam(t), z3.If(
                                z3.And(wf(Tm.aty(t)),
                                       ok(ty_of(Ctx.Cons(Tm.aty(t), c), Tm.body(t)))),
                                Ty.TFun(Tm.aty(t), ty_of(Ctx.Cons(Tm.aty(t), c), Tm.body(t))),
                                err), z3.If(
                                Tm.is_App(t), z3.If(
                                    z3.And(Ty.is_TFun(f_ty), ok(Ty.dom(f_ty)),
                                           ty_of(c, Tm.arg(t)) == Ty.dom(f_ty)),
                                    Ty.cod(f_ty), err), z3.If(
                                    Tm.is_Let(t), z3.If(
                                        ok(e_ty), ty_of(Ctx.Cons(e_ty, c), Tm.lbody(t)), err),
                                    z3.If(
                                        Tm.is_Inl(t), z3.If(
                                            z3.And(wf(Tm.rty(t)), ok(ty_of(c, Tm.lval(t)))),
                                            Ty.TSum(ty_of(c, Tm.lval(t)), Tm.rty(t)), err),
                                        z3.If(
                                            Tm.is_Inr(t), z3.If(
                                                z3.And(wf(Tm.lty(t)),
                                                       ok(ty_of(c, Tm.rval(t)))),
                                                Ty.TSum(Tm.lty(t), ty_of(c, Tm.rval(t))), err),
                                            z3.If(
                                                Tm.is_Match(t), z3.If(
                                                    z3.And(Ty.is_TSum(s_ty), ok(lcl),
                                                           True if broken == "match"
                                                           else lcl == rcl),
                                                    lcl, err),
                                                z3.If(
                                                    Tm.is_Fix(t), z3.If(
                                                        z3.And(wf(Tm.fty(t)), ok(ty_of(
                                                            Ctx.Cons(Tm.fty(t), c),
                                                            Tm.fbody(t))) if broken == "fix"
                                                            else ty_of(
                                                            Ctx.Cons(Tm.fty(t), c),
                                                            Tm.fbody(t)) == Tm.fty(t)),
                                                        Tm.fty(t), err),
                                                    err)))))))))))))

    z3.RecAddDefinition(value, [t], z3.Or(
        Tm.is_BoolLit(t), Tm.is_IntLit(t), Tm.is_Lam(t),
        z3.And(Tm.is_Inl(t), value(Tm.lval(t))), z3.And(Tm.is_Inr(t), value(Tm.rval(t)))))

    j = z3.Int("j")
    v = z3.Const("v", Tm)
    idx = Tm.idx(t)
    shifted = Tm.Var(idx) if broken == "subst" else Tm.Var(idx - 1)
    z3.RecAddDefinition(subst, [t, j, v], z3.If(
        Tm.is_Var(t), z3.If(idx == j, v, z3.If(idx > j, shifted, t)), z3.If(
            Tm.is_Add(t), Tm.Add(subst(a1, j, v), subst(a2, j, v)), z3.If(
                Tm.is_If(t), Tm.If(subst(Tm.c(t), j, v), subst(Tm.th(t), j, v),
                                   subst(Tm.el(t), j, v)), z3.If(
                    Tm.is_Lam(t), Tm.Lam(Tm.aty(t), subst(Tm.body(t), j + 1, v)), z3.If(
                        Tm.is_App(t), Tm.App(subst(Tm.fn(t), j, v), subst(Tm.arg(t), j, v)),
                        z3.If(
                            Tm.is_Let(t), Tm.Let(subst(Tm.bound(t), j, v),
                                                 subst(Tm.lbody(t), j + 1, v)), z3.If(
                                Tm.is_Inl(t), Tm.Inl(Tm.rty(t), subst(Tm.lval(t), j, v)), z3.If(
                                    Tm.is_Inr(t), Tm.Inr(Tm.lty(t), subst(Tm.rval(t), j, v)),
                                    z3.If(
                                        Tm.is_Match(t), Tm.Match(subst(Tm.scrut(t), j, v),
                                                                 subst(Tm.lclause(t), j + 1, v),
                                                                 subst(Tm.rclause(t), j + 1, v)),
                                        z3.If(
                                            Tm.is_Fix(t), Tm.Fix(Tm.fty(t),
                                                                 subst(Tm.fbody(t), j + 1, v)),
                                            t)))))))))))

    stuck = Tm.Stuck

    def lift(sub: z3.ExprRef, rebuild: Callable[[z3.ExprRef], z3.ExprRef]) -> z3.ExprRef:
        return z3.If(step(sub) == stuck, stuck, rebuild(step(sub)))

    add_step = z3.If(z3.Not(value(a1)), lift(a1, lambda s: Tm.Add(s, a2)), z3.If(
        z3.Not(value(a2)), lift(a2, lambda s: Tm.Add(a1, s)), z3.If(
            z3.And(Tm.is_IntLit(a1), Tm.is_IntLit(a2)), Tm.IntLit(Tm.ival(a1) + Tm.ival(a2)),
            stuck)))
    cond = Tm.c(t)
    if_step = z3.If(z3.Not(value(cond)), lift(cond, lambda s: Tm.If(s, Tm.th(t), Tm.el(t))),
                    z3.If(Tm.is_BoolLit(cond), z3.If(Tm.bval(cond), Tm.th(t), Tm.el(t)), stuck))
    fn, arg = Tm.fn(t), Tm.arg(t)
    app_step = z3.If(z3.Not(value(fn)), lift(fn, lambda s: Tm.App(s, arg)), z3.If(
        z3.Not(value(arg)), lift(arg, lambda s: Tm.App(fn, s)), z3.If(
            Tm.is_Lam(fn), subst(Tm.body(fn), 0, arg), stuck)))
    bound = Tm.bound(t)
    let_step = z3.If(z3.Not(value(bound)), lift(bound, lambda s: Tm.Let(s, Tm.lbody(t))),
                     subst(Tm.lbody(t), 0, bound))
    inl_step = z3.If(z3.Not(value(Tm.lval(t))),
                     lift(Tm.lval(t), lambda s: Tm.Inl(Tm.rty(t), s)), stuck)
    inr_step = z3.If(z3.Not(value(Tm.rval(t))),
                     lift(Tm.rval(t), lambda s: Tm.Inr(Tm.lty(t), s)), stuck)
    sc = Tm.scrut(t)
    match_step = z3.If(z3.Not(value(sc)),
                       lift(sc, lambda s: Tm.Match(s, Tm.lclause(t), Tm.rclause(t))), z3.If(
                           Tm.is_Inl(sc), subst(Tm.lclause(t), 0, Tm.lval(sc)), z3.If(
                               Tm.is_Inr(sc), subst(Tm.rclause(t), 0, Tm.rval(sc)), stuck)))
    z3.RecAddDefinition(step, [t], z3.If(
        Tm.is_Add(t), add_step, z3.If(
            Tm.is_If(t), if_step, z3.If(
                Tm.is_App(t), app_step, z3.If(
                    Tm.is_Let(t), let_step, z3.If(
                        Tm.is_Inl(t), inl_step, z3.If(
                            Tm.is_Inr(t), inr_step, z3.If(
                                Tm.is_Match(t), match_step, z3.If(
                                    Tm.is_Fix(t), subst(Tm.fbody(t), 0, t), stuck)))))))))
    return Calculus(Ty, Tm, Ctx, typeof, value, step, subst, lookup, remove, append, wf)


# --- induction driver -------------------------------------------------------------------------

Case = Callable[[str, list[z3.ExprRef]], tuple[list[z3.BoolRef], z3.BoolRef]]


def induct(sort: z3.DatatypeSortRef, case: Case, what: str, skip: tuple[str, ...] = ()
           ) -> Verdict:
    """Structural induction over ``sort``: for each constructor ``C``, ``case(C, args)`` gives
    the induction-hypothesis instances and the goal for ``C(args)``; Z3 proves each.

    Every hypothesis is an instance of the induction hypothesis (at a direct subterm) or of a
    lemma already proved, and every recursive function recurses on structural subterms (so
    its definition is consistent): a proved step for every constructor is an induction proof.
    """
    for k in range(sort.num_constructors()):
        ctor = sort.constructor(k)
        if ctor.name() in skip:
            continue
        args = [z3.Const(f"{ctor.name()}_{n}", ctor.domain(n)) for n in range(ctor.arity())]
        hyps, goal = case(ctor.name(), args)
        # Z3's search for a model (a refutation) is seed-sensitive with recursive functions:
        # like core.prove_valid, try other seeds on "unknown", each with a share of the budget
        for seed in range(3):
            s = z3.Solver()
            s.set("timeout", 12000)
            s.set("random_seed", seed)
            s.add(*hyps, z3.Not(goal))
            r = s.check()
            if r != z3.unknown:
                break
        if r == z3.sat:
            m = s.model()
            shown = ", ".join(f"{a} = {m.eval(a, model_completion=True)}" for a in args)
            return Verdict(REFUTED, f"{what} fails for {ctor.name()}(...) with {shown}", "z3")
        if r != z3.unsat:
            return Verdict(UNKNOWN, "", "z3", f"{what}, {ctor.name()}: {s.reason_unknown()}")
    return Verdict(PROVED, method="z3-induction")


# --- the lemmas -------------------------------------------------------------------------------

def lookup_append(broken: str = "") -> Verdict:
    """``lookup(c0, i) != err -> lookup(c0 ++ c, i) == lookup(c0, i)`` (induction on c0)."""
    K = calculus(broken)
    c = z3.Const("c", K.Ctx)
    i = z3.Int("i")

    def p(c0: z3.ExprRef, ii: z3.ArithRef) -> z3.BoolRef:
        return z3.Implies(K.lookup(c0, ii) != K.Ty.TErr,
                          K.lookup(K.append(c0, c), ii) == K.lookup(c0, ii))

    def case(name: str, args: list[z3.ExprRef]) -> tuple[list[z3.BoolRef], z3.BoolRef]:
        if name == "Nil":
            return [], p(K.Ctx.Nil, i)
        return [p(args[1], i - 1)], p(K.Ctx.Cons(*args), i)
    return induct(K.Ctx, case, "lookup_append")


def _lr(K: Calculus, ctx: z3.ExprRef, j: z3.ArithRef, i: z3.ArithRef) -> z3.BoolRef:
    below = z3.Implies(i < j, K.lookup(K.remove(ctx, j), i) == K.lookup(ctx, i))
    above = z3.Implies(i > j, K.lookup(K.remove(ctx, j), i - 1) == K.lookup(ctx, i))
    return z3.Implies(j >= 0, z3.And(below, above))


def lookup_remove(broken: str = "") -> Verdict:
    """Removing entry ``j``: variables below keep their types, those above move down by one
    (induction on the context)."""
    K = calculus(broken)
    j, i = z3.Ints("j i")

    def case(name: str, args: list[z3.ExprRef]) -> tuple[list[z3.BoolRef], z3.BoolRef]:
        if name == "Nil":
            return [], _lr(K, K.Ctx.Nil, j, i)
        return [_lr(K, args[1], j - 1, i - 1)], _lr(K, K.Ctx.Cons(*args), j, i)
    return induct(K.Ctx, case, "lookup_remove")


def _binders(K: Calculus, name: str, args: list[z3.ExprRef], ctx: z3.ExprRef
             ) -> list[tuple[z3.ExprRef, z3.ExprRef]]:
    """(subterm, its context) for each direct subterm of ``name(args)`` typed in ``ctx``."""
    Tm, Ty, Ctx = K.Tm, K.Ty, K.Ctx
    if name in ("Lam", "Fix"):
        return [(args[1], Ctx.Cons(args[0], ctx))]
    if name == "Let":
        return [(args[0], ctx), (args[1], Ctx.Cons(K.typeof(ctx, args[0]), ctx))]
    if name == "Match":
        st = K.typeof(ctx, args[0])
        return [(args[0], ctx), (args[1], Ctx.Cons(Ty.left(st), ctx)),
                (args[2], Ctx.Cons(Ty.right(st), ctx))]
    return [(a, ctx) for a in args if a.sort() == Tm]


def weakening(broken: str = "") -> Verdict:
    """``typeof(c0, t) != err -> typeof(c0 ++ c, t) == typeof(c0, t)`` for every term
    (induction on t; the variable case by ``lookup_append``)."""
    K = calculus(broken)
    c0, c = z3.Consts("c0 c", K.Ctx)
    err = K.Ty.TErr

    def p(t: z3.ExprRef, ctx: z3.ExprRef) -> z3.BoolRef:
        return z3.Implies(K.typeof(ctx, t) != err,
                          K.typeof(K.append(ctx, c), t) == K.typeof(ctx, t))

    def case(name: str, args: list[z3.ExprRef]) -> tuple[list[z3.BoolRef], z3.BoolRef]:
        term = getattr(K.Tm, name)(*args) if args else getattr(K.Tm, name)
        hyps = [p(sub, ctx) for sub, ctx in _binders(K, name, args, c0)]
        if name == "Var":
            i = args[0]
            hyps.append(z3.Implies(K.lookup(c0, i) != err,
                                   K.lookup(K.append(c0, c), i) == K.lookup(c0, i)))
        return hyps, p(term, c0)
    return induct(K.Tm, case, "weakening", skip=("Stuck",))


def substitution(broken: str = "") -> Verdict:
    """``ctx[j] = A``, ``typeof([], v) = A != err``, ``typeof(ctx, t) != err`` imply
    ``typeof(ctx - j, subst(t, j, v)) == typeof(ctx, t)`` (induction on t; the variable case
    by ``weakening`` of the closed ``v`` and ``lookup_remove``)."""
    K = calculus(broken)
    ctx0 = z3.Const("ctx", K.Ctx)
    j0 = z3.Int("j")
    v = z3.Const("v", K.Tm)
    err = K.Ty.TErr
    a_ty = K.typeof(K.Ctx.Nil, v)

    def p(t: z3.ExprRef, ctx: z3.ExprRef, j: z3.ArithRef) -> z3.BoolRef:
        pre = z3.And(j >= 0, K.lookup(ctx, j) == a_ty, a_ty != err, K.typeof(ctx, t) != err)
        return z3.Implies(pre, K.typeof(K.remove(ctx, j), K.subst(t, j, v)) == K.typeof(ctx, t))

    def case(name: str, args: list[z3.ExprRef]) -> tuple[list[z3.BoolRef], z3.BoolRef]:
        term = getattr(K.Tm, name)(*args) if args else getattr(K.Tm, name)
        hyps = []
        for sub, ctx in _binders(K, name, args, ctx0):
            hyps.append(p(sub, ctx, j0 + 1 if ctx is not ctx0 else j0))
        if name == "Var":
            i = args[0]
            rest = K.remove(ctx0, j0)
            hyps.append(z3.Implies(a_ty != err, K.typeof(K.append(K.Ctx.Nil, rest), v) == a_ty))
            hyps.append(_lr(K, ctx0, j0, i))
        return hyps, p(term, ctx0, j0)
    return induct(K.Tm, case, "substitution", skip=("Stuck",))


def _subst_instance(K: Calculus, body: z3.ExprRef, a_ty: z3.ExprRef, v: z3.ExprRef
                    ) -> z3.BoolRef:
    """The substitution lemma at ``ctx = [A]``, ``j = 0`` (A = v's type)."""
    err = K.Ty.TErr
    ctx = K.Ctx.Cons(a_ty, K.Ctx.Nil)
    pre = z3.And(K.typeof(K.Ctx.Nil, v) == a_ty, a_ty != err, K.typeof(ctx, body) != err)
    return z3.Implies(pre, K.typeof(K.remove(ctx, 0), K.subst(body, 0, v)) ==
                      K.typeof(ctx, body))


def progress(broken: str = "") -> Verdict:
    """A well-typed closed term is a value or steps (induction on t)."""
    K = calculus(broken)
    nil, err = K.Ctx.Nil, K.Ty.TErr

    def p(t: z3.ExprRef) -> z3.BoolRef:
        return z3.Implies(z3.And(K.typeof(nil, t) != err, z3.Not(K.value(t))),
                          K.step(t) != K.Tm.Stuck)

    def case(name: str, args: list[z3.ExprRef]) -> tuple[list[z3.BoolRef], z3.BoolRef]:
        term = getattr(K.Tm, name)(*args) if args else getattr(K.Tm, name)
        hyps = [p(sub) for sub, ctx in _binders(K, name, args, nil) if ctx is nil]
        return hyps, p(term)
    return induct(K.Tm, case, "progress", skip=("Stuck",))


def preservation(broken: str = "") -> Verdict:
    """A step of a well-typed closed term keeps its type (induction on t; beta, ``let`` and
    ``match`` reductions by the substitution lemma)."""
    for lemma in (lookup_append, lookup_remove, weakening, substitution):
        v = lemma(broken)
        if v.status != PROVED:
            return v
    K = calculus(broken)
    nil, err, Tm = K.Ctx.Nil, K.Ty.TErr, K.Tm

    def p(t: z3.ExprRef) -> z3.BoolRef:
        return z3.Implies(z3.And(K.typeof(nil, t) != err, z3.Not(K.value(t)),
                                 K.step(t) != Tm.Stuck),
                          K.typeof(nil, K.step(t)) == K.typeof(nil, t))

    def case(name: str, args: list[z3.ExprRef]) -> tuple[list[z3.BoolRef], z3.BoolRef]:
        term = getattr(Tm, name)(*args) if args else getattr(Tm, name)
        hyps = [p(sub) for sub, ctx in _binders(K, name, args, nil) if ctx is nil]
        if name == "App":
            f, a = args
            hyps.append(_subst_instance(K, Tm.body(f), Tm.aty(f), a))
        if name == "Let":
            hyps.append(_subst_instance(K, args[1], K.typeof(nil, args[0]), args[0]))
        if name == "Fix":
            hyps.append(_subst_instance(K, args[1], args[0], Tm.Fix(*args)))
        if name == "Match":
            s = args[0]
            hyps.append(_subst_instance(K, args[1], K.typeof(nil, Tm.lval(s)), Tm.lval(s)))
            hyps.append(_subst_instance(K, args[2], K.typeof(nil, Tm.rval(s)), Tm.rval(s)))
        return hyps, p(term)
    return induct(Tm, case, "preservation", skip=("Stuck",))


LEMMAS: dict[str, tuple[str, Callable[[], Verdict]]] = {
    "lookup_append": ("appending to a context keeps the types of its variables",
                      lookup_append),
    "lookup_remove": ("removing context entry j shifts the variables above it down by one",
                      lookup_remove),
    "weakening": ("a term typed in c0 has the same type in c0 ++ c", weakening),
    "substitution": ("substituting a closed value of the variable's type keeps the type",
                     substitution),
    "progress": ("a well-typed closed term with functions, let, fix, sums and match is a "
                 "value or steps", progress),
    "preservation": ("a step of a well-typed closed term with functions, let, fix, sums and "
                     "match keeps its type (using the lemmas)", preservation),
}

for _name, (_stmt, _check) in LEMMAS.items():
    obligation(f"soundness.binders.{_name}", _stmt + " (Z3, structural induction)", _check)
