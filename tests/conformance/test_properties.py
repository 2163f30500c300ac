"""Meta-theory properties on generated well-typed programs (PLT Redex style).

* ROUND TRIP — ``parse(pretty(m))`` is alpha-equal to ``m``;
* PROGRESS — a well-typed program evaluates to a value, or ends only in a
  documented run-time error of §5 (integer division by zero, a failing
  ``match?``);
* PRESERVATION — the value has the type the checker inferred for ``main``;
* DETERMINISM — two evaluations agree (bitwise).

Each runs 500 generated programs in every profile (``@settings(max_examples=500)``).
"""

from __future__ import annotations

from hypothesis import given, reject, settings

from conformance.harness import DOCUMENTED_TRAPS, ORACLE_FUEL, value_has_type, values_equal
from conformance.strategies.programs import Program, well_typed_modules
from interpreter import evaluate
from semantics import alpha_equal, parse, pretty
from semantics.errors import RelayRuntimeError
from semantics.types import FuncType
from typechecker import infer

N = 500


@settings(max_examples=N)
@given(well_typed_modules())
def test_round_trip_print_parse(program: Program) -> None:
    text = pretty(program.module)
    back = parse(text)
    assert alpha_equal(program.module, back), text


@settings(max_examples=N)
@given(well_typed_modules())
def test_progress(program: Program) -> None:
    try:
        evaluate(program.module, *program.inputs, fuel=ORACLE_FUEL)
    except RelayRuntimeError as err:
        assert err.message.startswith(DOCUMENTED_TRAPS), (err.message, program)


@settings(max_examples=N)
@given(well_typed_modules())
def test_preservation(program: Program) -> None:
    typed = infer(program.module)
    main_type = typed["main"].checked_type
    assert isinstance(main_type, FuncType)
    try:
        value = evaluate(program.module, *program.inputs, fuel=ORACLE_FUEL)
    except RelayRuntimeError:
        reject()  # a documented trap (test_progress checks which): no value to type
    assert value_has_type(value, main_type.ret_type, program.module), (value, program)


@settings(max_examples=N)
@given(well_typed_modules())
def test_determinism(program: Program) -> None:
    outcomes = []
    for _ in range(2):
        try:
            outcomes.append(("value", evaluate(program.module, *program.inputs,
                                               fuel=ORACLE_FUEL)))
        except RelayRuntimeError as err:
            outcomes.append(("error", err.message))
    (k1, v1), (k2, v2) = outcomes
    assert k1 == k2, outcomes
    if k1 == "error":
        assert v1 == v2
    else:
        equal, why = values_equal(v1, v2, exact_floats=True)
        assert equal, why
