"""``relay opt``: levels, explicit passes, timing table, errors."""

from __future__ import annotations

import pytest

from relay.cli import main
from semantics import alpha_equal, parse

SOURCE = """def @main(%x: int32) {
  let %a = 1 + 2;
  let %b = %x * %a;
  let %c = %x * 3;
  (%b, %c)
}
"""


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "prog.relay"
    path.write_text(SOURCE, encoding="utf-8")
    return str(path)


def test_opt_o3_prints_the_optimized_module(program, capsys):
    assert main(["opt", program, "-O3"]) == 0
    out = capsys.readouterr().out
    expected = parse("def @main(%x: int32) { "
                     "%0 = (fn (%p0: int32, Primitive=1) -> int32 { multiply(%p0, 3) })(%x); "
                     "let %b = %0; let %c = %0; (%b, %c) }")
    assert alpha_equal(parse(out), expected), out


def test_opt_o0_changes_nothing(program, capsys):
    assert main(["opt", program, "-O0"]) == 0
    assert alpha_equal(parse(capsys.readouterr().out), parse(SOURCE))


def test_opt_explicit_passes_and_timing(program, capsys):
    assert main(["opt", program, "--pass", "FoldConstant", "--pass", "dead_code_elimination",
                 "--time"]) == 0
    captured = capsys.readouterr()
    parse(captured.out)
    assert "FoldConstant" in captured.err and "DeadCodeElimination" in captured.err
    assert "total" in captured.err


def test_opt_unknown_pass_is_a_usage_error(program, capsys):
    assert main(["opt", program, "--pass", "Nope"]) == 2
    assert "unknown pass 'Nope'" in capsys.readouterr().err


def test_opt_ill_typed_input_is_a_user_error(tmp_path, capsys):
    bad = tmp_path / "bad.relay"
    bad.write_text("def @main() { add(1, 1f) }", encoding="utf-8")
    assert main(["opt", str(bad), "-O2"]) == 1
    assert "error:" in capsys.readouterr().err


def test_opt_list(capsys):
    assert main(["opt", "--list", "-"]) == 0
    assert "fold_constant" in capsys.readouterr().out


def test_conformance_command_checks_a_pass_by_either_name(capsys):
    assert main(["conformance", "--pass", "DeadCodeElimination", "--max-examples", "5"]) == 0
    assert "dead_code_elimination" in capsys.readouterr().out
    assert main(["conformance", "--list"]) == 0
    assert "fold_constant" in capsys.readouterr().out
    assert main(["conformance", "--pass", "NoSuchPass"]) == 2
