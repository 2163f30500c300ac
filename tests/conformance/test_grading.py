"""Grading with the kit (issue 31): a pass by name, fast minimal reports, JSON and Gradescope.

* ``relay conformance --pass MODULE:FUNCTION`` / ``--pass file.py:FUNCTION`` loads any
  callable; a bad spec is a usage error (exit 2) with a clear message;
* a pass that raises is reported as "your pass raised", with its traceback;
* the reducer (:mod:`conformance.reduce`) cuts unused globals, ADTs and result components;
* reports print small inputs as literals, name the first differing element with its bits,
  and compare signed zeros exactly;
* ``--json`` / ``--gradescope`` write the per-check results.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from conformance import assert_equivalent
from conformance.harness import Disagreement, check_program, reduce_disagreement
from conformance.mutants import get_mutant
from conformance.report import bits, first_difference, numpy_literal
from conformance.transforms import TransformLoadError, load_transform
from interpreter.values import compare_values
from relay.cli import main as relay_main
from semantics import parse
from semantics.module import IRModule

ROOT = Path(__file__).resolve().parents[2]
SOLUTION = ROOT / "examples" / "assignments" / "simplifier_solution.py"
SLIPS = ROOT / "examples" / "assignments" / "slips.py"
STARTER = ROOT / "examples" / "assignments" / "simplifier_starter.py"


def test_signed_zeros_and_nan_are_compared_exactly_by_default() -> None:
    z = np.array([0.0], np.float32)
    nz = np.array([-0.0], np.float32)
    assert not compare_values(z, nz)[0]
    assert "sign of zero" in compare_values(z, nz)[1]
    assert compare_values(np.array([np.nan], np.float32), np.array([np.nan], np.float32))[0]
    assert compare_values(np.float32(1.0), np.float32(1.0 + 1e-7))[0]   # tolerance stays


def test_report_helpers() -> None:
    assert bits(np.float32(-0.0)) == "0x80000000"
    assert bits(np.float16(1.0)) == "0x3c00"
    lit = numpy_literal(np.array([[-0.0, np.nan], [np.inf, 1.5]], np.float32))
    again = eval(lit, {"np": np})  # noqa: S307 - our own literal, checked to round-trip
    assert again.dtype == np.float32 and np.signbit(again[0, 0]) and np.isnan(again[0, 1])
    diff = first_difference((np.int32(1), np.array([1.0, 0.0], np.float32)),
                            (np.int32(1), np.array([1.0, -0.0], np.float32)))
    assert diff == "result.1[1]: expected 0.0f (bits 0x00000000), got -0.0f (bits 0x80000000)"


def test_a_student_slip_is_reported_small_and_fast() -> None:
    """``x - x -> 0`` (wrong at NaN and ±inf): found, shrunk and reduced within the budget
    (no wall-time assertion: times are measured in docs/assignments.md, not tested)."""
    with pytest.raises(Disagreement) as info:
        assert_equivalent(get_mutant("x - x -> 0"), max_examples=300, seed=1, shrink_time=8)
    d = info.value
    message = str(d)
    assert "--- first differing element ---" in message, message
    assert "bits 0x" in message
    main_text = d.program_text().split("def @main", 1)[1]
    assert main_text.count("\n") < 12, message
    assert "type " not in d.program_text().split("def @main", 1)[0]   # ADTs dropped


def test_the_reducer_drops_what_does_not_matter() -> None:
    text = """
    type Unused { UA, UB(int32) }
    def @unused(%a: int32) -> int32 { add(%a, 1) }
    def @main(%x: Tensor[(3,), float32], %y: int32) {
      let %a = add(%x, 0f);
      let %b = multiply(%y, 2);
      (%b, %a, @unused(%y))
    }
    """
    mod = parse(text)
    inputs = (np.array([-0.0, 1, 2], np.float32), np.int32(3))
    slip = get_mutant("x + 0 -> x")
    with pytest.raises(Disagreement) as info:
        check_program(slip, mod, inputs)
    small = reduce_disagreement(slip, info.value, deadline=time.monotonic() + 30)
    assert set(small.module.functions) == {"main"} and not small.module.types
    body = small.program_text().split("def @main", 1)[1]
    assert "multiply" not in body and "add(" in body, body
    assert small.kind == "value"


def test_your_pass_raised_shows_the_traceback() -> None:
    def student_pass(mod: IRModule) -> IRModule:
        return helper(mod)

    def helper(mod: IRModule) -> IRModule:
        raise ZeroDivisionError("oops in helper")

    with pytest.raises(Disagreement) as info:
        assert_equivalent(student_pass, max_examples=5, seed=0, shrink_time=3)
    message = str(info.value)
    assert message.startswith("your pass raised ZeroDivisionError: oops in helper")
    assert "--- your pass raised (traceback) ---" in message
    assert "in helper" in message and "def @main" in message


def test_load_transform_by_file_and_module(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    t = load_transform(f"{SOLUTION}:simplify")
    assert callable(t) and "simplif" in t.doc.lower()
    (tmp_path / "student_mod.py").write_text(
        "def ident(mod):\n    return mod\nVALUE = 3\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert load_transform("student_mod:ident").fn.__name__ == "ident"
    for spec, words in [("student_mod:nope", "no attribute 'nope'"),
                        ("student_mod:VALUE", "not a callable"),
                        ("no_such_module_xyz:f", "no module named"),
                        (f"{tmp_path}/missing.py:f", "no such file")]:
        with pytest.raises(TransformLoadError, match=words):
            load_transform(spec)
    (tmp_path / "broken.py").write_text("raise RuntimeError('at import')\n")
    with pytest.raises(TransformLoadError, match="importing .* raised RuntimeError"):
        load_transform(f"{tmp_path}/broken.py:f")


def test_cli_accepts_the_solution_and_writes_json_and_gradescope(tmp_path: Path,
                                                                 capsys) -> None:  # type: ignore[no-untyped-def]
    out, grade = tmp_path / "report.json", tmp_path / "results.json"
    code = relay_main(["conformance", "--pass", f"{SOLUTION}:simplify", "--pass",
                       f"{STARTER}:simplify", "--max-examples", "15", "--json", str(out),
                       "--gradescope", str(grade)])
    assert code == 0, capsys.readouterr().out
    report = json.loads(out.read_text())
    assert report["ok"] and report["passed"] == 2 and report["checks"][0]["status"] == "pass"
    results = json.loads(grade.read_text())
    assert results["score"] == 2 and results["max_score"] == 2
    assert {t["status"] for t in results["tests"]} == {"passed"}


def test_cli_reports_a_slip_with_exit_1_and_a_counterexample(tmp_path: Path,
                                                             capsys) -> None:  # type: ignore[no-untyped-def]
    out, grade = tmp_path / "report.json", tmp_path / "results.json"
    code = relay_main(["conformance", "--pass", f"{SLIPS}:x_times_one", "--max-examples",
                       "300", "--seed", "1", "--shrink-time", "6", "--json", str(out),
                       "--gradescope", str(grade)])
    printed = capsys.readouterr().out
    assert code == 1, printed
    check = json.loads(out.read_text())["checks"][0]
    assert check["status"] == "fail" and check["seconds"] > 0
    ce = check["counterexample"]
    assert "def @main" in ce["program"] and ce["expected"] and ce["got"]
    results = json.loads(grade.read_text())
    assert results["score"] == 0 and results["tests"][0]["status"] == "failed"
    assert "def @main" in results["tests"][0]["output"]


def test_cli_bad_pass_spec_is_a_usage_error(capsys) -> None:  # type: ignore[no-untyped-def]
    assert relay_main(["conformance", "--pass", "/no/such/file.py:f"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert relay_main(["conformance", "--pass", "identity", "--shrink-time", "-1"]) == 2
