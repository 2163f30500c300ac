"""``relay check FILE``: every global's type, or the error and exit status 1."""

from __future__ import annotations

from relay.cli import main

GOOD = """
def @main(%x: Tensor[(1, 10), float32], %w: Tensor[(20, 10), float32]) {
  nn.dense(%x, %w)
}
def @count(%l) { @length(%l) }
def @twice(%x: Tensor[(n, 3), float32]) { add(%x, %x) }
"""

BAD = """
def @main(%x: Tensor[(1, 10), float32]) -> Tensor[(1, 10), int32] {
  %x
}
"""


def test_check_prints_every_global(tmp_path, capsys):
    path = tmp_path / "good.relay"
    path.write_text(GOOD)
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "@main: fn (Tensor[(1, 10), float32], Tensor[(20, 10), float32]) -> "
        "Tensor[(1, 20), float32]",
        "@count: fn [A](List[A]) -> int32",
        "@twice: fn (Tensor[(n, 3), float32]) -> Tensor[(n, 3), float32]",
    ]


def test_check_lists_prelude_definitions_on_request(tmp_path, capsys):
    path = tmp_path / "good.relay"
    path.write_text(GOOD)
    assert main(["check", "--all", str(path)]) == 0
    out = capsys.readouterr().out
    assert "@length: fn [A](List[A]) -> int32" in out


def test_check_reports_a_type_error(tmp_path, capsys):
    path = tmp_path / "bad.relay"
    path.write_text(BAD)
    assert main(["check", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "bad.relay:2:44: error: type mismatch in Type-Function-Definition" in captured.err
    assert "Traceback" not in captured.err
