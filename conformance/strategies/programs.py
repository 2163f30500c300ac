"""Type-directed generation of well-typed Relay programs with inputs (PLT Redex style).

``well_typed_exprs(type, ctx)`` draws an expression *of a given type* in a
typing context; ``well_typed_modules()`` draws ``Program(module, inputs)``
pairs: an :class:`IRModule` whose ``main`` takes first-order arguments, and
argument values for it. Every construct of the language appears:

* ``let`` chains and sequencing, graph sharing (a pure, non-trapping node
  reused inside one function body), tuples and projections, ``if``;
* functions and closures (capturing the context), higher-order calls (a
  function-typed parameter, a closure returned and called), global
  functions, polymorphic globals (``def @g[A](%x: A, ...)``) instantiated at
  their call sites;
* ADT definitions (random: recursive, polymorphic) and ``match`` with nested
  constructor and tuple patterns (exhaustive, or ``match?`` that may fail);
* references with observable effects: ``ref``, writes then reads, aliases
  (``let %r2 = %r1``), references captured by closures, sequencing; ``main``
  ends by reading every reference it bound, so a lost or reordered write
  changes its result (``ProgramConfig(effects=k)`` adds ``k`` top-level
  writes for targeted runs);
* operator calls for every registered operator
  (:mod:`conformance.strategies.opcalls`): type-directed elementwise calls
  anywhere a tensor is wanted, and ``let`` bindings of each operator's valid
  calls whose results ``main`` returns (so every call is observable);
* terminating recursion only: structural recursion on an ADT (a global whose
  recursive calls take a variable bound by matching its parameter — a strict
  subterm) and counter loops (global or ``let``-bound local functions whose
  recursive calls pass ``n - 1`` and whose guard ``n <= 0 || n > B`` ends them
  within ``B`` steps). A recursive function's name is not usable inside the
  closures it creates, references hold first-order values only (no Landin's
  knot), and a global calls only globals defined before it; so every
  generated program terminates.

Numerics: by default integer dtypes, ``float32`` and ``float16`` with small
integer and quarter contents, and one element in six an edge case of its dtype
(NaN, ±inf, -0.0, a subnormal, ±max, the integer extremes: ``special_values``),
so that sign, rounding, overflow and NaN mistakes show;
``ProgramConfig(float_mode=True)`` draws float-heavy programs with moderate real
values (compare with tolerances). Integer divisions in generated elementwise
calls mostly get a nonzero constant divisor (a trap would hide the rest of the run).

Observability: ``main`` returns every first-order value it binds along with its
result; *flow* steps apply elementwise operators to the tensors ``main`` bound
before (so values flow from operator to operator and ``op(%x, %x)`` appears);
*edge probes* (``max_probes``, ``_OpGen.probe_call``) put those tensors where rewriting
passes make their special-value mistakes (``op(%x, %x)``, ``op(%x, 0)``, ``(x + c) - c``
with ``c`` near the dtype's limits, a square tensor with a lower-rank one); a write of
``main`` is often read back at once; operator arguments are often plain variables or
constants; some constants of ``main`` are lifted to parameters (``lift_constants``), and
each program carries ``alternates`` further input tuples (``Program.alternates``: in turn
edge-heavy, narrow — small values and halves, so operands tie and go negative —,
IEEE-heavy — half of the float elements NaN, ±inf or -0.0 — and distinct — no two
elements of a tensor equal, all of one sign or mixed, so a wrong permutation, pooling
window or reduction start cannot hide behind ties) that the harness checks too — running
a program is far cheaper than generating it.

Variety: each program may favour one dtype and one or two operators (swarm testing:
``_GenBase.swarm``), float dtypes are drawn half of the time, and every example is a
novel program (the draw sits in a one-element unique list, whose insides Hypothesis's
generation-phase mutator leaves alone; see :func:`well_typed_modules`).

Not generated: ``grad`` (needs the AD package), effectful graph sharing
(whose evaluation point is ambiguous), references to functions, symbolic or
``?`` shapes in programs (they appear in :mod:`conformance.strategies.ast`).

Shrinking: every choice is ordered simplest-first (use a variable, then a
literal, then compound forms) and sizes are drawn as integers, so Hypothesis
shrinks towards small programs. Generation recursion is bounded by
``max_depth`` (a small caller-chosen bound independent of user input).

Layout: this module is the entry point (the public strategies below and the names
re-exported from :mod:`conformance.strategies.programgen`). The generator is one class,
``programgen.assembly._Gen``, built from a mixin per concept: ``config``
(:class:`ProgramConfig`, :class:`Program`, :class:`TypingContext`), ``scope`` (typing
contexts, recursion permits, module state), ``base`` (draws, names, random types),
``exprs`` (the type-directed core), ``operators``, ``effects`` (references), ``adts``
(definitions, constructors, matches, patterns), ``recursion`` and ``assembly`` (globals
and ``main``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from hypothesis import assume
from hypothesis import strategies as st

from conformance.strategies.programgen.assembly import _Gen
from conformance.strategies.programgen.config import DEFAULT_DTYPES as DEFAULT_DTYPES
from conformance.strategies.programgen.config import FEATURES, Program, ProgramConfig, TypingContext
from conformance.strategies.programgen.config import FLOAT_DTYPES as FLOAT_DTYPES
from conformance.strategies.programgen.config import format_value as format_value
from conformance.strategies.programgen.scope import _Ctx, _State
from conformance.strategies.values import EDGE_ODDS, values_of
from semantics.expr import Expr, Function, Var
from semantics.module import IRModule
from semantics.types import Type

__all__ = ["ProgramConfig", "Program", "TypingContext", "well_typed_exprs", "well_typed_modules",
           "well_typed_programs", "FEATURES"]


# --- public strategies ------------------------------------------------------------------------

def well_typed_exprs(ty: Type, ctx: TypingContext | Sequence[tuple[Var, Type]] = (), *,
                     config: ProgramConfig | None = None) -> st.SearchStrategy[Expr]:
    """Expressions of type ``ty`` whose free variables are among ``ctx``'s.

    Args:
        ty: the wanted type (concrete: int dims; ADTs must be defined in ``ctx.module``).
        ctx: a :class:`TypingContext` or a sequence of ``(Var, Type)`` pairs.
        config: generator controls (``max_depth`` etc.).
    Returns:
        A strategy of expressions that type-check to ``ty`` in the context.
    """
    cfg = config or ProgramConfig()
    tc = ctx if isinstance(ctx, TypingContext) else TypingContext(tuple(ctx))

    @st.composite
    def build(draw: st.DrawFn) -> Expr:
        state = _State()
        if tc.module is not None:
            state.adts = list(tc.module.types.values())
        gen = _Gen(draw, replace(cfg, features=cfg.features - {"global"}), state)
        return gen.gen(ty, _Ctx(None, list(tc.variables)), cfg.max_depth)

    return build()


def well_typed_modules(config: ProgramConfig | None = None, **overrides: Any
                       ) -> st.SearchStrategy[Program]:
    """``Program(module, inputs)`` pairs: well-typed modules whose ``main`` terminates on inputs.

    Args:
        config: a :class:`ProgramConfig`; keyword ``overrides`` replace its fields
            (e.g. ``well_typed_modules(max_depth=2, float_mode=True)``).
    Returns:
        A strategy of :class:`Program`. ``main``'s result is a tuple of its
        observations (the results of its operator and global calls) after the
        generated result, so every operator call it makes is observable.
    """
    cfg = replace(config or ProgramConfig(), **overrides)

    @st.composite
    def build(draw: st.DrawFn) -> Program:
        gen = _Gen(draw, cfg)
        gen.swarm()
        if "adt" in cfg.features:
            for i in range(draw(st.integers(0, cfg.max_adts))):
                gen.s.adts.append(gen.adt_definition(i))
        functions: dict[str, Function] = {}
        if "global" in cfg.features:
            for i in range(draw(st.integers(0, cfg.max_globals))):
                name, fn = gen.global_function(i)
                functions[name] = fn
        main, arg_types = gen.main()
        lifted: list[Any] = []
        if cfg.lift_constants:
            main, arg_types, lifted = gen.lift_constants(main, arg_types)
        functions["main"] = main
        mod = IRModule(functions, {td.header.name: td for td in gen.s.adts})
        # A safety net: the construction is type-directed, but an operator family whose
        # valid-call strategy and type relation disagree would yield an ill-typed program,
        # which every transform would then "fail" on. Such a draw is discarded.
        assume(_type_checks(mod))

        def draw_inputs(types: tuple[Type, ...], edge_odds: int, narrow: bool = False,
                        ieee: bool = False, distinct: bool = False) -> tuple[Any, ...]:
            bindings: dict[str, int] = {}
            return tuple(draw(values_of(t, mod, exact=True, fractional=cfg.float_mode,
                                        bound=cfg.value_bound, max_size=cfg.max_dim,
                                        adt_depth=cfg.adt_depth, bindings=bindings,
                                        special=cfg.special_values, edge_odds=edge_odds,
                                        narrow=narrow, distinct=distinct,
                                        ieee=ieee or not cfg.finite_extremes))
                         for t in types)

        n_own = len(arg_types) - len(lifted)
        inputs = draw_inputs(arg_types[:n_own], EDGE_ODDS) + tuple(lifted)
        # The alternates are, in turn: edge-heavy (one element in three an edge case: NaN,
        # ±inf, -0.0, subnormals, extremes); narrow (small values and halves, so that
        # operands share elements and sit between integers; one element in eight an edge
        # case); IEEE-heavy (half of the float elements NaN, ±inf or -0.0, where the
        # algebra of real numbers fails); distinct (no two elements of a tensor equal, all
        # of one sign or mixed: a wrong permutation, window or reduction start cannot hide
        # behind ties and symmetric constants); then again.
        alternates = tuple(draw_inputs(arg_types, 3) if i % 4 == 0 else
                           draw_inputs(arg_types, 8, narrow=True) if i % 4 == 1 else
                           draw_inputs(arg_types, 2, ieee=True) if i % 4 == 2 else
                           draw_inputs(arg_types, EDGE_ODDS, distinct=True)
                           for i in range(cfg.alternates))
        return Program(mod, inputs, alternates)

    # Drawn inside a one-element unique list: Hypothesis's generation phase follows each
    # novel example with up to five *mutations* of it (one span's choices copied over
    # another of the same label), which for programs are near-duplicates; spans inside a
    # unique collection are not mutated, so every example is a novel program (300
    # examples: 300 distinct programs instead of about 210). Shrinking is unaffected.
    return st.lists(build(), min_size=1, max_size=1, unique_by=id).map(_only)


def _type_checks(mod: IRModule) -> bool:
    from semantics.errors import RelayError
    from typechecker import check

    try:
        check(mod)
    except RelayError:
        return False
    return True


def _only(programs: list[Program]) -> Program:
    return programs[0]


well_typed_programs = well_typed_modules
