"""Soundness measured with the interpreter: a well-typed program's value has the inferred type.

The corpus is the well-typed programs below (one or more per typing rule) plus the
interpreter's golden programs (``tests/interpreter/programs/*.relay``) that type-check.
Programs are evaluated with ``check=False`` so that the interpreter and the checker are
independent witnesses; ``value_has_type`` decides inhabitation.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from golden import directives, files
from hypothesis import HealthCheck, assume, given, reject, settings
from tc_util import pretty, type_of, value_has_type

from interpreter import evaluate
from semantics import parse, parse_expr
from semantics.errors import RelayRuntimeError, RelayTypeError

EXPRESSIONS = [
    # leaves, tuples, projections
    "1", "2.5f", "True", "3i64", "7u8", "(1, 2f, (True,))", "(1, (2f, 3)).1.0", "()",
    # lets, sequencing, shadowing
    "let %x = 1f; let %y = (%x, %x); %y", "1; 2f", "let %x = 1; let %x = (%x, 2f); %x",
    # functions, calls, higher order, closures
    "(fn (%x: int32) { (%x, %x) })(4)",
    "let %k = fn (%a: float32) { fn (%b: int32) { (%a, %b) } }; %k(1f)(2)",
    "let %id = fn (%x) { %x }; (%id(1), %id(2f), %id(Cons(True, Nil)))",
    "let %twice = fn (%f, %x) { %f(%f(%x)) }; %twice(fn (%y: int32) { add(%y, 1) }, 5)",
    "fn (%x: float32) { %x }",
    # operators and relations
    "add(ones(shape=[2, 3], dtype=\"float32\"), ones(shape=[3], dtype=\"float32\"))",
    "reshape(arange(0f, 12f, 1f), newshape=[3, -1])",
    "concatenate((zeros(shape=[2, 2], dtype=\"int32\"), ones(shape=[1, 2], dtype=\"int32\")), "
    "axis=0)",
    "nn.dense(ones(shape=[2, 3], dtype=\"float32\"), ones(shape=[4, 3], dtype=\"float32\"))",
    "nn.conv2d(ones(shape=[1, 2, 5, 5], dtype=\"float32\"), ones(shape=[3, 2, 3, 3], "
    "dtype=\"float32\"), strides=[2, 2], padding=[1, 1])",
    "let %f = add; (%f(1, 2), %f(1f, 2f))",
    "nn.batch_norm(ones(shape=[1, 2], dtype=\"float32\"), ones(shape=[2], dtype=\"float32\"), "
    "ones(shape=[2], dtype=\"float32\"), ones(shape=[2], dtype=\"float32\"), "
    "ones(shape=[2], dtype=\"float32\"))",
    # conditionals and recursion
    "if (less(1, 2)) { (1, 2f) } else { (3, 4f) }",
    "let %fact = fn (%n: int32) -> int32 { if (equal(%n, 0)) { 1 } else { "
    "multiply(%n, %fact(subtract(%n, 1))) } }; %fact(5)",
    # ADTs and matching
    "Cons(1, Cons(2, Nil))", "Some((1, 2f))", "Rose(1f, Cons(Rose(2f, Nil), Nil))",
    "match (Cons(1, Nil)) { Cons(%h, %t) => (%h, %t), Nil => (0, Nil), }",
    "match ((Some(1), Some(2f))) { (Some(%a), None) => %a, (_, _) => 0, }",
    "match? (Cons(1f, Nil)) { Cons(%x, _) => %x, }",
    "@map(fn (%x: int32) { (%x, True) }, Cons(1, Cons(2, Nil)))",
    "@foldl(fn (%a: int32, %b: int32) { add(%a, %b) }, 0, Cons(1, Cons(2, Nil)))",
    "@zip(Cons(1, Nil), Cons(1f, Nil))", "@length(@rev(Cons(1, Cons(2, Nil))))",
    "@compose(fn (%x: float32) { (%x,) }, fn (%y: int32) { 1f })(3)",
    # references
    "let %r = ref(1f); %r := 2f; (!%r, %r)",
    "let %r = ref(Nil); %r := Cons(1, !%r); !%r",
    "let %c = ref(0); let %inc = fn () { %c := add(!%c, 1) }; %inc(); %inc(); !%c",
]


@pytest.mark.parametrize("text", EXPRESSIONS)
def test_value_has_inferred_type(text):
    expr = parse_expr(text)
    t = type_of(expr)
    value = evaluate(expr, check=False)
    assert value_has_type(value, t), (text, pretty(t), value)


def test_value_has_type_can_fail():
    # the helper itself discriminates (so the soundness tests can fail)
    t = type_of("(1, 2f)")
    assert not value_has_type((np.array(1, "int32"), np.array(2, "float64")), t)
    assert not value_has_type((np.array(1, "int32"),), t)
    lst = type_of("Cons(1, Nil)")
    from interpreter import ConstructorValue

    bad = ConstructorValue("Cons", (np.array(1.0, "float32"), ConstructorValue("Nil", ())))
    assert not value_has_type(bad, lst)


# --- the interpreter's golden programs ---------------------------------------------------------

PROGRAMS = Path(__file__).resolve().parents[1] / "interpreter" / "programs"
GOLDEN, _ = files(PROGRAMS)


def _expects_a_value(path: Path) -> bool:
    """A golden program that declares a value (``// expect:``) and runs checked: it is well
    typed (tests/interpreter/test_golden.py checks that ill-typed ones declare an error)."""
    spec = directives(path.read_text(encoding="utf-8"))
    return "expect" in spec and spec.get("check", "on") != "off"


VALUED_GOLDEN = [p for p in GOLDEN if _expects_a_value(p)]


def test_most_golden_programs_give_values():
    assert len(VALUED_GOLDEN) >= 25


@pytest.mark.parametrize("path", VALUED_GOLDEN, ids=[p.stem for p in VALUED_GOLDEN])
def test_golden_program_values_have_their_types(path):
    from typechecker.api import global_types

    text = path.read_text(encoding="utf-8")
    spec = directives(text)
    mod = parse(text, source_name=path.name)
    types = global_types(mod)
    entry = spec.get("entry", "main").lstrip("@")
    args = json.loads(spec.get("args", "[]"))
    kwargs = {"entry": entry, "check": False}
    if "fuel" in spec:
        kwargs["fuel"] = int(spec["fuel"])
    value = evaluate(mod, *args, **kwargs)
    ret = types[entry].ret_type
    assert value_has_type(value, ret, mod), (path.name, pretty(ret))


# --- generated well-typed programs --------------------------------------------------------------

def _programs():
    from conformance.strategies import well_typed_programs

    return well_typed_programs()


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(_programs())
def test_generated_programs_are_sound(program):
    mod, inputs = program.module, program.inputs
    from typechecker.api import global_types

    try:
        types = global_types(mod)
    except RelayTypeError as err:  # the generator promises well-typed programs
        # ... but may leave an ADT's type argument undetermined (e.g. `NatNil` of a
        # `Nat[A]` that nothing constrains), which the checker rejects as underconstrained
        assume(not err.message.startswith("underconstrained"))
        raise AssertionError(f"generated program rejected: {err}") from err
    try:
        value = evaluate(mod, *inputs, check=False)
    except RelayRuntimeError:
        reject()  # a run-time error: no value whose type to check
    assert value_has_type(value, types["main"].ret_type, mod)
