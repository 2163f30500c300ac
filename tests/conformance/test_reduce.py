"""The program reducer (:mod:`conformance.reduce`) never returns a bigger program.

Its size is the one a report prints (nodes, ADT definitions and input elements): a
sub-expression replaced by a parameter adds the parameter's value to the inputs, so the
replacement is kept only when the sub-expression was larger than that value (issue 31: a
``x + 0`` report grew from 159 to 314 when a closed sub-expression became a 150-element
input).
"""

from __future__ import annotations

import random
import time
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.reduce import program_size, reduce_program
from conformance.strategies.programs import ProgramConfig, well_typed_modules
from interpreter.entry import evaluate
from semantics import parse
from semantics.module import IRModule


def test_a_parameter_is_not_kept_when_its_input_is_bigger_than_the_expression() -> None:
    """The disagreement needs the ``sum`` at 200: only a parameter for its argument keeps it,
    and that parameter's 100-element input is more than the nodes it replaces, so it is not
    kept (``ones(...)`` may still become a constant of ones: one node fewer)."""
    mod = parse("def @main() { sum(multiply(ones(shape=[10, 10], dtype=\"float32\"), 2f)) }")

    def still_fails(cand: IRModule, args: tuple[Any, ...]) -> bool:
        try:
            return "sum(" in str(cand["main"]) and float(evaluate(cand, *args)) == 200.0
        except Exception:  # noqa: BLE001 - an ill-typed candidate does not fail the same way
            return False

    out, args = reduce_program(mod, (), still_fails, deadline=time.monotonic() + 30)
    assert program_size(out, args) <= program_size(mod, ())
    assert args == (), args


def test_a_parameter_is_kept_when_it_is_smaller() -> None:
    """A small value (two elements) replacing a bigger closed expression is kept."""
    text = ("def @main(%x: Tensor[(2,), float32]) { "
            "add(%x, multiply(add(ones(shape=[2], dtype=\"float32\"), 2f), 3f)) }")
    mod = parse(text)
    x = np.array([1, 2], np.float32)
    want = evaluate(mod, x)

    def still_fails(cand: IRModule, args: tuple[Any, ...]) -> bool:
        try:
            got = evaluate(cand, *args)
        except Exception:  # noqa: BLE001 - an ill-typed candidate does not fail the same way
            return False
        return bool(np.array_equal(got, want))

    out, args = reduce_program(mod, (x,), still_fails, deadline=time.monotonic() + 30)
    assert program_size(out, args) < program_size(mod, (x,))
    assert "multiply" not in str(out["main"])


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(program=well_typed_modules(ProgramConfig(max_depth=2, alternates=0)),
       seed=st.integers(0, 2**32 - 1), keep=st.sampled_from((0.2, 0.5, 0.9)))
def test_the_reducer_never_returns_a_bigger_program(program: Any, seed: int, keep: float
                                                    ) -> None:
    """Whatever the reducer is told survives (an arbitrary oracle), what it returns is no
    larger than what it was given, and is one of the candidates the oracle accepted."""
    rng = random.Random(seed)
    accepted: list[tuple[IRModule, tuple[Any, ...]]] = []

    def still_fails(cand: IRModule, args: tuple[Any, ...]) -> bool:
        if rng.random() < keep:
            accepted.append((cand, args))
            return True
        return False

    mod, inputs = program.module, tuple(program.inputs)
    out, args = reduce_program(mod, inputs, still_fails, deadline=time.monotonic() + 5)
    assert program_size(out, args) <= program_size(mod, inputs)
    assert (out is mod and args == inputs) or any(c is out for c, _ in accepted)
