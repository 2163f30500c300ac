"""``tools/size_budget.py`` (run by ``make lint``): new oversize code fails, listed exceptions
may shrink but never grow, and the repository is within its budget today."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "size_budget.py"


def _run(root: Path, exceptions: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), str(root), "--exceptions",
                           str(exceptions), *extra], capture_output=True, text=True,
                          check=False)


def _function(name: str, lines: int) -> str:
    return f"def {name}():\n" + "    x = 1\n" * (lines - 2) + "    return x\n"


def test_the_repository_is_within_its_budget():
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_new_oversize_module_and_function_fail(tmp_path: Path):
    (tmp_path / "big.py").write_text("x = 1\n" * 801)
    (tmp_path / "long.py").write_text(_function("f", 81))
    done = _run(tmp_path, tmp_path / "none.txt")
    assert done.returncode == 1
    assert "big.py:1: module big.py has 801 lines" in done.stdout
    assert "long.py:1: function f has 81 lines" in done.stdout


def test_exceptions_may_shrink_but_not_grow(tmp_path: Path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "m.py").write_text("class C:\n" + "".join(
        "    " + line + "\n" for line in _function("run", 90).splitlines()))
    exceptions = tmp_path / "exceptions.txt"
    exceptions.write_text("m.py::C.run 95\n")
    shrunk = _run(src, exceptions)
    assert shrunk.returncode == 0 and "shrank to 90 lines" in shrunk.stdout
    assert _run(src, exceptions, "--ratchet").returncode == 0
    assert "m.py::C.run 90" in exceptions.read_text()
    (src / "m.py").write_text("class C:\n" + "".join(
        "    " + line + "\n" for line in _function("run", 91).splitlines()))
    grown = _run(src, exceptions)
    assert grown.returncode == 1 and "grew to 91 lines" in grown.stdout


def test_malformed_exceptions_file_is_reported(tmp_path: Path):
    bad = tmp_path / "exceptions.txt"
    bad.write_text("just-a-path\n")
    done = _run(tmp_path, bad)
    assert done.returncode == 2 and "expected 'PATH[::FUNCTION] LINES'" in done.stderr
