"""``bench/paper.py`` (``make paper``): the figures it writes say what they claim.

Fig. 2 and Fig. 5 are exact (a program and its result), so they are checked here; the timed
figures are checked for their shape only (a table with every system's column, the ratios
consistent with the times) on the smallest model with one run — timings never decide a test.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _paper() -> Any:
    spec = importlib.util.spec_from_file_location("bench_paper", ROOT / "bench" / "paper.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_paper"] = module
    spec.loader.exec_module(module)
    return module


def test_fig5_is_the_papers_residual_and_unproduced_figures_are_listed(tmp_path: Path) -> None:
    paper = _paper()
    assert paper.main(["--out", str(tmp_path), "--only", "fig5"]) == 0
    text = (tmp_path / "README.md").read_text()
    assert "alpha-equivalent to the paper's" in text and "**not**" not in text
    assert "(%d, (ones_like(%d),))" in (tmp_path / "fig5.md").read_text()
    for what, _ in paper.NOT_REPRODUCED:
        assert what in text


def test_fig2_loop_imports_as_recursion_and_agrees_with_python(tmp_path: Path) -> None:
    pytest.importorskip("onnx", reason="Fig. 2 goes through the ONNX importer (extra `onnx`)")
    paper = _paper()
    assert paper.main(["--out", str(tmp_path), "--only", "fig2"]) == 0
    body = (tmp_path / "fig2.md").read_text()
    assert "let %loop" in body and "%loop(" in body          # a recursive local function
    assert body.count("equal to the Python loop") == 2 and "different" not in body
    assert "(8, 7, 4)" in body


def test_fig2_model_agrees_with_onnxruntime() -> None:
    pytest.importorskip("onnx", reason="needs the `onnx` package (extra `onnx`)")
    ort = pytest.importorskip("onnxruntime", reason="needs onnxruntime (extra `bench`)")
    from frontends.onnx import from_onnx
    from interpreter import evaluate

    model = _paper()._fig2_model()
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    mod, _ = from_onnx(model)
    for start in ((1, 1, 1), (1, 1, 5), (0, 2, 3), (3, 0, 9)):
        args = [np.asarray(v, dtype=np.int32) for v in start]
        want = sess.run(None, dict(zip("ijk", args)))
        got = evaluate(mod, *args)
        assert [int(np.asarray(g)) for g in got] == [int(w) for w in want], start


def test_latency_table_has_every_system(tmp_path: Path) -> None:
    pytest.importorskip("tvm", reason="the timed figures need the TVM backend (extra `tvm`)")
    pytest.importorskip("torch", reason="the peers need PyTorch (extra `torch`)")
    pytest.importorskip("onnxruntime", reason="the peers need onnxruntime (extra `bench`)")
    paper = _paper()
    assert paper.main(["--out", str(tmp_path), "--only", "vision", "--models", "dqn",
                       "--runs", "1", "--warmup", "0"]) == 0
    table = (tmp_path / "vision.md").read_text().splitlines()
    header = [c.strip() for c in table[0].strip("|").split("|")]
    assert header[:2] == ["model", "ours (ms)"]
    for system in ("PyTorch", "onnxruntime", "TVM Relax untuned"):
        assert f"{system} (ms)" in header and f"{system} / ours" in header
    row = [c.strip() for c in table[2].strip("|").split("|")]
    assert row[0] == "dqn"
    cells = dict(zip(header, row))
    ours = float(cells["ours (ms)"])
    for system in ("PyTorch", "onnxruntime", "TVM Relax untuned"):
        peer, ratio = float(cells[f"{system} (ms)"]), float(cells[f"{system} / ours"])
        assert ratio == pytest.approx(peer / ours, rel=0.02)


def test_our_configurations_are_timed_in_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    """``interleaved_medians`` runs one call of each configuration per round (after the
    warm-up rounds), so every configuration meets the same phases of the machine; a slow
    warm-up run caps the rounds at SLOW_RUNS for all of them."""
    paper = _paper()
    calls: list[str] = []
    fns = {k: (lambda k=k: calls.append(k)) for k in ("O0", "O3")}
    medians = paper.interleaved_medians(fns, runs=4, warmup=1)
    assert calls == ["O0", "O3"] * 5 and set(medians) == {"O0", "O3"}
    assert all(m >= 0 for m in medians.values())
    clock = iter(range(1000))
    monkeypatch.setattr(paper.time, "perf_counter",
                        lambda: float(next(clock)) * paper.SLOW_SECONDS * 2)
    calls.clear()
    medians = paper.interleaved_medians(fns, runs=20, warmup=1)
    assert calls == ["O0", "O3"] * (1 + paper.SLOW_RUNS)
    assert medians == {"O0": paper.SLOW_SECONDS * 2, "O3": paper.SLOW_SECONDS * 2}
