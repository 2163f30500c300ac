"""Every registered pass preserves meaning: differential tests against the oracle.

Each pass (and the ``optimize`` pipelines) runs through
``conformance.assert_equivalent`` on generated well-typed programs — the
default mix, and a mix with effects and sharing turned up so that a pass that
drops or reorders an effect, or merges what it must not, is caught. The list
of passes is read from the registry, so a new pass is covered (or fails here)
the moment it is registered.
"""

from __future__ import annotations

import pytest

import passes
from conformance import assert_equivalent
from conformance.strategies.programs import ProgramConfig

EFFECTFUL = ProgramConfig(effects=3, max_let_chain=4)
ALL_PASSES = passes.list_passes()


@pytest.mark.parametrize("pass_", ALL_PASSES, ids=[p.func_name for p in ALL_PASSES])
def test_pass_preserves_meaning(pass_):
    assert_equivalent(pass_, max_examples=60, name=pass_.name)


@pytest.mark.parametrize("pass_", ALL_PASSES, ids=[p.func_name for p in ALL_PASSES])
def test_pass_preserves_effects(pass_):
    assert_equivalent(pass_, max_examples=30, config=EFFECTFUL, name=pass_.name)


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_optimize_preserves_meaning(level):
    assert_equivalent(lambda m: passes.optimize(m, level), max_examples=30, name=f"-O{level}")


def test_every_pass_is_covered():
    # The registry knows each pass by TVM's name and by ours; both find the same object.
    for p in ALL_PASSES:
        assert passes.get_pass(p.name) is passes.get_pass(p.func_name) is p
    assert {p.func_name for p in ALL_PASSES} >= {
        "dead_code_elimination", "fold_constant", "eliminate_common_subexpr", "inline"}


def test_inlining_every_nonrecursive_global_preserves_meaning():
    # Generated programs carry no Inline attributes: mark every non-recursive global first.
    assert_equivalent(lambda m: passes.inline(passes.mark_inline(m)), max_examples=60,
                      name="inline(mark_inline)")
    assert_equivalent(lambda m: passes.inline(passes.mark_inline(m)), max_examples=30,
                      config=EFFECTFUL, name="inline(mark_inline)")
