"""The ``relay`` command line under hostile conditions, each run as a real subprocess.

docs/architecture.md#cli: user errors print one message and exit 1, usage errors exit 2, and no
traceback is ever shown. The cases: files that are not UTF-8, a closed standard input or
output, a full disk (``/dev/full``), a reader that stops early, bad option values.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HAS_DEV_FULL = os.path.exists("/dev/full")
FILE_COMMANDS = ["check", "fmt", "run"]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def relay_sh(redirections: str, *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m relay.cli ARGV`` through ``sh`` so that ``redirections`` (such as
    ``<&-`` or ``>/dev/full``) apply to the command."""
    quoted = " ".join(f'"${i}"' for i in range(1, len(argv) + 1))
    script = f'exec "$0" -m relay.cli {quoted} {redirections}'
    return subprocess.run(["sh", "-c", script, sys.executable, *argv], cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=120)


def _no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    assert "Exception ignored" not in result.stderr, result.stderr


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "ok.relay").write_text("def @main() { 1 }\n", encoding="utf-8")
    (tmp_path / "bad.relay").write_bytes(b"def @main() {\n  1 // caf\xe9 \xff\n}\n")
    (tmp_path / "vec.relay").write_text("def @main(%x: Tensor[(2), float32]) { %x }\n",
                                        encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("command", FILE_COMMANDS)
def test_non_utf8_file_names_the_file_and_the_byte_offset(files, command):
    result = relay_sh("", command, "bad.relay", cwd=files)
    _no_traceback(result)
    assert result.returncode == 1
    message = result.stderr.strip()
    assert message.startswith("error: bad.relay: ")
    assert "not UTF-8" in message
    assert "byte 0xe9 at byte offset 24 (line 2, column 11)" in message


@pytest.mark.parametrize("command", FILE_COMMANDS)
def test_non_utf8_standard_input_is_a_clear_error(files, command):
    result = relay_sh("< bad.relay", command, "-", cwd=files)
    _no_traceback(result)
    assert result.returncode == 1
    assert "<stdin>: not UTF-8 text: byte 0xe9 at byte offset 24" in result.stderr


@pytest.mark.parametrize("command", FILE_COMMANDS)
def test_closed_standard_input(files, command):
    result = relay_sh("<&-", command, "-", cwd=files)
    _no_traceback(result)
    assert result.returncode == 1
    assert result.stderr.strip() == "error: cannot read standard input: it is closed"


@pytest.mark.parametrize("argv", [["ops"], ["check", "ok.relay"], ["fmt", "ok.relay"],
                                  ["run", "ok.relay"], ["ops", "--markdown"]])
def test_closed_standard_output(files, argv):
    result = relay_sh(">&-", *argv, cwd=files)
    _no_traceback(result)
    assert result.returncode == 1
    assert result.stderr.strip() == "error: cannot write to standard output: it is closed"


@pytest.mark.skipif(not HAS_DEV_FULL, reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("argv", [["ops"], ["check", "ok.relay"], ["fmt", "ok.relay"],
                                  ["run", "ok.relay"], ["run", "ok.relay", "--trace"]])
def test_full_disk(files, argv):
    result = relay_sh(">/dev/full", *argv, cwd=files)
    _no_traceback(result)
    assert result.returncode == 1
    assert result.stderr.strip() == \
        "error: cannot write to standard output: No space left on device"
    assert "None" not in result.stderr


def test_closed_standard_error_still_sets_the_status(files):
    result = relay_sh("2>&-", "check", "missing.relay", cwd=files)
    assert result.returncode == 1
    assert result.stderr == ""


def test_reader_that_stops_early_ends_quietly(files):
    script = '"$0" -m relay.cli ops | head -n 1'
    result = subprocess.run(["sh", "-c", script, sys.executable], cwd=files, env=_env(),
                            capture_output=True, text=True, timeout=120)
    assert result.stdout.split()[0] == "NAME"
    _no_traceback(result)


@pytest.mark.parametrize("fuel", ["-5", "-1", "x", "1.5"])
def test_bad_fuel_is_a_usage_error(files, fuel):
    result = relay_sh("", "run", "ok.relay", "--fuel", fuel, cwd=files)
    _no_traceback(result)
    assert result.returncode == 2
    assert "argument --fuel: expected a non-negative integer" in result.stderr


def test_zero_fuel_is_allowed_and_runs_out(files):
    result = relay_sh("", "run", "ok.relay", "--fuel", "0", cwd=files)
    _no_traceback(result)
    assert result.returncode == 1
    assert "fuel" in result.stderr


@pytest.mark.parametrize("argv, fragment", [
    (["check", "missing.relay"], "error: missing.relay: No such file or directory"),
    (["fmt", "."], "error: .: Is a directory"),
    (["run", "vec.relay", "missing.npy"], "error: missing.npy: No such file or directory"),
    (["run", "vec.relay", "[1, 2"], "argument 1: '[1, 2' is neither a .npy file nor a JSON"),
    (["run", "ok.relay", "--entry", "nope"], "@nope"),
])
def test_other_user_errors_are_one_line_and_exit_1(files, argv, fragment):
    result = relay_sh("", *argv, cwd=files)
    _no_traceback(result)
    assert result.returncode == 1
    assert fragment in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_unreadable_npy_argument(files):
    (files / "junk.npy").write_bytes(b"\x93NUMPY garbage")
    result = relay_sh("", "run", "vec.relay", "junk.npy", cwd=files)
    _no_traceback(result)
    assert result.returncode == 1
    assert "junk.npy" in result.stderr


@pytest.mark.parametrize("argv", [[], ["nope"], ["run"], ["check", "a", "b"],
                                  ["fmt", "--bogus", "ok.relay"]])
def test_usage_errors_exit_2(files, argv):
    result = relay_sh("", *argv, cwd=files)
    _no_traceback(result)
    assert result.returncode == 2
    assert "usage:" in result.stderr


def test_success_still_prints(files):
    result = relay_sh("", "run", "ok.relay", cwd=files)
    assert (result.returncode, result.stdout.strip(), result.stderr) == (0, "1", "")
