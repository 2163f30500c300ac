"""Mutation check of the harness itself: deliberately wrong transforms must be CAUGHT.

Each mutant is a transform ``IRModule -> IRModule`` that breaks meaning in one
specific way; ``assert_equivalent`` must raise ``AssertionError`` whose message
holds the shrunk counterexample as Relay text (a ``def @main`` definition), its
inputs and both outcomes. Where a mutation needs particular constructs to be
observable, the generator is restricted to them (targeted generation).

The mutation benchmark (:mod:`conformance.mutants`): every registered mutant is
non-equivalent (its witness program tells it apart from the oracle), and the
default generator catches at least :data:`SCORE_BAR` of them within
:data:`SCORE_EXAMPLES` programs of a fixed seed (``bench/kit_power.py`` prints
the full table at 300 programs).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pytest

from conformance import assert_equivalent
from conformance.mutants import all_mutants
from conformance.mutants.core import Mutant, call_op
from conformance.mutants.power import hunt, mutation_score, sample_programs
from conformance.strategies.programs import ProgramConfig
from semantics.expr import Call, Constant, Expr, Let, Op, RefWrite, Tuple
from semantics.module import IRModule
from semantics.visitor import ExprMutator


def _map_functions(mod: IRModule, make: Callable[[], ExprMutator]) -> IRModule:
    return mod.with_functions({name: make().mutate(fn)  # type: ignore[misc]
                               for name, fn in mod.functions.items()})


class _SwapAddSubtract(ExprMutator):
    def visit_call(self, new: Expr, old: Expr) -> Expr:
        assert isinstance(new, Call)
        swap = {"add": "subtract", "subtract": "add"}
        if isinstance(new.op, Op) and new.op.name in swap:
            return Call(Op(swap[new.op.name]), new.args, new.attrs)
        return new


class _DropFirstRefWrite(ExprMutator):
    def __init__(self) -> None:
        self.done = False

    def visit_ref_write(self, new: Expr, old: Expr) -> Expr:
        if self.done:
            return new
        self.done = True
        return Tuple(())


class _SwapFirstTwoEffects(ExprMutator):
    """``e1; e2; rest`` (two effectful sequenced expressions) becomes ``e2; e1; rest``."""

    def __init__(self) -> None:
        self.done = False

    def visit_let(self, new: Expr, old: Expr) -> Expr:
        assert isinstance(new, Let)
        inner = new.body
        if self.done or new.var.name_hint != "_" or not isinstance(inner, Let) or \
                inner.var.name_hint != "_":
            return new
        if not (isinstance(new.value, RefWrite) and isinstance(inner.value, RefWrite)):
            return new
        self.done = True
        return Let(new.var, inner.value, Let(inner.var, new.value, inner.body))


class _OffByOneConstant(ExprMutator):
    def __init__(self) -> None:
        self.done = False

    def visit_constant(self, new: Expr, old: Expr) -> Expr:
        assert isinstance(new, Constant)
        if self.done or new.data.dtype != np.int32 or new.data.ndim != 0:
            return new
        self.done = True
        return Constant(np.array(int(new.data) + 1, dtype=np.int32))


def swap_add_subtract(mod: IRModule) -> IRModule:
    return _map_functions(mod, _SwapAddSubtract)


def drop_ref_write(mod: IRModule) -> IRModule:
    return _map_functions(mod, _DropFirstRefWrite)


def reorder_effects(mod: IRModule) -> IRModule:
    return _map_functions(mod, _SwapFirstTwoEffects)


def off_by_one(mod: IRModule) -> IRModule:
    return mod.with_function("main", _OffByOneConstant().mutate(mod["main"]))  # type: ignore


# Targeted generation: the constructs each mutation touches, made observable.
EFFECTS = ProgramConfig(dtypes=("int32",), max_adts=0, max_globals=0, min_op_bindings=0,
                        effects=2).with_features("let", "ref", "tuple", "op")

MUTANTS = [
    ("swap add/subtract", swap_add_subtract,
     ProgramConfig(dtypes=("int32", "int64"), max_globals=1, max_adts=1)),
    ("drop a ref_write", drop_ref_write, EFFECTS),
    ("reorder two effects", reorder_effects, EFFECTS),
    ("off-by-one constant", off_by_one, ProgramConfig(dtypes=("int32",))),
]


@pytest.mark.parametrize("label, mutant, config", MUTANTS, ids=[m[0] for m in MUTANTS])
def test_mutant_is_caught_with_a_relay_counterexample(label: str, mutant, config) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(AssertionError) as info:
        assert_equivalent(mutant, config=config, max_examples=300, name=label)
    message = str(info.value)
    assert f"transform {label}" in message
    assert "--- program (Relay text) ---" in message and "def @main" in message
    assert "--- oracle (interpreter.evaluate) ---" in message
    assert "--- transform ---" in message
    main_text = message.split("def @main", 1)[1]
    # Shrunk: a small program (the bound leaves room for seeds whose minimum is a few lines longer).
    assert main_text.count("\n") < 60, message


# --- the mutation benchmark --------------------------------------------------------------------

ALL_MUTANTS = all_mutants()
SCORE_EXAMPLES = 100
SCORE_SEED = 1
# Measured: 51 of 56 caught within 100 programs of seed 1 (42 before the edge probes, the
# IEEE-heavy alternate inputs and the other generator changes of the kit-power work; 26 and 34
# before issue 19 §2's first generator changes). At 300 programs, bench/kit_power.py catches
# 55 of 56 on each of seeds 0-4. The bar leaves room for changes of the operator registry and
# the call strategies (they shift every later draw of the fixed-seed sample): when the pool
# strategies began to draw blocked layouts, seed 1 fell to 48 in a process of its own and 47
# inside the full suite (in an xdist worker), while the mean over seeds 0-4 at 100 programs
# rose from 47.8 to 49.8 (46-52 per seed before, 48-52 after).
SCORE_BAR = 46


def test_at_least_forty_mutants_in_every_family() -> None:
    assert len(ALL_MUTANTS) >= 40
    assert len({m.name for m in ALL_MUTANTS}) == len(ALL_MUTANTS)
    assert {m.category for m in ALL_MUTANTS} == {"operator", "special-value", "structural",
                                                 "type-level"}


@pytest.mark.parametrize("mutant", ALL_MUTANTS, ids=[m.name for m in ALL_MUTANTS])
def test_mutant_is_not_equivalent(mutant: Mutant) -> None:
    """The witness program is well typed and the mutant changes its outcome."""
    text, inputs = mutant.witness
    assert_equivalent(lambda m: m, programs=[(text, inputs)])   # well typed, runs
    with pytest.raises(AssertionError, match=re.escape(f"transform {mutant.name}")):
        assert_equivalent(mutant, programs=[(text, inputs)], name=mutant.name)


# The simplifier slips of issue 31 §3. At 300 programs bench/kit_power.py catches every one
# on each of seeds 0-4 (the latest: x + 0 -> x at 110 programs of seed 1); this
# 100-program sample of seed 1 (not the first 100 of the 300-program one) caught six of the
# seven when measured (``x / x -> 1`` not), so one may be missed here.
STUDENT_SLIPS = ("x + 0 -> x", "x * 1 -> x (broadcast)", "x - x -> 0", "x / x -> 1",
                 "clip bounds swapped", "max_pool2d as avg_pool2d",
                 "CSE merges two ref allocations")


def test_mutation_score_of_the_default_generator() -> None:
    sample = sample_programs(SCORE_EXAMPLES, seed=SCORE_SEED)
    _, kills = mutation_score(ALL_MUTANTS, sample)
    caught = [k.name for k in kills if k.caught]
    missed = [k.name for k in kills if not k.caught]
    assert len(caught) >= SCORE_BAR, f"caught {len(caught)}/{len(kills)}; missed: {missed}"
    assert not [(k.name, k.crash) for k in kills if k.crashes]       # no mutant is broken
    slips_missed = [name for name in STUDENT_SLIPS if name not in caught]
    assert len(slips_missed) <= 1, f"student slips not caught: {slips_missed}"


def test_a_mutant_that_raises_is_counted_apart_not_caught() -> None:
    """A broken mutant (the pass itself raises) is not a catch: the hunt counts the
    programs it crashed on and keeps the first message."""

    def broken(mod: IRModule) -> IRModule:
        raise ValueError("no site handling")

    sample = sample_programs(3, seed=0)
    kill = hunt(Mutant("broken", "operator", "raises", broken), sample)
    assert not kill.caught and kill.examples is None
    assert kill.crashes == 3 and "ValueError: no site handling" in kill.crash


def test_strided_slice_off_by_one_shifts_a_missing_begin() -> None:
    """``begin=[None]`` (from the first element) becomes ``begin=[1]``: a wrong window, not
    a crash of the mutant; with a negative stride a missing begin is no site."""
    from interpreter.entry import evaluate
    from semantics.expr import Function, Var
    from semantics.types import TensorType

    slip = next(m for m in ALL_MUTANTS if m.name == "strided_slice off by one")
    x = Var("x", TensorType((5,), "float32"))
    data = np.arange(5, dtype=np.float32)
    for attrs, want in (({"begin": [None], "end": [3]}, [1, 2, 3]),
                        ({"begin": [None], "end": [-1], "strides": [2]}, [1, 3])):
        mod = IRModule({"main": Function((x,), call_op("strided_slice", x, **attrs))}, {})
        assert evaluate(slip(mod), data).tolist() == want
    mod = IRModule({"main": Function((x,), call_op("strided_slice", x, begin=[None],
                                                   end=[None], strides=[-1]))}, {})
    assert slip(mod) is mod
