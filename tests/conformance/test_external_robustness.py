"""``relay conformance --impl`` against misbehaving implementations (a grader's worst cases).

Each case runs the real command in a subprocess against a small scripted
implementation from ``tests/conformance/impls/misbehaving.py`` and checks that
the run ends with a one-line verdict (never a traceback), within a generous
wall-time bound (the issue's "a hanging implementation reported in < 30 s at
``--timeout 1``"), and that no process of the implementation survives: modes
that start a helper child write its pid to a file, and the pid must be gone
(or a zombie nobody reaped) afterwards — the kit kills the whole process group.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.external import ExternalError, ExternalImpl

ROOT = Path(__file__).resolve().parents[2]
IMPL = ROOT / "tests" / "conformance" / "impls" / "misbehaving.py"
WALL_BOUND = 30.0

pytestmark = pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX")


def _impl(mode: str, pidfile: Path | None = None) -> str:
    cmd = f'"{sys.executable}" "{IMPL}" {mode}'
    return cmd + (f' "{pidfile}"' if pidfile is not None else "")


def _run(impl: str, *extra: str) -> tuple[int, str, float]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "relay", "conformance", "--impl", impl,
                           *extra], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=5 * WALL_BOUND)
    return done.returncode, done.stdout + done.stderr, time.monotonic() - start


def _alive(pid: int) -> bool:
    """True when ``pid`` runs (a zombie — dead, not yet reaped by init — does not count)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


FAILING = [
    # --timeout 1 plus the default 5 s start-up allowance of a fresh process
    ("hang", True, ["timeout after 6 s on request 1: no answer (start-up included)",
                    "not shrunk"]),
    ("stubborn", True, ["timeout after 6 s on request 1"]),
    ("exit_at_once", False, ["exited with exit code 0 before answering request 1",
                             "has not answered any of 3 requests"]),
    ("crash", False, ["crashed with exit code 3 before answering request 1",
                      "ZeroDivisionError: student bug"]),
    ("orphan", True, ["exited with exit code 0 before answering request 1"]),
    ("garbage", False, ["malformed answer to request 1 (not JSON", "hello, grader"]),
    ("bad_utf8", False, ["invalid UTF-8 at byte 20 of the answer to request 1"]),
    ("endless", False, ["line longer than 67108864 bytes in the answer to request 1"]),
    ("wrong_id", False, ["answer for the wrong request: expected id 1, got 101"]),
    ("truncated", False, ["malformed answer to request 1"]),
    ("truncated_eof", False, ["truncated answer to request 1", "{\"id\": 1, \"val"]),
    ("chatty", False, ["timeout after 6 s on request 1"]),
]


@pytest.mark.parametrize(("mode", "has_child", "verdicts"), FAILING,
                         ids=[case[0] for case in FAILING])
def test_misbehaving_implementation_gets_a_verdict(tmp_path: Path, mode: str, has_child: bool,
                                                    verdicts: list[str]) -> None:
    pidfile = tmp_path / "child.pid"
    code, out, wall = _run(_impl(mode, pidfile), "--max-examples", "1", "--timeout", "1")
    assert code == 1, out
    assert out.startswith("FAIL implementation"), out
    assert "Traceback (most recent call last):\n  File" not in out, out
    for verdict in verdicts:
        assert verdict in out, out
    assert "--- program (Relay text) ---" in out and "def @main" in out, out
    assert wall < WALL_BOUND, f"{mode}: {wall:.1f} s"
    if has_child:
        pid = int(pidfile.read_text())
        deadline = time.monotonic() + 5
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid), f"{mode}: child {pid} of the implementation survived"


def test_hanging_implementation_with_many_examples_stops_at_the_first_timeout(
        tmp_path: Path) -> None:
    # Without the abort every shrink step would re-pay the timeout.
    code, out, wall = _run(_impl("hang", tmp_path / "pid"), "--max-examples", "100",
                           "--timeout", "1", "--startup-timeout", "0")
    assert code == 1 and "timeout after 1 s on request 1" in out, out
    assert wall < WALL_BOUND


@pytest.mark.parametrize("mode", ["stderr_flood", "slow"])
def test_noisy_or_slow_but_correct_implementation_passes(mode: str) -> None:
    # stderr_flood writes 4 MiB of stderr per request (a full pipe would deadlock a kit that
    # does not drain it); slow takes 0.3 s per request, 1.5 s in all, over a 1 s timeout.
    code, out, _ = _run(_impl(mode), "--max-examples", "5", "--timeout", "1")
    assert code == 0, out
    assert "5 generated programs agree with the oracle" in out


def test_nondeterministic_implementation_gets_a_verdict() -> None:
    # It crashes on half of the requests at random: whichever way the run ends (a shrunk
    # counterexample, "not reproducible" on replay, or the failure budget), it is a FAIL
    # with the crash verdict and no traceback.
    code, out, wall = _run(_impl("flaky"), "--max-examples", "20", "--timeout", "2")
    assert code == 1 and out.startswith("FAIL implementation"), out
    assert "crashed with exit code 7" in out, out
    assert "Traceback (most recent call last):\n  File" not in out, out
    assert wall < 5 * WALL_BOUND


def test_crash_on_some_programs_is_shrunk_to_a_small_counterexample() -> None:
    # Crashes are shrunk like wrong values (within the failure budget): the report shows a
    # small program calling multiply, and the crash verdict with the stderr tail.
    # (--shrink-time 60: shrinking ends at the failure budget, not at the default 15 s.)
    code, out, wall = _run(_impl("crash_on_multiply"), "--max-examples", "100",
                           "--timeout", "5", "--shrink-time", "60")
    assert code == 1, out
    assert "crashed with exit code 5" in out and "panic: multiply not implemented" in out
    program = out.split("--- program (Relay text) ---")[1].split("--- inputs ---")[0]
    program = program.split("--- constants")[0].split("#[metadata]")[0]  # code, not data
    # The failure budget (30 restarts of the crashed implementation) bounds the shrinking, so
    # the size depends on which programs the generator drew: a bound, not a minimum.
    assert "multiply(" in program and program.count("\n") < 120, out
    assert wall < 5 * WALL_BOUND


def test_request_level_verdicts_and_restart_after_a_failure() -> None:
    # In-process: a failure kills the process; the next request starts a fresh one.
    with ExternalImpl(_impl("endless"), timeout=10, max_line_bytes=1000) as impl:
        with pytest.raises(ExternalError, match="line longer than 1000 bytes") as info:
            impl.request("def @main() { 0 }", [])
        assert info.value.kind == "protocol"
        with pytest.raises(ExternalError, match="line longer than 1000 bytes"):
            impl.request("def @main() { 0 }", [])
    with ExternalImpl(_impl("crash"), timeout=10) as impl:
        with pytest.raises(ExternalError, match="crashed with exit code 3") as info:
            impl.request("def @main() { 0 }", [])
        assert info.value.kind == "crash"


def test_close_kills_the_whole_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    impl = ExternalImpl(_impl("stubborn", pidfile), timeout=0.5, startup_timeout=0)
    with pytest.raises(ExternalError, match="timeout after 0.5 s") as info:
        impl.request("def @main() { 0 }", [])
    assert info.value.kind == "timeout"
    impl.close()
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)
