"""The differential harness: good transforms pass, wrong ones fail with Relay counterexamples."""

from __future__ import annotations

import numpy as np
import pytest

from conformance import assert_equivalent
from conformance.harness import check_program
from conformance.strategies.programs import ProgramConfig
from conformance.transforms import get_transform, list_transforms, register_transform
from interpreter import evaluate
from semantics import parse
from semantics.errors import RelayTypeError
from semantics.module import IRModule

ADD = """
def @main(%x: int32, %y: int32) -> int32 {
  add(%x, %y)
}
"""
DIV = """
def @main(%x: int32) -> int32 {
  divide(10, %x)
}
"""
LIST = """
def @main(%n: int32) -> List[int32] {
  Cons(%n, Cons(add(%n, 1), Nil))
}
"""


def test_builtin_transforms_are_registered() -> None:
    names = [t.name for t in list_transforms()]
    assert "identity" in names and "print_parse" in names
    with pytest.raises(KeyError, match="unknown transform"):
        get_transform("no_such_pass")
    with pytest.raises(ValueError):
        register_transform("identity")(lambda m: m)


@pytest.mark.parametrize("name", ["identity", "print_parse"])
def test_builtin_transforms_agree_with_the_oracle(name: str) -> None:
    assert_equivalent(get_transform(name), max_examples=60)


def test_float_mode_programs_agree() -> None:
    assert_equivalent(get_transform("print_parse"), config=ProgramConfig(float_mode=True),
                      max_examples=30)


def test_explicit_programs_with_inputs() -> None:
    programs = [(ADD, (np.int32(2), np.int32(3))), (parse(LIST), (np.int32(4),)),
                (DIV, (np.int32(0),)), (DIV, (np.int32(3),))]
    assert_equivalent(get_transform("print_parse"), programs=programs)


def test_explicit_program_disagreement_is_reported_with_text_and_inputs() -> None:
    def wrong(mod: IRModule) -> IRModule:
        return parse(ADD.replace("add", "multiply"))

    with pytest.raises(AssertionError) as info:
        assert_equivalent(wrong, programs=[(ADD, (np.int32(2), np.int32(3)))])
    msg = str(info.value)
    assert "def @main(%x: int32, %y: int32)" in msg and "add(%x, %y)" in msg
    assert "%x = 2" in msg and "%y = 3" in msg
    assert "oracle (interpreter.evaluate) ---\n  5" in msg
    assert "transform ---\n  6" in msg
    assert "multiply" in msg  # the transformed program is shown too


def test_a_trap_must_be_matched_by_a_trap() -> None:
    def no_trap(mod: IRModule):  # type: ignore[no-untyped-def]
        return lambda x: np.int32(0)

    with pytest.raises(AssertionError, match="RelayRuntimeError: division by zero"):
        assert_equivalent(no_trap, programs=[(DIV, (np.int32(0),))])


def test_backend_callables_are_supported() -> None:
    def backend(mod: IRModule):  # type: ignore[no-untyped-def]
        return lambda *args: evaluate(mod, *args)

    assert_equivalent(backend, max_examples=30)

    def wrong_dtype(mod: IRModule):  # type: ignore[no-untyped-def]
        return lambda x, y: np.int64(x + y)

    with pytest.raises(AssertionError, match="dtype int32 vs int64"):
        assert_equivalent(wrong_dtype, programs=[(ADD, (np.int32(1), np.int32(1)))])


def test_a_crashing_transform_is_a_failure() -> None:
    def crash(mod: IRModule) -> IRModule:
        raise ValueError("boom")

    with pytest.raises(AssertionError,
                       match="your pass raised ValueError: boom .*crashed with ValueError"):
        assert_equivalent(crash, programs=[(ADD, (1, 2))])


def test_relay_errors_from_the_transform_fail_unless_allowed() -> None:
    def declines(mod: IRModule) -> IRModule:
        raise RelayTypeError("unsupported")

    with pytest.raises(AssertionError, match="raised RelayTypeError on a well-typed program"):
        assert_equivalent(declines, programs=[(ADD, (1, 2))])
    assert_equivalent(declines, programs=[(ADD, (1, 2))], allow_errors=True)


def test_ill_typed_explicit_programs_are_rejected() -> None:
    bad = "def @main(%x: int32) -> float32 { %x }"
    with pytest.raises(AssertionError, match="programs must be well typed"):
        check_program(lambda m: m, parse(bad), (np.int32(1),))


def test_generated_counterexamples_are_shrunk_relay_text() -> None:
    def drop_main_result(mod: IRModule):  # type: ignore[no-untyped-def]
        return lambda *args: ()

    small = ProgramConfig(max_depth=1, max_globals=1, max_adts=1)
    with pytest.raises(AssertionError) as info:
        assert_equivalent(drop_main_result, config=small, max_examples=20, shrink_time=None)
    msg = str(info.value)
    assert "def @main" in msg and "--- inputs ---" in msg
    program = msg.split("def @main", 1)[1].split("\n---", 1)[0]   # up to the report's sections
    assert len(program.splitlines()) < 15


def test_a_program_returned_unchanged_is_not_run_again() -> None:
    """A transform that returns its input, or a module equal to it up to bound names, is
    accepted without running it (the oracle is deterministic); any other module is run."""
    from conformance.harness import _unchanged

    mod = parse(ADD)
    again = parse(ADD.replace("%x", "%a").replace("%y", "%b"))
    assert _unchanged(mod, mod) and _unchanged(again, mod)
    assert not _unchanged(parse(ADD.replace("add", "subtract")), mod)
    assert not _unchanged(lambda *args: 0, mod)
    runs: list[int] = []

    def run(x: np.int32, y: np.int32) -> np.int32:
        runs.append(1)
        return np.int32(x + y)

    def backend(m: IRModule) -> object:
        return run

    check_program(lambda m: again, mod, (np.int32(1), np.int32(2)))
    check_program(backend, mod, (np.int32(1), np.int32(2)))
    assert runs == [1]
    with pytest.raises(AssertionError, match="different value"):
        check_program(lambda m: parse(ADD.replace("add", "subtract")), mod,
                      (np.int32(1), np.int32(2)))


def test_hypothesis_shrinking_stops_when_it_stalls(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shrink clock: Hypothesis's shrinking stops after its budget, or after ``stall``
    seconds without a smaller counterexample; every smaller one restarts the stall clock."""
    from conformance.harness import Disagreement, _Search, _ShrinkBudgetSpent

    clock = [100.0]
    monkeypatch.setattr("conformance.harness.time.monotonic", lambda: clock[0])

    def failure(text: str) -> Disagreement:
        return Disagreement("differs", "value", parse(text), (), None, None, None)  # type: ignore[arg-type]

    search = _Search(10.0, stall=3.0)
    search.tick()                                   # nothing found yet: no clock
    search.record(failure(LIST))
    clock[0] += 2.5
    search.tick()
    search.record(failure(ADD))                     # smaller: progress
    clock[0] += 2.5
    search.tick()
    search.record(failure(LIST))                    # larger: no progress
    clock[0] += 1.0
    with pytest.raises(_ShrinkBudgetSpent):
        search.tick()
    assert "no smaller one" in search.stop_reason
    budget = _Search(4.0, stall=3.0)
    budget.record(failure(LIST))
    for _ in range(3):
        clock[0] += 1.5
        budget.record(failure(ADD if _ == 0 else DIV if _ == 1 else "def @main() { 1 }"))
    with pytest.raises(_ShrinkBudgetSpent):
        budget.tick()
    assert "time budget" in budget.stop_reason
