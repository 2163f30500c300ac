"""Premises established in place, and generated blocks, fire the same rules in the same order
as the driver.

The interpreter establishes a premise in place (no generator, no round trip through
the driver) when its expression is a leaf, a projection of a leaf or an operator or
constructor call on leaves; once the driver has run a node's case ``HOT`` times it runs the
node's generated block instead (:mod:`interpreter.codegen`); while a derivation is recorded
it does neither (every judgment is reported). So the rule applications a :class:`Recorder`
receives are the reference sequence: the ``trace`` of an ordinary evaluation must
be exactly that sequence — the same rules on the same nodes — on every golden
program, on snippets aimed at each in-place path, and on generated well-typed
programs, run once (cases) and run again once their blocks exist (the observed variant);
and the value or error of an unobserved run with blocks (the other variant) must be the
recorded one. (Identical sequences also mean identical ``fuel`` behaviour: fuel counts
these applications.)
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from interp_util import GOLDEN_FILES, directives, golden_call

from conformance.harness import ORACLE_FUEL
from conformance.strategies.programs import Program, well_typed_modules
from interpreter import codegen, evaluate, evaluate_recorded
from interpreter.values import show_value
from semantics import RelayError, parse, parse_expr


def key(node: Any) -> Any:
    """A node by identity (the entry's own ``@main`` reference is made per evaluation)."""
    return node.name_hint if type(node).__name__ == "GlobalVar" else id(node)


class RuleLog:
    """A Recorder keeping only the rule applications (rule name, node)."""

    def __init__(self) -> None:
        self.rules: list[tuple[str, int]] = []
        self.depth = 0

    def open(self, node: Any) -> None:
        self.depth += 1

    def rule(self, rule: Any, node: Any) -> None:
        self.rules.append((rule.value, key(node)))

    def close(self, value: Any) -> None:
        self.depth -= 1
        assert self.depth >= 0, "a judgment closed twice"


def both_ways(program: Any, args: list[Any], **kwargs: Any) -> tuple[list[Any], list[Any]]:
    """(trace of an ordinary evaluation, rules reported while recording), with outcomes."""
    traced: list[Any] = []

    def trace(name: str, node: Any) -> None:
        traced.append((name, key(node)))

    def outcome(run: Any) -> Any:
        try:
            run()
            return "value"
        except RelayError as err:
            return str(err)

    first = outcome(lambda: evaluate(program, *args, trace=trace, **kwargs))
    log = RuleLog()
    second = outcome(lambda: evaluate_recorded(program, *args, recorder=log, **kwargs))
    if second == "value":
        assert log.depth == 0, "a judgment left open"
    return [first, *traced], [second, *log.rules]


@pytest.fixture(autouse=True, scope="module")
def _blocks_soon() -> Iterator[None]:
    """Blocks made after a few runs (not the default's many), so that the tests below make
    them without running each program dozens of times."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(codegen, "HOT", 3)
        yield


def outcome_of(run: Any) -> str:
    """The value (shown exactly) or the error message of ``run()``."""
    try:
        return show_value(run())
    except RelayError as err:
        return str(err)


def hot_both_ways(program: Any, args: list[Any], **kwargs: Any
                  ) -> tuple[list[Any], list[Any], str, str]:
    """:func:`both_ways` once every node the driver meets has its blocks (both variants),
    plus (the outcome of an unobserved evaluation, the recorded evaluation's outcome), both
    "" when the program does not end within its fuel.

    Each run gets its own copy of the arguments (a program may write to a cell passed in).
    Without ``fuel`` the program may not terminate: the unobserved runs (which have no fuel)
    are made only when a run with the fuel ends otherwise than out of fuel (outcome "").
    """
    def fresh() -> list[Any]:
        return copy.deepcopy(args)

    plain = {k: v for k, v in kwargs.items() if k != "fuel"}
    ends = "out of fuel" not in outcome_of(lambda: evaluate(program, *fresh(), **kwargs))
    warm = {**kwargs, "check": False}      # (checked above; the warm-up only makes blocks)
    warm_plain = {**plain, "check": False}
    for _ in range(codegen.HOT):
        outcome_of(lambda: evaluate(program, *fresh(), trace=lambda rule, node: None, **warm))
        if ends:
            outcome_of(lambda: evaluate(program, *fresh(), **warm_plain))
    traced: list[Any] = []

    def trace(name: str, node: Any) -> None:
        traced.append((name, key(node)))

    first = outcome_of(lambda: evaluate(program, *fresh(), trace=trace, **kwargs))
    log = RuleLog()
    second = outcome_of(lambda: evaluate_recorded(program, *fresh(), recorder=log, **kwargs))
    unobserved = recorded_plain = ""
    if ends:
        unobserved = outcome_of(lambda: evaluate(program, *fresh(), **plain))
        recorded_plain = outcome_of(
            lambda: evaluate_recorded(program, *fresh(), recorder=RuleLog(), **plain))
    return [first, *traced], [second, *log.rules], unobserved, recorded_plain


def recordable(kwargs: dict[str, Any]) -> bool:
    # Recording awaits tail premises (tail calls count towards max_depth): programs that
    # test the depth bound behave differently there by design.
    return "max_depth" not in kwargs


RECORDABLE = [p for p in GOLDEN_FILES
              if recordable(golden_call(directives(p.read_text(encoding="utf-8")))[1])]


@pytest.mark.parametrize("path", RECORDABLE, ids=lambda p: p.stem)
def test_golden_programs_fire_the_same_rules(path):
    text = path.read_text(encoding="utf-8")
    args, kwargs = golden_call(directives(text))
    program = parse(text)
    traced, recorded = both_ways(program, args, **kwargs)
    assert traced == recorded


SNIPPETS = [
    # leaves, operator calls on leaves, projections of leaves, in every premise position
    "let %x = 1; let %y = add(%x, 2); (%y, %x, multiply(%y, %y))",
    "let %u = (); (%u, ())",
    "let %t = (1, 2); add(%t.0, %t.1)",
    "let %t = (1, (2, 3)); %t.1.0",
    "if (less(1, 2)) { 10 } else { 20 }",
    "let %r = ref(add(1, 2)); %r := multiply(!%r, 3); !%r",
    "match (Some(add(1, 1))) { Some(%y) => %y, None => 0 }",
    "let %f = fn (%a: int32, %b: int32) { subtract(%a, %b) }; %f(add(1, 2), 4)",
    # trees of operator calls and projections, below and above the in-place height
    "let %t = (1, 2); add(multiply(negative(%t.0), %t.1), subtract(%t.1, 3))",
    "add(add(add(add(add(add(add(add(1, 2), 3), 4), 5), 6), 7), 8), 9)",
    "let %t = ((1, 2), 3); add(%t.0.1, Some(%t.1) == Some(3))",
    "add(1, multiply(2, divide(1, 0)))",
    # a premise needing the driver between in-place ones
    "let %f = fn (%a: int32) { %a }; (1, %f(2), add(3, 4), %f(5))",
    "add(1, (fn (%a: int32) { %a })(2))",
    # graph-shared nodes: through the memo, never in place
    "fn (%x: int32) { %0 = add(%x, 1); multiply(%0, %0) }",
    "fn (%x: int32) { %0 = fn (%y: int32) { %y }; (%0, %0, %0(%x)) }",
    "fn (%x: int32) { %0 = (%x, 2); %1 = %0.0; (%1, %1, %0) }",
    "fn (%x: int32) { %0 = Some(%x); (%0, %0) }",
    "fn (%x: int32) { %0 = negative(%x); add(multiply(%0, 2), %0) }",
    "fn (%x: int32) { %0 = (%x, 1); add(%0.0, %0.1) }",
    # errors raised in place and through the driver
    "let %x = 1; divide(%x, 0)",
    "let %t = (1, 2); %t.1",
    "match (None) { Some(%y) => %y }",
    "(1, 2)(3)",
]


@pytest.mark.parametrize("path", RECORDABLE, ids=lambda p: p.stem)
def test_golden_programs_fire_the_same_rules_in_blocks(path):
    text = path.read_text(encoding="utf-8")
    args, kwargs = golden_call(directives(text))
    program = parse(text)
    traced, recorded, unobserved, recorded_plain = hot_both_ways(program, args, **kwargs)
    assert traced == recorded
    assert unobserved == recorded_plain


@pytest.mark.parametrize("text", SNIPPETS)
def test_snippets_fire_the_same_rules(text):
    expr = parse_expr(text)
    args = [7] if text.startswith("fn") else []
    traced, recorded = both_ways(expr, args, check=False)
    assert traced == recorded
    assert len(traced) > 2


# Shapes aimed at the blocks: let chains with values awaited through the driver between
# values in place, calls with awaited arguments, shadowing of a variable by itself.
BLOCK_SNIPPETS = [
    "let %f = fn (%a: int32) { %a }; let %x = %f(1); let %y = add(%x, 2); "
    "let %z = %f(%y); (%x, %y, %z, Some(%f(3)))",
    "let %f = fn (%a: int32) { add(%a, 1) }; add(%f(1), multiply(%f(2), 3))",
    "let %f = fn (%a: int32) { %a }; if (less(%f(1), 2)) { %f(10) } else { 20 }",
    "let %f = fn (%a: int32) { Some(%a) }; match (%f(4)) { Some(%y) => add(%y, %y), "
    "None => 0 }",
    "let %r = ref(1); let %f = fn () { %r := add(!%r, 1); !%r }; (%f(), %f(), !%r)",
    "let %t = (1, 2); let %u = (%t.1, %t.0, (%t.0,)); %u.2.0",
    "let %g = fn (%n: int32) { let %h = fn (%m: int32) { multiply(%m, %n) }; %h(%n) }; "
    "(%g(2), %g(3))",
    "let %x = 1; let %y = (fn (%z: int32) { add(%z, %x) })(2); let %x2 = add(%x, %y); "
    "divide(%x2, subtract(%y, 3))",
    # matches tried in the block (flat patterns), then by the case (the first other clause)
    "let %l = Cons(1, Cons(2, Nil)); match (%l) { Cons(_, Nil) => 1, Cons(%h, %t) => "
    "match (%t) { Nil => %h, Cons(%k, _) => add(%h, %k) }, Nil => 0 }",
    "match (Some((1, 2))) { Some((%a, _)) => %a, _ => 0 }",
    "let %v = Some(3); match (%v) { None => 0, %w => match (%w) { Some(%q) => %q, _ => 1 } }",
    "match ((1, 2)) { %p => %p.1 }",
    # branches nested deeper than a block writes out
    "let %v = Some(Some(Some(1))); match (%v) { Some(%a) => match (%a) { Some(%b) => "
    "match (%b) { Some(%c) => if (less(%c, 2)) { if (less(%c, 0)) { 0 } else { %c } } "
    "else { 3 }, None => 4 }, None => 5 }, None => 6 }",
]


@pytest.mark.parametrize("fuel", range(0, 30))
def test_fuel_runs_out_at_the_same_rule(fuel):
    text = "let %t = (1, 2); let %f = fn (%a: int32) { add(%a, %t.0) }; %f(multiply(%t.1, 3))"
    traced, recorded = both_ways(parse_expr(text), [], check=False, fuel=fuel)
    assert traced == recorded


@settings(max_examples=150)
@given(well_typed_modules())
def test_generated_programs_fire_the_same_rules(program: Program) -> None:
    traced, recorded = both_ways(program.module, list(program.inputs), fuel=ORACLE_FUEL)
    assert traced == recorded


@pytest.mark.parametrize("text", SNIPPETS + BLOCK_SNIPPETS)
def test_snippets_fire_the_same_rules_in_blocks(text):
    expr = parse_expr(text)
    args = [7] if text.startswith("fn") else []
    traced, recorded, unobserved, recorded_plain = hot_both_ways(expr, args, check=False)
    assert traced == recorded
    assert unobserved == recorded_plain
    assert len(traced) > 2


def test_a_long_chain_continues_in_the_next_block() -> None:
    lets = " ".join(f"let %x{i} = add(%x{i - 1}, {i});" for i in range(1, 120))
    text = f"let %f = fn (%x0: int32) {{ {lets} %x119 }}; (%f(1), %f(2))"
    traced, recorded, unobserved, recorded_plain = hot_both_ways(parse_expr(text), [],
                                                                 check=False)
    assert traced == recorded
    assert unobserved == recorded_plain


@pytest.mark.parametrize("fuel", range(0, 40, 3))
def test_fuel_runs_out_at_the_same_rule_in_blocks(fuel):
    text = ("let %t = (1, 2); let %f = fn (%a: int32) { add(%a, %t.0) }; "
            "let %g = fn (%b: int32) { let %c = %f(%b); (%c, multiply(%c, %t.1)) }; "
            "%g(multiply(%t.1, 3))")
    traced, recorded, _, _ = hot_both_ways(parse_expr(text), [], check=False, fuel=fuel)
    assert traced == recorded


@settings(max_examples=60)
@given(well_typed_modules())
def test_generated_programs_fire_the_same_rules_in_blocks(program: Program) -> None:
    traced, recorded, unobserved, recorded_plain = hot_both_ways(
        program.module, list(program.inputs), fuel=ORACLE_FUEL)
    assert traced == recorded
    assert unobserved == recorded_plain
