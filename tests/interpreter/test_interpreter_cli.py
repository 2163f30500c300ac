"""``relay run``: arguments, printing, --entry, --fuel, --trace, errors (exit 1, no traceback)."""

from __future__ import annotations

import numpy as np
import pytest

from relay.cli import main

PROGRAM = """
def @fact(%n: int32) -> int32 { if (%n <= 1) { 1 } else { %n * @fact(%n - 1) } }
def @main(%x: Tensor[(2), float32], %p: (int32, bool), %xs: List[int32]) {
  (add(%x, %x), %p.1, @length(%xs), @fact(%p.0))
}
def @closure() -> fn (int32) -> int32 { fn (%y: int32) -> int32 { %y } }
def @reference() -> Ref[int32] { ref(5) }
def @div(%a: int32, %b: int32) -> int32 { %a / %b }
def @loop(%i: int32) -> int32 { @loop(%i + 1) }
"""


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "prog.relay"
    path.write_text(PROGRAM, encoding="utf-8")
    return str(path)


def relay(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_run_with_json_arguments(program, capsys):
    code, out, err = relay(capsys, "run", program, "[1.5, 2]", "[4, true]",
                           '{"Cons": [1, {"Cons": [2, {"Nil": []}]}]}')
    assert (code, err) == (0, "")
    assert out == "(array([3., 4.], dtype=float32), True, 2, 24)\n"


def test_run_with_npy_argument(program, capsys, tmp_path):
    npy = tmp_path / "x.npy"
    np.save(npy, np.array([0.5, 1.0], dtype=np.float32))
    code, out, _ = relay(capsys, "run", program, str(npy), "[1, false]", '{"Nil": []}')
    assert code == 0
    assert out.startswith("(array([1., 2.], dtype=float32), False, 0, 1)")


def test_entry_and_value_forms(program, capsys):
    assert relay(capsys, "run", program, "5", "--entry", "fact")[1] == "120\n"
    assert relay(capsys, "run", program, "--entry", "closure")[1] == "<closure>\n"
    assert relay(capsys, "run", program, "--entry", "reference")[1] == "ref(5)\n"


def test_runtime_error_exits_1_with_message(program, capsys):
    code, out, err = relay(capsys, "run", program, "1", "0", "--entry", "div")
    assert code == 1 and out == ""
    assert "error: division by zero" in err and "Traceback" not in err
    assert err.startswith(program + ":8:43: error: division by zero")


def test_argument_errors(program, capsys):
    code, _, err = relay(capsys, "run", program, "1", "2", "--entry", "fact")
    assert code == 1 and "wrong number of arguments: @fact expects 1, got 2" in err
    code, _, err = relay(capsys, "run", program, "not json", "--entry", "fact")
    assert code == 1 and "argument 1: 'not json' is neither a .npy file nor a JSON literal" in err
    code, _, err = relay(capsys, "run", program, "1.5", "--entry", "fact")
    assert code == 1 and "argument %n: expected int32" in err
    code, _, err = relay(capsys, "run", program, "missing.npy", "--entry", "fact")
    assert code == 1 and "Traceback" not in err


def test_fuel(program, capsys):
    code, _, err = relay(capsys, "run", program, "0", "--entry", "loop", "--fuel", "500")
    assert code == 1 and "out of fuel" in err


def test_trace_prints_the_derivation(program, capsys):
    code, out, _ = relay(capsys, "run", program, "2", "--entry", "fact", "--trace")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "[Semantics-Call] @fact(2) ⇓ 2"
    assert lines[1] == "  [Semantics-Global] @fact"
    assert lines[2].startswith("  [Semantics-If-False] if (less_equal(%n, 1)) { 1 } else")
    assert "    [Semantics-Call-Op] less_equal(%n, 1) ⇓ False" in lines
    assert "      [Semantics-Id] %n ⇓ 2" in lines
    assert lines[-1] == "2"


def test_trace_on_error_shows_the_open_judgments(program, capsys):
    code, out, err = relay(capsys, "run", program, "1", "0", "--entry", "div", "--trace")
    assert code == 1
    assert out.splitlines()[0].endswith("⇓ (error)")
    assert "division by zero" in err


def test_no_check(tmp_path, capsys):
    path = tmp_path / "bad.relay"
    path.write_text("def @main() -> int32 {\n  free_var %nope: int32;\n"
                    "  if (True) { 1 } else { %nope }\n}\n", encoding="utf-8")
    code, _, err = relay(capsys, "run", str(path))
    assert code == 1 and "unbound variable %nope" in err
    assert relay(capsys, "run", str(path), "--no-check")[:2] == (0, "1\n")
