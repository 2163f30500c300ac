"""The three executors against the oracle on generated programs (issue 14 "What must be shown").

``conformance.assert_equivalent`` draws well-typed modules with inputs, runs the oracle
(``interpreter.evaluate``) and ``backends.tvm.build(module, executor=...)`` on them and
compares the outcomes (float tolerances by dtype, integers exactly; traps must agree).
The VM and AoT run the whole generator (closures, ADTs, ``match``, references,
recursion, sharing); the graph executor runs its first-order dataflow subset.
"""

from __future__ import annotations

import pytest

pytest.importorskip("tvm", reason="the TVM backend needs apache-tvm (extra `tvm`)")

from backends.tvm import build  # noqa: E402
from conformance import ProgramConfig, assert_equivalent  # noqa: E402

GRAPH_SUBSET = ProgramConfig().with_features("let", "tuple", "op", "sharing")


@pytest.mark.parametrize("opt_level", [0, 3])
def test_vm_agrees_with_the_oracle(opt_level):
    assert_equivalent(lambda mod: build(mod, opt_level=opt_level, executor="vm"),
                      max_examples=25, name=f"tvm-vm-O{opt_level}")


@pytest.mark.parametrize("opt_level", [0, 3])
def test_aot_agrees_with_the_oracle(opt_level):
    assert_equivalent(lambda mod: build(mod, opt_level=opt_level, executor="aot"),
                      max_examples=20, name=f"tvm-aot-O{opt_level}")


@pytest.mark.parametrize("opt_level", [0, 3])
def test_graph_executor_agrees_with_the_oracle_on_dataflow_programs(opt_level):
    assert_equivalent(lambda mod: build(mod, opt_level=opt_level, executor="graph"),
                      config=GRAPH_SUBSET, max_examples=20, name=f"tvm-graph-O{opt_level}")


def test_vm_agrees_on_programs_rich_in_closures_adts_and_references():
    config = ProgramConfig(max_depth=3, effects=2).with_features(
        "let", "if", "tuple", "closure", "higher_order", "global", "adt", "match", "ref", "op",
        "recursion", "let_rec", "sharing")
    assert_equivalent(lambda mod: build(mod, executor="vm"), config=config, max_examples=20,
                      name="tvm-vm-rich")
    assert_equivalent(lambda mod: build(mod, executor="aot"), config=config, max_examples=20,
                      name="tvm-aot-rich")


def test_vm_agrees_in_float_mode():
    assert_equivalent(lambda mod: build(mod, executor="vm"),
                      config=ProgramConfig(float_mode=True), max_examples=15,
                      name="tvm-vm-float")
