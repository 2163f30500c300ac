"""Every code sample of README.md and docs/*.md runs as written (issue 34).

The collector reads each Markdown file and makes one test per sample:

* the fenced ``python`` blocks of a file are executed in order (``exec``) in one namespace,
  as a reader runs them one after the other — one test per file, its failure naming the
  block's line —, in a temporary working directory;
* in any other fenced block, every line that is a ``relay`` command (``relay ...`` or
  ``$ relay ...``, a trailing ``# comment`` removed) is run through ``relay.cli.main`` in that
  directory and must exit 0. A synopsis — a line with a placeholder (``FILE``, ``DIR``,
  ``NAME``, ``ARG``, ``CMD``, ``P.npz``, ...), an optional part in ``[...]`` or an ellipsis —
  is not a command and is not run.

The working directory holds what the samples name: ``examples/`` (the project's, linked),
``prog.relay`` (a dense layer ``@main(%x: Tensor[(2, 3)], %w: Tensor[(4, 3)])``), ``w.npz``
(its weight), ``x.npy`` (an input), ``model.onnx`` (a small ONNX graph: Gemm + Relu) and
``input.npy`` (its input).

Markers (an HTML comment on the line right before the fence, so nothing shows on GitHub):

* ``<!-- skip-sample: REASON -->``: the sample is not run; the test is reported as skipped
  with the reason (for samples that cannot run here, e.g. a student's own program);
* ``<!-- slow-sample -->``: run only with ``RELAY_SLOW_TESTS=1`` (``make test-slow``-style);
  the default suite stays fast.

A sample that needs an optional extra (``tvm``, ``onnx``, ``torch``, ``matplotlib``) is
skipped with the reason when the package is not installed. ``relay conformance`` lines run
with ``--max-examples 3`` unless they give their own (capped at 3): the command is checked,
not the kit's thoroughness. Markers are used sparingly: a stale sample must fail here.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

SKIP = re.compile(r"<!--\s*skip-sample:\s*(.+?)\s*-->")
SLOW = re.compile(r"<!--\s*slow-sample\s*-->")
PLACEHOLDER = re.compile(r"\b(FILE|DIR|NAME|ARGS?|CMD|N|P\.npz|MODULE|FUNCTION|OUT)\b|\[|…|\.\.\.")

EXTRAS = {  # a sample mentioning the key needs the module
    "backends.tvm": "tvm", "relay build": "tvm", "relay profile": "tvm",
    "--backend tvm": "tvm", "frontends.onnx": "onnx", "relay import": "onnx",
    "onnx": "onnx", "frontends.torch": "torch", "import torch": "torch",
    "matplotlib": "matplotlib",
}


@dataclass(frozen=True)
class Sample:
    path: Path
    line: int          # 1-based line of the opening fence
    kind: str          # "python" or "shell"
    code: str
    skip: str | None
    slow: bool

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def samples(path: Path) -> list[Sample]:
    """The samples of one Markdown file (see the module docstring)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Sample] = []
    i = 0
    while i < len(lines):
        fence = re.match(r"^(\s*)```(\w*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        indent, lang = fence.group(1), fence.group(2)
        start = i
        i += 1
        body: list[str] = []
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        before = lines[start - 1] if start else ""
        skip = SKIP.search(before)
        slow = bool(SLOW.search(before))
        if lang == "python":
            found.append(Sample(path, start + 1, "python", "\n".join(body),
                                skip.group(1) if skip else None, slow))
        elif lang in ("", "sh", "shell", "console", "bash"):
            commands = [c for c in (_command(line) for line in body) if c]
            if commands:
                found.append(Sample(path, start + 1, "shell", "\n".join(commands),
                                    skip.group(1) if skip else None, slow))
    return found


def _command(line: str) -> str | None:
    """The ``relay`` command on a line of a shell block, or None (not a command, or a
    synopsis with placeholders)."""
    text = line.strip()
    if text.startswith("$ "):
        text = text[2:]
    if not text.startswith("relay "):
        return None
    if "#" in text:
        text = text[:text.index("#")].rstrip() if _outside_quotes(text, text.index("#")) \
            else text
    if PLACEHOLDER.search(re.sub(r"'[^']*'|\"[^\"]*\"", "", text)):   # quoted args are data
        return None
    return text


def _outside_quotes(text: str, pos: int) -> bool:
    return text[:pos].count('"') % 2 == 0 and text[:pos].count("'") % 2 == 0


ALL = [s for path in DOCS for s in samples(path)]
SHELL = [s for s in ALL if s.kind == "shell"]
PYTHON_FILES = [path for path in DOCS if any(s.kind == "python" and s.path == path for s in ALL)]


def _needs(sample: Sample) -> list[str]:
    return sorted({module for key, module in EXTRAS.items() if key in sample.code})


def _why_not(sample: Sample) -> str | None:
    """Why ``sample`` is not run here (a marker, the slow switch, a missing extra), or None."""
    if sample.skip:
        return f"{sample.id}: marked skip-sample: {sample.skip}"
    if sample.slow and os.environ.get("RELAY_SLOW_TESTS") != "1":
        return f"{sample.id}: a slow sample (RELAY_SLOW_TESTS=1 runs it)"
    for module in _needs(sample):
        if importlib.util.find_spec(module) is None:
            return f"{sample.id}: needs the optional package {module!r}"
    return None


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    (tmp_path / "prog.relay").write_text(
        "def @main(%x: Tensor[(2, 3), float32], %w: Tensor[(4, 3), float32]) {\n"
        "  nn.relu(nn.dense(%x, %w))\n}\n", encoding="utf-8")
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "w.npz", w=rng.standard_normal((4, 3)).astype("float32"))
    np.save(tmp_path / "x.npy", rng.standard_normal((2, 3)).astype("float32"))
    np.save(tmp_path / "input.npy", rng.standard_normal((1, 8)).astype("float32"))
    if importlib.util.find_spec("onnx") is not None:
        _write_onnx(tmp_path / "model.onnx")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _write_onnx(path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((8, 4)).astype("float32"), "fc_weight")
    b = numpy_helper.from_array(np.zeros(4, "float32"), "fc_bias")
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["data", "fc_weight", "fc_bias"], ["h"]),
         helper.make_node("Relu", ["h"], ["out"])], "small",
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 4])], [w, b])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


