"""The command line as users meet it (issue 34): ``--version``, ``relay opt --list`` without a
file and its default level, ``relay run -o OUT.npy|.npz``, the printing of large tensors."""

from __future__ import annotations

import numpy as np
import pytest

from relay.cli import main
from relay.commands.run import ONE_LINE, result_str, save_result
from semantics import alpha_equal, parse
from semantics.errors import RelayRuntimeError

SOURCE = """def @main(%x: int32) {
  let %a = 1 + 2;
  let %b = %x * %a;
  let %c = %x * 3;
  (%b, %c)
}
"""

BIG = """def @main(%n: int32) {
  (arange(0f, 5000f, 1f), ones(shape=[2, 3], dtype="int32"))
}
"""


def relay(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("relay ") and out.strip() != "relay unknown"


def test_opt_list_needs_no_file(capsys):
    code, out, _ = relay(capsys, "opt", "--list")
    assert code == 0 and "fold_constant" in out and "O3" in out


def test_opt_without_a_file_is_a_usage_error(capsys):
    code, _, err = relay(capsys, "opt")
    assert code == 2 and "required: file" in err


def test_opt_default_level_is_o3_like_build(tmp_path, capsys):
    path = tmp_path / "prog.relay"
    path.write_text(SOURCE, encoding="utf-8")
    code, default, _ = relay(capsys, "opt", str(path))
    assert code == 0
    _, o3, _ = relay(capsys, "opt", str(path), "-O3")
    assert alpha_equal(parse(default), parse(o3))
    helptext = _help(capsys, "opt")
    assert "level 3 (default)" in helptext and "level 2 (default)" not in helptext
    assert "level 3 (default)" in _help(capsys, "build")


def _help(capsys, command: str) -> str:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    return " ".join(capsys.readouterr().out.split())


def test_large_tensors_print_summarised_over_lines_and_full_on_request():
    small = np.arange(6, dtype="float32")
    assert result_str(small) == "array([0., 1., 2., 3., 4., 5.], dtype=float32)"
    big = np.arange(5000, dtype="float32").reshape(50, 100)
    text = result_str(big)
    assert "..." in text and text.count("\n") < 15 and text.startswith("array([[")
    full = result_str(big, full=True)
    assert "..." not in full and "4.999e+03" in full and full.count("\n") >= 50
    wide = np.linspace(0, 1, 40)   # below numpy's threshold, too wide for one line
    assert len(result_str(wide).splitlines()) > 1
    assert all(len(line) <= 80 for line in result_str(wide).splitlines())
    assert len(result_str(small)) <= ONE_LINE
    logits = result_str(np.linspace(-1, 1, 1000, dtype="float32").reshape(1, 1000))
    assert "..." in logits and logits.count("\n") <= 3      # not 300 lines of a classifier


def test_run_prints_a_tuple_with_a_large_field_over_lines(tmp_path, capsys):
    path = tmp_path / "big.relay"
    path.write_text(BIG, encoding="utf-8")
    code, out, _ = relay(capsys, "run", str(path), "1")
    assert code == 0 and out.startswith("(\n  array([0.000e+00") and "..." in out
    assert "array([[1, 1, 1], [1, 1, 1]], dtype=int32)\n)" in out and out.rstrip().endswith(")")
    code, full, _ = relay(capsys, "run", str(path), "1", "--full")
    assert code == 0 and "..." not in full and "4.999e+03" in full


def test_run_saves_npy_and_npz(tmp_path, capsys):
    path = tmp_path / "big.relay"
    path.write_text(BIG, encoding="utf-8")
    npz = tmp_path / "out.npz"
    code, out, _ = relay(capsys, "run", str(path), "1", "-o", str(npz))
    assert code == 0 and out.startswith(f"wrote {npz}")
    with np.load(npz) as archive:
        assert archive.files == ["0", "1"]
        np.testing.assert_array_equal(archive["0"], np.arange(5000, dtype="float32"))
        assert archive["1"].dtype == np.int32 and archive["1"].shape == (2, 3)
    code, _, err = relay(capsys, "run", str(path), "1", "-o", str(tmp_path / "out.npy"))
    assert code == 1 and "save it as .npz" in err
    single = tmp_path / "one.relay"
    single.write_text("def @main(%x: Tensor[(3), float32]) { add(%x, %x) }", encoding="utf-8")
    npy = tmp_path / "r.npy"
    code, _, _ = relay(capsys, "run", str(single), "[1, 2, 3]", "-o", str(npy))
    assert code == 0
    np.testing.assert_array_equal(np.load(npy), np.array([2, 4, 6], dtype="float32"))
    code, _, err = relay(capsys, "run", str(single), "[1, 2, 3]", "-o", str(tmp_path / "r.txt"))
    assert code == 2 and ".npy or .npz" in err


def test_saving_a_result_that_is_not_tensors_is_a_user_error(tmp_path):
    from interpreter.values import ConstructorValue

    with pytest.raises(RelayRuntimeError, match="field 1 is a ConstructorValue"):
        save_result((np.zeros(2), ConstructorValue("Nil")), str(tmp_path / "x.npz"))
    nested = (np.zeros(2), (np.ones(1), np.int32(3)))
    line = save_result(nested, str(tmp_path / "n.npz"))
    assert "1.0: float64[1]" in line and "1.1: int32[]" in line
    with pytest.raises(RelayRuntimeError, match="cannot write"):
        save_result(np.zeros(2), str(tmp_path / "no-such-dir" / "x.npy"))


def test_impl_python_is_the_kits_own_interpreter(monkeypatch, capsys):
    """``--impl "python ..."`` works without an activated environment: the command runs with
    the directory of the Python running the kit first on the PATH."""
    import os
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    monkeypatch.setenv("PATH", "/usr/bin:/bin")       # no virtual environment on the PATH
    monkeypatch.setenv("PYTHONPATH", str(root))
    code, out, err = relay(capsys, "conformance", "--impl",
                           f"python {root / 'examples' / 'external' / 'good_impl.py'}",
                           "--max-examples", "2")
    assert code == 0, out + err
    from conformance.external import _child_env

    assert _child_env()["PATH"].split(os.pathsep)[0] == os.path.dirname(sys.executable)
