"""Bad arguments to the Python API end in a RelayError (issue 33, item 7).

Bad arguments raise :class:`~semantics.errors.RelayArgumentTypeError` (the wrong kind of
value; also a ``TypeError``) or :class:`~semantics.errors.RelayArgumentValueError` (a bad
value; also a ``ValueError``) — both ``RelayTypeError`` s, so ``except RelayError`` catches
every user error and Python's own categories still hold. Unreadable files are
``RelayRuntimeError`` s.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ad
import models
import passes
import proofs
from semantics import (
    RelayArgumentTypeError,
    RelayArgumentValueError,
    RelayError,
    RelayRuntimeError,
    parse,
    parse_expr,
)

SQUARE = "def @main(%x: float32) { %x * %x }"


def _build(**kw: Any) -> Any:
    from backends.tvm import build

    return build(SQUARE, compile_kernels=False, **kw)


CASES: list[tuple[str, Callable[[], Any], type]] = [
    ("grad mode", lambda: ad.grad(parse_expr("fn (%x: float32) { %x }"), mode="sideways"),
     RelayArgumentValueError),
    ("pass of None", lambda: passes.fuse_ops(None), RelayArgumentTypeError),
    ("fold_constant of None", lambda: passes.fold_constant(None), RelayArgumentTypeError),
    ("optimize 1.5", lambda: passes.optimize(parse(SQUARE), 1.5), RelayArgumentTypeError),
    ("optimize 7", lambda: passes.optimize(parse(SQUARE), 7), RelayArgumentValueError),
    ("get_pass 5", lambda: passes.get_pass(5), RelayArgumentTypeError),
    ("build target garbage", lambda: _build(target="garbage"), RelayArgumentValueError),
    ("build target 42", lambda: _build(target=42), RelayArgumentTypeError),
    ("build jobs many", lambda: _build(jobs="many"), RelayArgumentTypeError),
    ("build jobs 0", lambda: _build(jobs=0), RelayArgumentValueError),
    ("build params list", lambda: _build(params=[1, 2]), RelayArgumentTypeError),
    ("build max_depth deep", lambda: _build(max_depth="deep"), RelayArgumentTypeError),
    ("build opt_level 1.5", lambda: _build(opt_level=1.5), RelayArgumentTypeError),
    ("build executor", lambda: _build(executor="jit"), RelayArgumentValueError),
    ("models.get name", lambda: models.get("nonexistent"), RelayArgumentValueError),
    ("models.get seed", lambda: models.get("dqn", seed="x"), RelayArgumentTypeError),
    ("models.get weights", lambda: models.get("dqn", weights="/nonexistent/w.npz"),
     RelayRuntimeError),
    ("proofs.run bogus", lambda: proofs.run(only="bogus"), RelayArgumentValueError),
    ("proofs.run 5", lambda: proofs.run(only=5), RelayArgumentTypeError),
]


@pytest.mark.parametrize("name, call, kind", CASES, ids=[c[0] for c in CASES])
def test_bad_arguments_are_relay_errors(name: str, call: Callable[[], Any], kind: type) -> None:
    with pytest.raises(kind) as info:
        call()
    assert isinstance(info.value, RelayError)
    if issubclass(kind, RelayArgumentTypeError):
        assert isinstance(info.value, TypeError)
    if issubclass(kind, RelayArgumentValueError):
        assert isinstance(info.value, ValueError)


def test_a_damaged_weights_file_is_a_runtime_error(tmp_path: Path) -> None:
    for content in (b"", b"PK\x03\x04 truncated"):
        path = tmp_path / "w.npz"
        path.write_bytes(content)
        with pytest.raises(RelayRuntimeError, match="cannot read the weights file"):
            models.get("dqn", weights=path)


def test_get_pass_finds_partial_evaluate_without_importing_pe_first(tmp_path: Path) -> None:
    """Issue 33 item 8: in a fresh process (pe never imported), through the plugin list."""
    import os
    import subprocess
    import sys

    code = ("import sys, passes\nassert 'pe' not in sys.modules\n"
            "p = passes.get_pass('PartialEvaluate')\nprint(p.func_name)\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True)
    assert out.stdout.strip() == "partial_evaluate"


# --- backends.tvm.load on bad saved builds --------------------------------------------------

@pytest.fixture
def saved(tmp_path: Path) -> Path:
    pytest.importorskip("tvm", reason="saved builds need apache-tvm (extra `tvm`)")
    from backends.tvm import build

    build(SQUARE, executor="aot").save(tmp_path / "b")
    return tmp_path / "b"


@pytest.mark.parametrize("key, value", [("opt_level", "x"), ("max_depth", None),
                                        ("max_depth", 1e400), ("executor", "jit"),
                                        ("target", 42), ("files", "nope")])
def test_load_refuses_bad_build_json_values(saved: Path, key: str, value: Any) -> None:
    from backends.tvm import load

    meta = json.loads((saved / "build.json").read_text())
    meta[key] = value
    (saved / "build.json").write_text(json.dumps(meta))
    with pytest.raises(RelayRuntimeError):
        load(saved)


@pytest.mark.parametrize("source", [b"\xff\xfe not utf-8", b"def broken(:\n"])
def test_load_refuses_a_broken_aot_module(saved: Path, source: bytes) -> None:
    from backends.tvm import load

    (saved / "aot.py").write_bytes(source)
    with pytest.raises(RelayRuntimeError):
        load(saved)


@pytest.mark.parametrize("path", [None, 42])
def test_load_of_something_that_is_not_a_path(path: Any) -> None:
    from backends.tvm import load

    with pytest.raises(RelayArgumentTypeError):
        load(path)


def test_the_oracle_and_a_saved_build_agree(saved: Path) -> None:
    from backends.tvm import load

    assert load(saved)(np.float32(3)) == np.float32(9)


# --- the command line: damaged --params archives, an empty model file -----------------------

def _relay(*argv: str, cwd: Path) -> Any:
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.run([sys.executable, "-m", "relay", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("content", [b"", b"PK\x03\x04\x14\x00 truncated"],
                         ids=["empty", "truncated"])
def test_cli_params_archive_that_cannot_be_read(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "m.relay").write_text("def @main(%x: float32, %w: float32) { %x * %w }\n")
    (tmp_path / "p.npz").write_bytes(content)
    commands = [["run", "m.relay", "2", "--params", "p.npz"],
                ["build", "m.relay", "-o", "out", "--params", "p.npz"]]
    for argv in commands:
        out = _relay(*argv, cwd=tmp_path)
        assert out.returncode != 0, argv
        assert "Traceback" not in out.stderr, out.stderr
        assert "--params: cannot read p.npz" in out.stderr, out.stderr


def test_cli_import_of_an_empty_file(tmp_path: Path) -> None:
    pytest.importorskip("onnx", reason="relay import needs onnx")
    (tmp_path / "empty.onnx").write_bytes(b"")
    out = _relay("import", "empty.onnx", cwd=tmp_path)
    assert out.returncode != 0 and "Traceback" not in out.stderr, out.stderr
    assert "empty model" in out.stderr
    assert not (tmp_path / "empty.relay").exists()