@pytest.mark.parametrize("path", PYTHON_FILES, ids=[str(p.relative_to(ROOT)) for p in PYTHON_FILES])
def test_python_samples_run(path: Path, workdir: Path) -> None:
    namespace: dict[str, object] = {"__name__": "__sample__"}
    skipped: list[str] = []
    for sample in (s for s in ALL if s.path == path and s.kind == "python"):
        why = _why_not(sample)
        if why is not None:
            skipped.append(why)
            continue
        # The block's own line numbers in tracebacks: "README.md:412" + the line in the block.
        exec(compile(sample.code, sample.id, "exec"), namespace)  # noqa: S102 - our own docs
    if skipped and len(skipped) == sum(s.path == path and s.kind == "python" for s in ALL):
        pytest.skip("; ".join(skipped))


@pytest.mark.parametrize("sample", SHELL, ids=[s.id for s in SHELL])
def test_shell_sample_runs(sample: Sample, workdir: Path,
                           capsys: pytest.CaptureFixture[str]) -> None:
    why = _why_not(sample)
    if why is not None:
        pytest.skip(why)
    from relay.cli import main

    for command in sample.code.splitlines():
        argv = shlex.split(command)[1:]
        if argv[:1] == ["conformance"]:
            argv = _capped(argv)
        try:
            status = main(argv)
        except SystemExit as exit_:          # argparse's --version and --help
            status = exit_.code if isinstance(exit_.code, int) else 1
        out, err = capsys.readouterr()
        assert status == 0, f"{sample.id}: `{command}` exited {status}\n{out}\n{err}"


def _capped(argv: list[str]) -> list[str]:
    if "--max-examples" in argv:
        i = argv.index("--max-examples")
        return [*argv[:i + 1], str(min(3, int(argv[i + 1]))), *argv[i + 2:]]
    if "--list" in argv or "--coverage" in argv:   # --coverage needs its full sample
        return argv
    return [*argv, "--max-examples", "3"]


def test_the_collector_finds_the_samples() -> None:
    """The collector itself: it sees the README's samples, and reads markers and synopses."""
    readme = [s for s in ALL if s.path.name == "README.md"]
    assert sum(s.kind == "python" for s in readme) >= 10
    assert any(s.kind == "shell" and "relay run" in s.code for s in readme)
    assert _command("relay run FILE [ARG ...]") is None
    assert _command("$ relay run prog.relay 20 --trace") == "relay run prog.relay 20 --trace"
    assert _command("relay ops            # the operator table") == "relay ops"
    assert _command("relay run p.relay '[1, 2]'") == "relay run p.relay '[1, 2]'"
    assert _capped(["conformance", "--pass", "x", "--max-examples", "500"])[-1] == "3"
    assert sys.version_info >= (3, 10)
