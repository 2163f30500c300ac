"""Semantics preservation and termination of the partial evaluator, as Hypothesis properties.

The conformance kit's generator (:mod:`conformance.strategies.programs`) draws well-typed
programs with references (aliases, closures capturing them, writes then reads), closures
and higher-order calls, ADTs with ``match``, and recursion — structural recursion on ADT
inputs and counter loops on dynamic counters, i.e. recursion on dynamic data. The
differential harness runs each program and its partial evaluation under the oracle.
"""

from __future__ import annotations

from hypothesis import given, settings

from conformance import assert_equivalent
from conformance.strategies.ast import ast_modules
from conformance.strategies.programs import ProgramConfig, well_typed_modules
from passes.common import typed_or_same
from pe import partial_evaluate
from pe.evaluator import DEFAULT_FUEL, PartialEvaluator, visit_limit
from semantics import parse
from semantics.analysis import global_vars
from semantics.errors import RelayError
from semantics.expr import Function, Match, RefCreate
from semantics.module import IRModule
from semantics.visitor import post_order

EFFECTFUL = ProgramConfig(effects=3, max_let_chain=4)
DEEP = ProgramConfig(max_depth=3, recursion_bound=5)


def test_partial_evaluation_preserves_meaning():
    assert_equivalent(partial_evaluate, max_examples=80, name="partial_evaluate")


def test_partial_evaluation_preserves_effects():
    assert_equivalent(partial_evaluate, max_examples=50, config=EFFECTFUL,
                      name="partial_evaluate")


def test_partial_evaluation_preserves_meaning_of_deeper_programs():
    assert_equivalent(partial_evaluate, max_examples=40, config=DEEP, name="partial_evaluate")


def test_residual_program_before_dce_preserves_meaning():
    # The raw residual (every effect in place, dead bindings kept) is itself equivalent.
    assert_equivalent(lambda m: partial_evaluate(m, dce=False), max_examples=40,
                      config=EFFECTFUL, name="partial_evaluate(dce=False)")


def test_without_fuel_nothing_is_unfolded_and_meaning_is_kept():
    # Fuel 0: calls of known closures go to their residual functions, globals stay calls.
    assert_equivalent(lambda m: partial_evaluate(m, fuel=0), max_examples=40, config=DEEP,
                      name="partial_evaluate(fuel=0)")


def test_fuel_running_out_midway_keeps_meaning():
    assert_equivalent(lambda m: partial_evaluate(m, fuel=8), max_examples=40, config=DEEP,
                      name="partial_evaluate(fuel=8)")


_SEEN: set[str] = set()


def _features(mod) -> set[str]:
    found = set()
    recursive = False
    for name, fn in mod.functions.items():
        for node in post_order(fn):
            if isinstance(node, RefCreate):
                found.add("references")
            elif isinstance(node, Function) and node is not fn:
                found.add("closures")
            elif isinstance(node, Match):
                found.add("adts")
        recursive = recursive or any(g.name_hint == name for g in global_vars(fn))
    if recursive:
        found.add("recursion")
    return found


@settings(max_examples=80, deadline=None)
@given(well_typed_modules(DEEP))
def test_partial_evaluation_ends_within_the_stated_bound(program):
    mod = typed_or_same(program.module)
    for fn in mod.functions.values():
        pe = PartialEvaluator(mod)
        out = pe.residualize(fn)
        assert pe.visits <= visit_limit(DEFAULT_FUEL, pe.size)
        assert out is not fn or not pe.visits, "gave up on a generated program"
        # What the kit's programs need in practice: a few visits per node.
        assert pe.visits <= 4 * pe.size
    _SEEN.update(_features(program.module))


def test_the_generated_programs_had_every_feature():
    # Runs after the property above (file order): the sample covered what the issue lists.
    assert {"references", "closures", "adts", "recursion"} <= _SEEN, _SEEN


def test_reaching_the_visit_limit_keeps_the_global_as_it_is():
    mod = typed_or_same(parse("""
    def @main(%x: float32) {
      let %f = fn (%i: int32) -> float32 { if (%i > 100) { %x } else { %f(%i + 1) + 1f } };
      %f(0)
    }"""))
    pe = PartialEvaluator(mod)
    pe.limit = 50
    assert pe.residualize(mod["main"]) is mod["main"]


@settings(max_examples=100, deadline=None)
@given(ast_modules())
def test_partial_evaluation_never_crashes_on_any_well_scoped_program(mod):
    # Random ASTs, mostly ill-typed: the partial evaluator works on them untyped and
    # residualizes what it cannot decide (an error would be a RelayError, never a crash).
    try:
        out = partial_evaluate(mod)
    except RelayError:
        return
    assert isinstance(out, IRModule)
