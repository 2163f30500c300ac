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
    ours = _median_min_max(cells["ours (ms)"])
    for system in ("PyTorch", "onnxruntime", "TVM Relax untuned"):
        peer = _median_min_max(cells[f"{system} (ms)"])
        ratio = _median_min_max(cells[f"{system} / ours"])
        assert ratio[0] == pytest.approx(peer[0] / ours[0], rel=0.02)
        assert ratio[1] == pytest.approx(peer[1] / ours[2], rel=0.02)
        assert ratio[2] == pytest.approx(peer[2] / ours[1], rel=0.02)
    text = (tmp_path / "vision.md").read_text()
    assert "Median [min–max]" in text and "1-minute load average before → after" in text


def _median_min_max(cell: str) -> tuple[float, float, float]:
    """``"12.3 [11.9–13]"`` as ``(12.3, 11.9, 13.0)``."""
    median, spread = cell.split(" [")
    low, high = spread.rstrip("]").split("–")
    assert float(low) <= float(median) <= float(high), cell
    return float(median), float(low), float(high)


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


def test_timings_report_median_min_max_and_ratios_bound_every_pair() -> None:
    paper = _paper()
    t = paper.Timing.of([0.003, 0.001, 0.002, 0.010])
    assert (t.median, t.low, t.high, t.runs) == (0.0025, 0.001, 0.010, 4)
    assert t.ms() == "2.5 [1–10]"
    r = paper.Ratio.of(paper.Timing.of([4.0, 6.0]), paper.Timing.of([1.0, 2.0]))
    assert (r.value, r.low, r.high) == (pytest.approx(10 / 3), 2.0, 6.0)
    timings = paper.interleaved_timings({"a": lambda: None}, runs=3, warmup=0)
    assert timings["a"].runs == 3 and timings["a"].low <= timings["a"].median


def test_a_loaded_machine_is_announced_at_the_top(tmp_path: Path, monkeypatch) -> None:
    paper = _paper()
    report = paper.Report(tmp_path)
    cpus = paper.os.cpu_count() or 1
    report.loads.append(("Fig. 10", 0.5, 0.7))
    report.add("Fig. 10", "a table")
    assert "Warning" not in report.write("# header").read_text()
    report.loads.append(("Fig. 11", cpus + 3.0, 1.0))
    text = report.write("# header").read_text()
    assert text.index("**Warning: the machine was loaded beyond its") < text.index("## Fig. 10")
    assert f"Fig. 11: {cpus + 3.0:.2f} → 1.00" in text and "Fig. 10:" not in text.split("\n")[2]


def test_each_figure_prints_a_progress_line(tmp_path: Path, capsys) -> None:
    paper = _paper()
    assert paper.main(["--out", str(tmp_path), "--only", "fig5"]) == 0
    err = capsys.readouterr().err
    assert "[1/1] Fig. 5: started (load average" in err and "[1/1] Fig. 5: done in" in err


def test_plot_titles_and_labels_fit_inside_the_figure() -> None:
    """The plots are drawn from small fake results (no benchmark runs): the wrapped title,
    the axis labels, the tick labels and the legend lie inside the figure's bounding box, and
    every bar has its [min–max] error bar."""
    pytest.importorskip("matplotlib", reason="the plots need matplotlib (extra `docs`/`bench`)")
    paper = _paper()
    fake = {f"{peer} / ours": [paper.Ratio(v, v * 0.8, v * 1.3) for v in values]
            for peer, values in (("PyTorch", [1.2, 3.4, 0.9, 2.0]),
                                 ("onnxruntime", [0.7, 1.1, 1.5, 0.95]),
                                 ("TVM Relax untuned", [40.0, 90.0, 12.0, 300.0]))}
    groups = ["dqn", "mobilenet", "resnet18", "vgg16"]
    for title, series in ((paper.VISION_TITLE + ": peer latency / ours (higher is better "
                           "for us)", fake),
                          ("Speedup over -O0 (TVM backend, graph executor)",
                           {"-O1": fake["PyTorch / ours"][:2],
                            "-O3": fake["onnxruntime / ours"][:2]})):
        names = groups[:len(next(iter(series.values())))]
        fig = paper.bar_figure(title, names, series, "ratio", baseline=1.0)
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        box = fig.bbox
        ax = fig.axes[0]
        # Everything the axes draw (title, labels, drawn tick labels, legend), and the title
        # and legend on their own.
        for ext in (ax.get_tightbbox(renderer), ax.title.get_window_extent(renderer),
                    ax.get_legend().get_window_extent(renderer)):
            assert box.x0 - 0.5 <= ext.x0 and ext.x1 <= box.x1 + 0.5, (title, ext)
            assert box.y0 - 0.5 <= ext.y0 and ext.y1 <= box.y1 + 0.5, (title, ext)
        assert ax.title.get_text().replace("\n", " ") == title
        bars = sum(len(c) for c in ax.containers if type(c).__name__ == "BarContainer")
        errorbars = [c for c in ax.containers if type(c).__name__ == "ErrorbarContainer"]
        assert bars == sum(len(v) for v in series.values()) and len(errorbars) == len(series)
        import matplotlib.pyplot as plt

        plt.close(fig)
