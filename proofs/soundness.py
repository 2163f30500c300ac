"""Type soundness: what is *proved* (Z3, by structural induction) and what is *checked*.

``soundness.core.progress`` / ``soundness.core.preservation`` — **proved**. The first-order
core of the calculus (RULES.md's Type-/Semantics- rules for constants, ``add``, ``equal``,
``if``, tuples and projections; tensors abstracted to their scalar contents) is encoded as
Z3 datatypes: terms, types (with an error type), ``typeof`` (the typing rules) and ``step``
(one call-by-value small step; ``Stuck`` when no rule applies) as recursive functions.
Progress (a well-typed non-value steps) and preservation (a step keeps the type) are proved
by structural induction: for each term constructor, Z3 proves the claim for
``C(t1, ..., tn)`` from the induction hypotheses on ``t1 .. tn`` — one Z3 query per
constructor, so the proof covers terms of every size. Binders (``fn``, ``let``) and an ADT
with ``match`` are proved in :mod:`proofs.soundness_binders`; references and shapes are in
neither fragment.

``soundness.bounded.progress_preservation`` — **checked** (a bounded model check, not a
proof): the conformance kit's well-typed program generator draws programs (derandomized,
so every run checks the same ones) covering the whole language; each must evaluate to a
value of the inferred type or stop in a documented trap (§5).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import z3

from proofs.core import PROVED, REFUTED, UNKNOWN, Verdict, obligation

BOUNDED_PROGRAMS = 150


@functools.cache
def _core(broken: str = "") -> tuple[z3.DatatypeSortRef, z3.DatatypeSortRef,
                                     dict[str, z3.FuncDeclRef]]:
    """The core fragment: terms, types, ``typeof``, ``is_value``, ``step`` (built once).

    ``broken="If"`` (tests only) drops Type-If's premise that both branches have one type.
    """
    ty = z3.Datatype("Ty")
    ty.declare("TBool")
    ty.declare("TInt")
    ty.declare("TPair", ("left", ty), ("right", ty))
    ty.declare("TErr")
    Ty = ty.create()

    tm = z3.Datatype("Tm")
    tm.declare("BoolLit", ("bval", z3.BoolSort()))
    tm.declare("IntLit", ("ival", z3.IntSort()))
    tm.declare("Add", ("a1", tm), ("a2", tm))
    tm.declare("Eq", ("e1", tm), ("e2", tm))
    tm.declare("If", ("c", tm), ("th", tm), ("el", tm))
    tm.declare("Pair", ("p1", tm), ("p2", tm))
    tm.declare("Fst", ("f", tm))
    tm.declare("Snd", ("s", tm))
    tm.declare("Stuck")
    Tm = tm.create()

    typeof = z3.RecFunction(f"typeof{broken}", Tm, Ty)
    value = z3.RecFunction(f"is_value{broken}", Tm, z3.BoolSort())
    step = z3.RecFunction(f"step{broken}", Tm, Tm)
    same_branches = z3.BoolVal(True)
    t = z3.Const("t", Tm)
    err = Ty.TErr

    def ok(x: z3.ExprRef) -> z3.BoolRef:
        return typeof(x) != err

    z3.RecAddDefinition(typeof, [t], z3.If(
        Tm.is_BoolLit(t), Ty.TBool, z3.If(
            Tm.is_IntLit(t), Ty.TInt, z3.If(
                Tm.is_Add(t), z3.If(z3.And(typeof(Tm.a1(t)) == Ty.TInt,
                                           typeof(Tm.a2(t)) == Ty.TInt), Ty.TInt, err), z3.If(
                    Tm.is_Eq(t), z3.If(z3.And(typeof(Tm.e1(t)) == Ty.TInt,
                                              typeof(Tm.e2(t)) == Ty.TInt), Ty.TBool, err), z3.If(
                        Tm.is_If(t), z3.If(z3.And(typeof(Tm.c(t)) == Ty.TBool, ok(Tm.th(t)),
                                                  ok(Tm.el(t)),
                                                  same_branches if broken == "If" else
                                                  typeof(Tm.th(t)) == typeof(Tm.el(t))),
                                           typeof(Tm.th(t)), err), z3.If(
                            Tm.is_Pair(t), z3.If(z3.And(ok(Tm.p1(t)), ok(Tm.p2(t))),
                                                 Ty.TPair(typeof(Tm.p1(t)), typeof(Tm.p2(t))),
                                                 err), z3.If(
                                Tm.is_Fst(t), z3.If(Ty.is_TPair(typeof(Tm.f(t))),
                                                    Ty.left(typeof(Tm.f(t))), err), z3.If(
                                    Tm.is_Snd(t), z3.If(Ty.is_TPair(typeof(Tm.s(t))),
                                                        Ty.right(typeof(Tm.s(t))), err),
                                    err)))))))))
    z3.RecAddDefinition(value, [t], z3.Or(
        Tm.is_BoolLit(t), Tm.is_IntLit(t),
        z3.And(Tm.is_Pair(t), value(Tm.p1(t)), value(Tm.p2(t)))))
    stuck = Tm.Stuck

    def lift(sub: z3.ExprRef, rebuild: Callable[[z3.ExprRef], z3.ExprRef]) -> z3.ExprRef:
        return z3.If(step(sub) == stuck, stuck, rebuild(step(sub)))

    def binop(x: z3.ExprRef, y: z3.ExprRef, mk: Callable[[z3.ExprRef, z3.ExprRef], z3.ExprRef],
              reduce: z3.ExprRef) -> z3.ExprRef:
        return z3.If(z3.Not(value(x)), lift(x, lambda s: mk(s, y)),
                     z3.If(z3.Not(value(y)), lift(y, lambda s: mk(x, s)), reduce))

    a1, a2 = Tm.a1(t), Tm.a2(t)
    e1, e2 = Tm.e1(t), Tm.e2(t)
    add_red = z3.If(z3.And(Tm.is_IntLit(a1), Tm.is_IntLit(a2)),
                    Tm.IntLit(Tm.ival(a1) + Tm.ival(a2)), stuck)
    eq_red = z3.If(z3.And(Tm.is_IntLit(e1), Tm.is_IntLit(e2)),
                   Tm.BoolLit(Tm.ival(e1) == Tm.ival(e2)), stuck)
    c = Tm.c(t)
    if_step = z3.If(z3.Not(value(c)), lift(c, lambda s: Tm.If(s, Tm.th(t), Tm.el(t))),
                    z3.If(Tm.is_BoolLit(c), z3.If(Tm.bval(c), Tm.th(t), Tm.el(t)), stuck))
    p1, p2 = Tm.p1(t), Tm.p2(t)
    pair_step = z3.If(z3.Not(value(p1)), lift(p1, lambda s: Tm.Pair(s, p2)),
                      z3.If(z3.Not(value(p2)), lift(p2, lambda s: Tm.Pair(p1, s)), stuck))
    f, sn = Tm.f(t), Tm.s(t)
    fst_step = z3.If(z3.Not(value(f)), lift(f, Tm.Fst),
                     z3.If(Tm.is_Pair(f), Tm.p1(f), stuck))
    snd_step = z3.If(z3.Not(value(sn)), lift(sn, Tm.Snd),
                     z3.If(Tm.is_Pair(sn), Tm.p2(sn), stuck))
    z3.RecAddDefinition(step, [t], z3.If(
        Tm.is_Add(t), binop(a1, a2, Tm.Add, add_red), z3.If(
            Tm.is_Eq(t), binop(e1, e2, Tm.Eq, eq_red), z3.If(
                Tm.is_If(t), if_step, z3.If(
                    Tm.is_Pair(t), pair_step, z3.If(
                        Tm.is_Fst(t), fst_step, z3.If(Tm.is_Snd(t), snd_step, stuck)))))))
    return Tm, Ty, {"typeof": typeof, "is_value": value, "step": step}


def _induction(which: str, broken: str = "") -> Verdict:
    """Prove progress or preservation by structural induction, one query per constructor.

    ``broken`` (tests only) uses the deliberately wrong typing of :func:`_core`.
    """
    Tm, Ty, fns = _core(broken)
    typeof, value, step = fns["typeof"], fns["is_value"], fns["step"]
    err = Ty.TErr

    def claim(x: z3.ExprRef) -> z3.BoolRef:
        well = z3.And(typeof(x) != err, z3.Not(value(x)))
        if which == "progress":
            return z3.Implies(well, step(x) != Tm.Stuck)
        return z3.Implies(z3.And(well, step(x) != Tm.Stuck), typeof(step(x)) == typeof(x))

    for k in range(Tm.num_constructors()):
        ctor = Tm.constructor(k)
        if ctor.name() == "Stuck":
            continue
        args = []
        hyps = []
        for j in range(ctor.arity()):
            sort = ctor.domain(j)
            a = z3.Const(f"{ctor.name()}_{j}", sort)
            args.append(a)
            if sort == Tm:
                hyps.append(claim(a))
                hyps.append(a != Tm.Stuck)
        term = ctor(*args)
        goal = claim(term)
        s = z3.Solver()
        s.set("timeout", 20000)
        s.add(*hyps, z3.Not(goal))
        r = s.check()
        if r == z3.sat:
            m = s.model()
            shown = ", ".join(f"{a} = {m.eval(a, model_completion=True)}" for a in args)
            return Verdict(REFUTED, f"{which} fails for {ctor.name()}(...) with {shown}", "z3")
        if r != z3.unsat:
            return Verdict(UNKNOWN, "", "z3", f"{ctor.name()}: {s.reason_unknown()}")
    return Verdict(PROVED, method="z3-induction")


def bounded_check(count: int = BOUNDED_PROGRAMS) -> Verdict:
    """Progress and preservation on ``count`` generated well-typed programs (derandomized)."""
    from hypothesis import HealthCheck, given, settings

    from conformance.harness import DOCUMENTED_TRAPS, ORACLE_FUEL, value_has_type
    from conformance.strategies.programs import Program, well_typed_modules
    from interpreter import evaluate
    from semantics import pretty
    from semantics.errors import RelayRuntimeError
    from semantics.module import IRModule
    from semantics.types import FuncType
    from typechecker import infer

    failures: list[str] = []

    @settings(max_examples=count, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), print_blob=False)
    @given(well_typed_modules())
    def prop(program: Program) -> None:
        typed = infer(program.module)
        assert isinstance(typed, IRModule)
        ret = typed["main"].checked_type
        assert isinstance(ret, FuncType)
        try:
            value = evaluate(program.module, *program.inputs, fuel=ORACLE_FUEL)
        except RelayRuntimeError as err:
            if not err.message.startswith(DOCUMENTED_TRAPS):
                failures.append(f"progress: {err.message}\n{pretty(program.module)}")
                raise AssertionError(err.message) from None
            return
        if not value_has_type(value, ret.ret_type, program.module):
            failures.append(f"preservation: value {value!r} does not have type "
                            f"{pretty(ret.ret_type)}\n{pretty(program.module)}")
            raise AssertionError("preservation")

    try:
        prop()
    except AssertionError:
        return Verdict(REFUTED, failures[-1] if failures else "property failed",
                       f"bounded-{count}-programs")
    return Verdict(PROVED, method=f"bounded-{count}-programs")


obligation("soundness.core.progress",
           "a well-typed closed term of the first-order core is a value or steps (Z3, "
           "structural induction)", lambda: _induction("progress"))
obligation("soundness.core.preservation",
           "a step of a well-typed term of the first-order core keeps its type (Z3, "
           "structural induction)", lambda: _induction("preservation"))
obligation("soundness.bounded.progress_preservation",
           f"progress and preservation on {BOUNDED_PROGRAMS} generated well-typed programs of "
           "the full language (bounded model check: tested, not proved)", bounded_check)
