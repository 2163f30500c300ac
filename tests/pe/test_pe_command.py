"""``relay pe FILE``: partially evaluate a file and print a program that re-parses and runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from interpreter import evaluate
from relay.cli import main
from semantics import parse

SOURCE = """
def @main(%x: float32) {
  let %r = ref(%x);
  let %f = fn (%y: float32) { %y * 3f };
  %r := %f(!%r) + (1f + 1f);
  !%r
}
"""


def test_relay_pe_prints_the_residual_program(tmp_path: Path, capsys):
    path = tmp_path / "prog.relay"
    path.write_text(SOURCE, encoding="utf-8")
    assert main(["pe", str(path)]) == 0
    out = capsys.readouterr().out
    assert "ref" not in out and "fn (%y" not in out
    mod = parse(out)
    assert float(evaluate(mod, np.float32(2))) == float(evaluate(parse(SOURCE), np.float32(2)))


def test_relay_pe_without_dce_keeps_the_effects(tmp_path: Path, capsys):
    path = tmp_path / "prog.relay"
    path.write_text(SOURCE, encoding="utf-8")
    assert main(["pe", str(path), "--no-dce", "--fuel", "0"]) == 0
    out = capsys.readouterr().out
    assert "ref_write" in out
    assert float(evaluate(parse(out), np.float32(2))) == 8.0


def test_relay_pe_reports_type_errors_as_user_errors(tmp_path: Path, capsys):
    path = tmp_path / "bad.relay"
    path.write_text("def @main(%x: float32) { %x + 1 }", encoding="utf-8")
    assert main(["pe", str(path)]) == 1
    err = capsys.readouterr().err
    assert "bad.relay:1:" in err and "Traceback" not in err


def test_relay_pe_rejects_a_negative_fuel(tmp_path: Path, capsys):
    path = tmp_path / "prog.relay"
    path.write_text(SOURCE, encoding="utf-8")
    with pytest.raises(SystemExit) as exit_:
        main(["pe", str(path), "--fuel", "-1"])
    assert exit_.value.code == 2
    assert "non-negative integer" in capsys.readouterr().err
