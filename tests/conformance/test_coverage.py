"""Rule and operator coverage of the generator (HOUSE_STYLE habit 11: rule coverage is a test).

Every ``Semantics-*`` rule of RULES.md except ``Semantics-Grad`` (AD is a later
issue) and every registered operator must be exercised by generated programs.
The per-operator report (argument kinds, value classes) is checked against an
elementwise reference classification and hand-written programs.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from conformance.coverage import classes_for_dtype, coverage, value_classes
from conformance.strategies.programs import well_typed_modules
from relay.cli import main
from semantics.ops import list_ops
from semantics.rules import EVALUATION_RULES


def test_generated_programs_cover_every_rule_and_operator() -> None:
    report = coverage(max_examples=200)
    assert report.rules_missing == [], str(report)
    assert report.rule_percent == 100.0
    assert report.ops_missing == [], str(report)
    assert report.op_percent == 100.0
    # Every operator but those the generator deliberately never calls (each with a reason).
    assert set(report.all_ops) | set(report.excluded_ops) == set(list_ops())
    assert set(report.excluded_ops) == {"memory.alloc_storage", "memory.alloc_tensor"}
    assert all(f"operator {o} excluded: " in str(report) for o in report.excluded_ops)
    assert set(report.all_rules) == {r.value for r in EVALUATION_RULES}
    assert "Semantics-Grad" in report.excluded
    text = str(report)
    assert "Semantics-Grad" in text and "excluded" in text
    assert "rules: 100.0%" in text and "operators: 100.0%" in text
    # The random programs alone already reach most operators.
    assert report.random_op_percent >= 50.0, text


# --- the per-operator report: argument kinds and value classes --------------------------------

def _reference_classes(x: Any, dtype: np.dtype) -> set[str]:
    """One element's value classes, computed with Python scalars (not numpy masks)."""
    if dtype.kind == "b":
        return {"true" if bool(x) else "false"}
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        v = int(x)
        out = {"neg" if v < 0 else "zero" if v == 0 else "pos"}
        if v == info.min and dtype.kind == "i":
            out.add("min")
        if v == info.max:
            out.add("max")
        return out
    f = float(x)
    if math.isnan(f):
        return {"nan"}
    if math.isinf(f):
        return {"+inf" if f > 0 else "-inf"}
    if f == 0:
        return {"-0.0" if math.copysign(1.0, f) < 0 else "zero"}
    if abs(f) < float(np.finfo(dtype).tiny):
        return {"denormal"}
    return {"neg" if f < 0 else "pos"}


DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
          "uint16", "uint32", "uint64", "bool"]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(DTYPES).flatmap(
    lambda dt: hnp.arrays(np.dtype(dt), hnp.array_shapes(min_dims=0, max_dims=2, min_side=0,
                                                         max_side=4))))
def test_value_classes_agree_with_an_elementwise_reference(arr: np.ndarray) -> None:
    expected: set[str] = set()
    for x in arr.reshape(-1):
        expected |= _reference_classes(x, arr.dtype)
    if arr.size == 0:
        expected = {"empty"}
    got = value_classes(arr)
    assert got == expected
    assert got <= set(classes_for_dtype(arr.dtype.name))


def test_value_classes_examples() -> None:
    f32 = np.array([-0.0, np.nan, np.inf, -np.inf, 1e-45, 2.0, -3.0, 0.0], dtype=np.float32)
    assert value_classes(f32) == set(classes_for_dtype("float32")) - {"empty"}
    assert value_classes(np.array([-128, 127], dtype=np.int8)) == {"neg", "pos", "min", "max"}
    assert value_classes(np.array([0, 255], dtype=np.uint8)) == {"zero", "pos", "max"}
    assert value_classes(np.zeros((0, 3), dtype=np.float64)) == {"empty"}
    assert value_classes(np.bool_(True)) == {"true"}
    assert value_classes(np.float64(1e-310)) == {"denormal"}


PROGRAM = """
def @main(%x: Tensor[(3,), float32], %t: (int8, int8)) {
  let %y = add(%x, 1f);
  let %z = multiply(%y, %x);
  (%z, add(%t.0, %t.1), concatenate((%x, %y)))
}
"""


def test_operator_profile_of_an_explicit_program() -> None:
    inputs = (np.array([-0.0, np.nan, np.inf], dtype=np.float32),
              (np.int8(-128), np.int8(127)))
    report = coverage(programs=[(PROGRAM, inputs)], focus=False, ops=["add", "multiply",
                                                                       "concatenate", "abs"])
    assert report.programs == 1 and report.outcomes["value"] == 1
    add = report.profiles["add"]
    assert add.calls == 2
    assert add.kinds[0] == {"var": 1, "proj": 1} and add.kinds[1] == {"const": 1, "proj": 1}
    assert add.classes["float32"] == {"-0.0", "nan", "+inf", "pos"}
    assert add.classes["int8"] == {"neg", "pos", "min", "max"}
    assert add.missing()["int8"] == ["zero", "empty"]
    mul = report.profiles["multiply"]
    assert mul.kinds == {0: {"var": 1}, 1: {"var": 1}}
    # concatenate takes a tuple: its kind is `tuple`, its tensors are opened for the classes.
    cat = report.profiles["concatenate"]
    assert cat.kinds == {0: {"tuple": 1}} and "nan" in cat.classes["float32"]
    assert "abs" not in report.profiles and report.ops_missing == ["abs"]
    table = report.operator_table()
    assert "add" in table and "0:var,proj 1:const,proj" in table
    assert "int8: neg pos min max [no zero empty]" in table
    assert "value classes: 0 of 3 called operators" in table


def test_every_class_seen_makes_an_operator_complete() -> None:
    program = "def @main(%x: Tensor[(7,), int8]) { negative(%x) }"
    full = np.array([-128, -1, 0, 1, 127, 5, 6], dtype=np.int8)
    empty_prog = "def @main(%x: Tensor[(0,), int8]) { negative(%x) }"
    report = coverage(programs=[(program, (full,)), (empty_prog, (np.zeros(0, np.int8),))],
                      focus=False, ops=["negative"])
    assert report.ops_complete == ["negative"], report.operator_table()
    assert "value classes: 1 of 1 called operators" in report.operator_table()


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(well_typed_modules())
def test_recorded_rule_counts_equal_traced_ones(program: Any) -> None:
    # The report observes evaluation through a Recorder; `trace` must see the same rules.
    from conformance.harness import ORACLE_FUEL, run_oracle

    traced: Counter[str] = Counter()
    run_oracle(program.module, program.inputs, fuel=ORACLE_FUEL, check=False,
               trace=lambda rule, node: traced.update([rule]))
    report = coverage(programs=[(program.module, program.inputs)], focus=False)
    assert +report.rules == +traced
    assert sum(p.calls for p in report.profiles.values()) == traced["Semantics-Call-Op"]


def test_cli_prints_the_operator_table(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["conformance", "--coverage", "--max-examples", "10"])
    out = capsys.readouterr().out
    assert code in (0, 1)
    assert code == (1 if "NOT COVERED" in out or "operators not covered" in out else 0)
    assert "argument kinds (position:kinds)" in out
    assert re.search(r"^add +\d+  0:", out, re.M), out
    assert re.search(r"value classes: \d+ of \d+ called operators", out)
