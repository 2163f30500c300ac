"""Fault injection on the kernel cache and on saved builds (issue 33, item 2).

Every kind of file the backend writes is damaged in each way a disk or a user can damage
it — truncated, corrupted in place (one byte flipped, same size), deleted, made read-only —
and the program is then built (cache) or loaded (saved build) again **in a forked child
process**, so that a crash (SIGBUS from a truncated library, SIGSEGV) fails the one case
instead of killing the test run:

* the kernel cache (``.so`` libraries, ``.json`` metadata, ``.bin`` weight blobs, ``.module``
  build memos): the build gives the oracle's result, and the damaged entry is rewritten (a
  build after it finds every kernel on disk again);
* a saved build (``program.relay``, ``build.json``, ``aot.py``, and its ``kernels/``
  libraries, metadata and blobs): the load gives the oracle's result (read-only files) or
  refuses with a ``RelayError`` (anything missing or changed) — never a crash, never a
  wrong result.

The program's kernels are small (single-threaded), so the child never needs TVM's thread
pool (which belongs to the parent).
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from backends.tvm import build, load
from backends.tvm.kernel import blobs
from backends.tvm.kernel.cache import KernelCache
from interpreter import evaluate
from semantics import RelayError

PROGRAM = """
def @main(%x: Tensor[(1, 64), float32], %w: Tensor[(32, 64), float32]) {
  nn.relu(add(nn.dense(%x, %w), 1f))
}
"""
W = np.random.default_rng(33).standard_normal((32, 64)).astype("float32")   # a blob (8 KiB)
X = np.random.default_rng(34).standard_normal((1, 64)).astype("float32")

OK, REFUSED = 0, 3


def _truncate(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _corrupt(p: Path) -> None:
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0x5A
    p.write_bytes(bytes(data))


def _delete(p: Path) -> None:
    p.unlink()


def _read_only(p: Path) -> None:
    p.chmod(stat.S_IRUSR | stat.S_IRGRP)


FAULTS: dict[str, Callable[[Path], None]] = {"truncate": _truncate, "corrupt": _corrupt,
                                             "delete": _delete, "read-only": _read_only}


@pytest.fixture(scope="module")
def originals(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A populated kernel cache and a saved AoT build of :data:`PROGRAM`, and the oracle."""
    root = tmp_path_factory.mktemp("faults")
    cache = KernelCache(root / "cache")
    exe = build(PROGRAM, params={"w": W}, executor="aot", cache=cache, jobs=1)
    graph = build(PROGRAM, params={"w": W}, executor="graph", cache=cache, jobs=1)
    cache.flush()
    exe.save(root / "saved")
    want = evaluate(PROGRAM, X, W)
    np.testing.assert_allclose(exe(X), want, rtol=1e-5)
    np.testing.assert_allclose(graph(X), want, rtol=1e-5)
    return {"cache": root / "cache", "saved": root / "saved", "want": want}


def _in_child(work: Callable[[], np.ndarray], want: np.ndarray) -> int:
    """Run ``work`` in a forked child: its exit status (OK: the oracle's result; REFUSED: a
    RelayError; 4: another exception; 5: a wrong result) or the negated signal number."""
    pid = os.fork()
    if pid == 0:                                  # the child: no test framework from here
        code = 4
        try:
            signal.alarm(120)
            blobs._MAPS.clear()                   # as a new process: no map survives
            got = work()
            code = OK if np.allclose(got, want, rtol=1e-5) else 5
        except RelayError:
            code = REFUSED
        except BaseException:  # noqa: BLE001 - any other failure is the exit code
            code = 4
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _victims(directory: Path, pattern: str) -> list[Path]:
    found = sorted(directory.glob(pattern))
    assert found, f"no {pattern} in {directory}"
    return found


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("kind", ["*.so", "*.json", f"*{blobs.SUFFIX}", "*.module"])
def test_a_damaged_cache_file_is_rebuilt(originals: dict[str, object], tmp_path: Path,
                                         kind: str, fault: str) -> None:
    directory = tmp_path / "cache"
    shutil.copytree(originals["cache"], directory)    # type: ignore[arg-type]
    for victim in _victims(directory, kind):
        FAULTS[fault](victim)
    want = originals["want"]
    assert isinstance(want, np.ndarray)

    def rebuild() -> np.ndarray:
        cache = KernelCache(directory)
        got = build(PROGRAM, params={"w": W}, executor="graph", cache=cache, jobs=1)(X)
        cache.flush()
        blobs._MAPS.clear()
        again = KernelCache(directory)      # the entry was repaired: everything from disk
        exe = build(PROGRAM, params={"w": W}, executor="graph", cache=again, jobs=1)
        if fault != "read-only" and again.misses:
            raise AssertionError(f"{again.misses} misses after the repair")
        np.testing.assert_array_equal(exe(X), got)
        return got                                # type: ignore[no-any-return]

    status = _in_child(rebuild, want)
    assert status == OK, f"{fault} of {kind}: child status {status}"


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("kind", ["program.relay", "build.json", "aot.py", "kernels/*.so",
                                  "kernels/*.json", f"kernels/*{blobs.SUFFIX}"])
def test_a_damaged_saved_build_is_refused(originals: dict[str, object], tmp_path: Path,
                                          kind: str, fault: str) -> None:
    directory = tmp_path / "saved"
    shutil.copytree(originals["saved"], directory)    # type: ignore[arg-type]
    for victim in _victims(directory, kind):
        FAULTS[fault](victim)
    want = originals["want"]
    assert isinstance(want, np.ndarray)
    status = _in_child(lambda: load(directory)(X), want)  # type: ignore[no-any-return]
    if fault == "read-only":
        assert status == OK, f"{fault} of {kind}: child status {status}"
    elif kind == "build.json" and fault == "corrupt":
        # a flipped byte may leave a valid build.json (another depth budget, say)
        assert status in (OK, REFUSED), f"{fault} of {kind}: child status {status}"
    else:
        assert status == REFUSED, f"{fault} of {kind}: child status {status}"
