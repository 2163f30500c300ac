"""Reproduce the paper's figures on this machine: ``make paper`` / ``python bench/paper.py``.

Writes one output folder (default ``paper/``) with a Markdown report (``README.md``: every table,
the plots, and the list of figures that could not be produced, each with its reason) and one PNG
per plotted figure:

* **Fig. 2** — the paper's TensorFlow while loop, written as an ONNX ``Loop`` and imported
  (``frontends.onnx``): a tail-recursive local function, run on the oracle against the loop;
* **Fig. 5** — the reverse-mode gradient of the identity function before and after partial
  evaluation and dead-code elimination (``ad.grad``, ``pe.partial_evaluate``);
* **Fig. 10** (SysML Fig. 5) — speedup of ``-O1``/``-O2``/``-O3`` over ``-O0`` per vision model on
  the TVM backend (graph executor);
* **Fig. 11** (vision) and **Fig. 12** (NLP: RNN, GRU, LSTM, CharRNN, TreeLSTM), together the
  SysML version's Fig. 6 — our latency (TVM backend at ``-O3``; the VM for the NLP models)
  against the peers installed here: PyTorch eager, onnxruntime (models exported from the same
  PyTorch modules with ``torch.onnx``) and TVM Relax untuned (``torch.export`` → Relax →
  ``tvm.compile`` with no schedules: the floor); CharRNN's and TreeLSTM's control flow stays in
  Python around an exported cell for the graph-based peers, as a user of those systems would
  write it; reported as ratios measured in the same run.

Figs. 13 (quantized inference on ARM boards) and 14 (VTA on an FPGA) are listed as missing
with the reason, as are GPU numbers.

Protocol: batch 1, two threads everywhere (``torch.set_num_threads(2)``, onnxruntime
``intra_op_num_threads=2``, ``TVM_NUM_THREADS=2``), the same seeded weights and inputs
(``models.get``/``models.example_inputs``), outputs checked against each other before timing,
median of ``--runs`` (default 20) timed runs after ``--warmup`` (default 3) runs, wall-clock time
(5 runs for a configuration slower than a second per run: :data:`SLOW_RUNS`), reported with the
minimum and maximum of those runs (``median [min–max]``; a ratio's range pairs one side's
extremes with the other's, so it bounds every ratio of two runs), and the plots draw that range
as error bars. Each figure states the machine's 1-minute load average before and after it
(``os.getloadavg``); when either exceeds the number of CPUs, the report says so at its top —
the figures were then measured on a machine busy with other work, and their spread shows how
much. Our own
configurations (Fig. 10's optimization levels) are timed in turn, a run of each per round
(:func:`interleaved_medians`), so the machine's drift affects them alike; each peer is timed in
a block of its own, because PyTorch's and onnxruntime's thread pools keep spinning after a run
and slow whatever runs next (ours read 88 ms on ResNet-18 right after onnxruntime, 37 ms
alone).
A figure whose prerequisites are missing (a package not installed, a component failing) is left
out of the output and listed under "Missing" with the reason — never replaced by a placeholder.

Usage: ``python bench/paper.py [--out DIR] [--only fig2 fig5 fig10 vision nlp] [--models NAME ...]
[--runs N] [--warmup N] [--quick]`` (``--quick``: 3 runs, 1 warm-up, for a smoke test).
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
import time
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

os.environ.setdefault("TVM_NUM_THREADS", "2")
os.environ.setdefault("OMP_NUM_THREADS", "2")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench.protocol  # noqa: E402,F401  (thread spinning off before TVM's pool starts)
import models  # noqa: E402
from bench.report import Ratio, Report, Timing, format_load, load_average, table  # noqa: E402
from models import recurrent  # noqa: E402
from semantics import pretty  # noqa: E402

THREADS = 2


class Missing(Exception):
    """A figure (or one system's column) cannot be produced here; the message says why."""


def progress(items: Iterable[Any], desc: str) -> Iterable[Any]:
    try:
        from tqdm import tqdm
    except ImportError:
        return items
    return tqdm(list(items), desc=desc, leave=False)


SLOW_SECONDS = 1.0
SLOW_RUNS = 5
"""A configuration whose warm-up run takes over :data:`SLOW_SECONDS` (our ``-O0`` VGG-16, the
untuned floor) is timed over :data:`SLOW_RUNS` runs instead of ``--runs``: its median is
stable to a few percent at that length, and 20 runs would take minutes."""


def median_time(fn: Callable[[], Any], runs: int, warmup: int) -> Timing:
    """Wall-clock seconds of ``fn()`` (median, min, max) over ``runs`` runs after ``warmup``
    runs (at most :data:`SLOW_RUNS` runs when a warm-up run is slower than
    :data:`SLOW_SECONDS`)."""
    for _ in range(warmup):
        start = time.perf_counter()
        fn()
        if time.perf_counter() - start > SLOW_SECONDS:
            runs = min(runs, SLOW_RUNS)
    times: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
        if len(times) == 1 and warmup == 0 and times[0] > SLOW_SECONDS:
            runs = min(runs, SLOW_RUNS)
            break
    while len(times) < runs:
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return Timing.of(times)


def bar_figure(title: str, groups: list[str], series: dict[str, list[Ratio | None]],
               ylabel: str, baseline: float | None = None) -> Any:
    """A grouped bar chart of ratios with their [min–max] range as error bars (a matplotlib
    ``Figure``, constrained layout: the title — wrapped to the figure's width —, the axis
    labels and the legend get room inside the figure).

    Raises:
        ImportError: matplotlib is not installed.
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    width_in = max(6.0, 1.3 * len(groups) * max(1, len(series)) / 2)
    fig, ax = plt.subplots(figsize=(width_in, 4.5), layout="constrained")
    width = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series.items()):
        xs = [g + i * width for g in range(len(groups))]
        heights = [v.value if v is not None else 0.0 for v in values]
        below = [v.value - v.low if v is not None else 0.0 for v in values]
        above = [v.high - v.value if v is not None else 0.0 for v in values]
        ax.bar(xs, heights, width, label=name, yerr=[below, above], capsize=3,
               error_kw={"elinewidth": 0.8})
    ax.set_xticks([g + width * (len(series) - 1) / 2 for g in range(len(groups))], groups)
    if baseline is not None:
        ax.axhline(baseline, color="black", linewidth=0.8)
    present = [x for vs in series.values() for v in vs if v is not None
               for x in (v.low, v.high) if x > 0]
    if present and max(present) / min(present) > 30:
        ax.set_yscale("log")    # e.g. the untuned floor next to tuned peers
        ylabel += " (log scale)"
    ax.set_ylabel(ylabel)
    # About 0.55 em per character: wrap to the figure's width (12 pt title, 72 pt an inch).
    ax.set_title(textwrap.fill(title, width=max(20, int(width_in * 72 / (0.55 * 12)) - 4)))
    ax.legend(fontsize="small")
    return fig


def bar_plot(path: Path, title: str, groups: list[str], series: dict[str, list[Ratio | None]],
             ylabel: str, baseline: float | None = None) -> bool:
    """:func:`bar_figure` saved as a PNG; False when matplotlib is absent."""
    try:
        fig = bar_figure(title, groups, series, ylabel, baseline)
    except ImportError:
        return False
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


# --- Fig. 2 -----------------------------------------------------------------------------------

def _fig2_model() -> Any:
    """The paper's Fig. 2 loop (``tf.while_loop(c, b, [i, j, k])``) as an ONNX ``Loop``:
    the condition ``c`` is computed once before the loop and again at the end of each body."""
    import onnx
    from onnx import TensorProto, helper

    def cond(prefix: str, i: str, j: str, k: str) -> tuple[list[Any], str]:
        p = prefix
        nodes = [
            helper.make_node("Add", [i, j], [f"{p}ij"]),
            helper.make_node("Less", [f"{p}ij", "ten"], [f"{p}l1"]),
            helper.make_node("Mul", [j, k], [f"{p}jk"]),
            helper.make_node("Less", [f"{p}jk", "hundred"], [f"{p}l2"]),
            helper.make_node("Xor", [f"{p}l1", f"{p}l2"], [f"{p}ne"]),       # not_equal
            helper.make_node("GreaterOrEqual", [k, f"{p}ij"], [f"{p}ge"]),
            helper.make_node("Xor", [f"{p}ne", f"{p}ge"], [f"{p}x"]),
            helper.make_node("Not", [f"{p}x"], [f"{p}c"]),                    # equal
        ]
        return nodes, f"{p}c"

    scalar = [helper.make_tensor_value_info(n, TensorProto.INT32, []) for n in "ijk"]
    body_nodes, body_cond = cond("b_", "i2", "j2", "k2")
    body = helper.make_graph(
        [helper.make_node("Add", ["i", "j"], ["i2"]),
         helper.make_node("Add", ["j", "k"], ["j2"]),
         helper.make_node("Add", ["k", "one"], ["k2"]), *body_nodes,
         helper.make_node("Identity", [body_cond], ["cond_out"])],
        "b",
        [helper.make_tensor_value_info("iter", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []), *scalar],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         *[helper.make_tensor_value_info(f"{n}2", TensorProto.INT32, []) for n in "ijk"]])
    start_nodes, start_cond = cond("c_", "i", "j", "k")
    consts = [helper.make_node("Constant", [], [name], value=helper.make_tensor(
        name, TensorProto.INT32, [], [v])) for name, v in
        (("ten", 10), ("hundred", 100), ("one", 1))]
    graph = helper.make_graph(
        [*consts, *start_nodes,
         helper.make_node("Loop", ["", start_cond, "i", "j", "k"], ["i_out", "j_out", "k_out"],
                          body=body)],
        "while_loop", scalar,
        [helper.make_tensor_value_info(f"{n}_out", TensorProto.INT32, []) for n in "ijk"])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


def fig2(report: Report, args: argparse.Namespace) -> None:
    try:
        import onnx  # noqa: F401
    except ImportError as e:
        raise Missing("the ONNX importer needs the `onnx` package (extra `onnx`)") from e
    from frontends.onnx import from_onnx
    from interpreter import evaluate

    mod, _ = from_onnx(_fig2_model())
    lines = []
    for start in ((1, 1, 5), (1, 1, 1)):    # the paper's start (no iteration), and four steps
        got = tuple(int(np.asarray(v)) for v in
                    evaluate(mod, *(np.asarray(v, dtype=np.int32) for v in start)))
        i, j, k = start                      # tf.while_loop(c, b, [i, j, k]) run by Python
        while ((i + j < 10) != (j * k < 100)) == (k >= i + j):
            i, j, k = i + j, j + k, k + 1
        verdict = "equal to" if got == (i, j, k) else "**different from**"
        lines.append(f"* from `{start}`: the oracle gives `{got}`, {verdict} the Python "
                     f"loop's `{(i, j, k)}`")
    body = (f"The paper's TensorFlow loop written as an ONNX `Loop` and imported by "
            f"`frontends.onnx.from_onnx`: the loop becomes a tail-recursive local function, as "
            f"in the paper's Fig. 2.\n\n```\n{pretty(mod)}\n```\n\n" + "\n".join(lines))
    (report.out / "fig2.md").write_text(body + "\n")
    report.add("Fig. 2: a while loop imported as a tail-recursive function", body)


# --- Fig. 5 -----------------------------------------------------------------------------------

def fig5(report: Report, args: argparse.Namespace) -> None:
    try:
        from ad import grad
        from pe import partial_evaluate
    except ImportError as e:
        raise Missing(f"needs reverse-mode AD and the partial evaluator ({e})") from e
    from semantics import alpha_equal, parse_expr

    identity = parse_expr("fn (%d: Tensor[(), float32]) { %d }")
    before = grad(identity)
    after = partial_evaluate(before, dce=True)
    expected = parse_expr("fn (%d: Tensor[(), float32]) { (%d, (ones_like(%d),)) }")
    verdict = ("alpha-equivalent to the paper's `fn (%d) { (%d, (ones_like(%d),)) }`"
               if alpha_equal(after, expected) else
               "**not** alpha-equivalent to the paper's `fn (%d) { (%d, (ones_like(%d),)) }`")
    body = (f"Reverse-mode gradient of the identity function, as `ad.grad` produces it:\n\n"
            f"```\n{pretty(before)}\n```\n\nAfter `pe.partial_evaluate(..., dce=True)` "
            f"({verdict}):\n\n```\n{pretty(after)}\n```")
    (report.out / "fig5.md").write_text(body + "\n")
    report.add("Fig. 5: partial evaluation of the gradient of the identity", body)


# --- the systems being compared ---------------------------------------------------------------

def _torch() -> Any:
    try:
        import torch
    except ImportError as e:
        raise Missing("PyTorch is not installed (extra `torch`)") from e
    torch.set_num_threads(THREADS)
    return torch


def ours(name: str, opt_level: int, executor: str) -> Callable[..., Any]:
    """Our TVM-backend build of ``name``: a callable taking the model's example inputs."""
    try:
        from backends.tvm import build
    except ImportError as e:
        raise Missing(f"the TVM backend is not available ({e})") from e
    from backends.tvm.kernel.cache import default_cache

    mod, params = models.get(name)
    exe = build(mod, params=params, opt_level=opt_level, executor=executor)
    # The cache writes new kernels and the fused program to disk from a background thread:
    # timing while it runs measures it too (a TreeLSTM run read 4.6 ms instead of 2.9 ms).
    default_cache().flush()
    return exe


def torch_eager(name: str) -> tuple[Callable[..., Any], Callable[[tuple], tuple]]:
    """PyTorch eager on the model's reference module: (runner, input converter)."""
    torch = _torch()
    from models import torch_reference as tr

    _, params = models.get(name)
    net = tr.module(name, params)

    if name in models.VISION:
        def run(x: Any) -> Any:
            with torch.no_grad():
                return net(x)
        return run, lambda inputs: (torch.from_numpy(inputs[0]),)
    if name in ("rnn", "gru", "lstm"):
        def run_seq(xs: Any) -> Any:
            with torch.no_grad():
                return net(xs)
        return run_seq, lambda inputs: (torch.from_numpy(inputs[0]),)
    if name == "char_rnn":
        def gen(cat: Any, letter: Any) -> Any:
            with torch.no_grad():
                return tr.char_rnn_generate(net, cat, letter)
        return gen, lambda inputs: tuple(torch.from_numpy(a) for a in inputs)

    def tree(t: Any) -> Any:
        with torch.no_grad():
            return tr.tree_lstm_run(net, t)
    return tree, lambda inputs: (_tree_tuple(inputs[0], torch),)


def _export_example(name: str, torch: Any) -> tuple:
    """The example arguments a peer's exported graph is traced with: the whole model for the
    vision and sequence models, one cell for CharRNN and TreeLSTM (their control flow stays in
    Python around the cell, as a user of those systems would write it)."""
    if name in models.VISION:
        return (torch.from_numpy(models.example_inputs(name)[0]),)
    if name in ("rnn", "gru", "lstm"):
        return (torch.zeros(models.SEQUENCE_STEPS, 1, recurrent.LM_SIZE),)
    if name == "char_rnn":
        return (torch.zeros(1, recurrent.CHAR_CATEGORIES),
                torch.zeros(1, recurrent.CHAR_LETTERS), torch.zeros(1, recurrent.CHAR_HIDDEN))
    return (torch.zeros(1, recurrent.TREE_INPUT), torch.zeros(2, recurrent.TREE_HIDDEN),
            torch.zeros(2, recurrent.TREE_HIDDEN))


def _around_graph(name: str, call: Callable[..., list[np.ndarray]], torch: Any
                  ) -> tuple[Callable[..., Any], Callable[[tuple], tuple]]:
    """A runner of model ``name`` built on ``call`` (numpy arrays in, a list of numpy arrays
    out: one run of the exported graph), and its input converter."""
    from models import torch_reference as tr

    if name in models.VISION or name in ("rnn", "gru", "lstm"):
        return (lambda *a: call(*a)[0]), (lambda inputs: inputs)
    if name == "char_rnn":
        def cell(cat: Any, letter: Any, hidden: Any) -> tuple:
            logp, h = call(np.asarray(cat), np.asarray(letter), np.asarray(hidden))
            return torch.from_numpy(logp), torch.from_numpy(h)
        return ((lambda cat, letter: tr.char_rnn_generate(cell, cat, letter)),
                lambda inputs: tuple(torch.from_numpy(a) for a in inputs))

    def tree_cell(x: Any, ch: Any, cc: Any) -> tuple:
        h, c = call(np.asarray(x), np.asarray(ch), np.asarray(cc))
        return torch.from_numpy(h), torch.from_numpy(c)
    return ((lambda t: tr.tree_lstm_run(tree_cell, t)),
            lambda inputs: (_tree_tuple(inputs[0], torch),))


def _tree_dims(torch: Any) -> dict[str, Any] | None:
    kids = torch.export.Dim("children", min=0)
    return {"x": None, "child_h": {0: kids}, "child_c": {0: kids}}


def onnx_runtime(name: str, workdir: Path) -> tuple[Callable[..., Any], Callable[[tuple], tuple]]:
    """onnxruntime on the model exported from its PyTorch module: (runner, input converter)."""
    torch = _torch()
    try:
        import onnxruntime as ort
    except ImportError as e:
        raise Missing("onnxruntime is not installed (extra `bench`)") from e
    from models import torch_reference as tr

    _, params = models.get(name)
    net = tr.module(name, params)
    path = workdir / f"{name}.onnx"
    if not path.exists():
        dynamic = _tree_dims(torch) if name == "tree_lstm" else None
        with _quiet():
            torch.onnx.export(net, _export_example(name, torch), str(path), dynamo=True,
                              external_data=False, dynamic_shapes=dynamic)
    from bench.protocol import ort_session_options

    sess = ort.InferenceSession(str(path), ort_session_options(THREADS),
                                providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]

    def call(*arrays: np.ndarray) -> list[np.ndarray]:
        return sess.run(None, dict(zip(names, arrays)))

    return _around_graph(name, call, torch)


def relax_floor(name: str) -> tuple[Callable[..., Any], Callable[[tuple], tuple]]:
    """TVM Relax, untuned: the PyTorch module through ``torch.export`` and Relax's importer,
    compiled by ``tvm.compile`` for the host CPU with no schedules (every kernel a naive loop
    nest) and run by Relax's VM — the floor a TVM user starts from without tuning."""
    torch = _torch()
    try:
        import tvm
        from tvm import relax
        from tvm.relax.frontend.torch import from_exported_program
    except ImportError as e:
        raise Missing(f"TVM Relax is not available ({e})") from e
    from backends.tvm.target import host_target
    from models import torch_reference as tr

    _, params = models.get(name)
    net = tr.module(name, params).eval()
    dynamic = _tree_dims(torch) if name == "tree_lstm" else None
    with _quiet():
        ep = torch.export.export(net, _export_example(name, torch), dynamic_shapes=dynamic)
        rmod = from_exported_program(ep, keep_params_as_input=False)
        lib = tvm.compile(rmod, target=host_target().tvm())
    vm = relax.VirtualMachine(lib, tvm.cpu())
    main = vm["main"]

    def call(*arrays: np.ndarray) -> list[np.ndarray]:
        out = main(*[tvm.runtime.tensor(np.ascontiguousarray(a)) for a in arrays])
        if hasattr(out, "numpy"):
            return [out.numpy()]
        return [o.numpy() for o in out]

    return _around_graph(name, call, torch)


class _quiet:
    """Silence the exporter's progress lines."""

    def __enter__(self) -> None:
        import contextlib
        import io
        self._ctx = [contextlib.redirect_stdout(io.StringIO()),
                     contextlib.redirect_stderr(io.StringIO())]
        for c in self._ctx:
            c.__enter__()

    def __exit__(self, *exc: Any) -> None:
        for c in reversed(self._ctx):
            c.__exit__(*exc)


def _list_items(v: Any) -> list[Any]:
    out = []
    while v.name == "Cons":
        out.append(v.fields[0])
        v = v.fields[1]
    return out


def _tree_tuple(v: Any, torch: Any) -> tuple:
    """A ``Rose`` value as nested ``(tensor, [children])`` pairs (explicit stack)."""
    done: dict[int, tuple] = {}
    stack = [(v, False)]
    while stack:
        node, ready = stack.pop()
        kids = _list_items(node.fields[1])
        if ready:
            done[id(node)] = (torch.from_numpy(node.fields[0]), [done.pop(id(k)) for k in kids])
        else:
            stack.append((node, True))
            stack.extend((k, False) for k in kids)
    return done[id(v)]


def _as_array(result: Any) -> np.ndarray:
    if hasattr(result, "detach"):
        return result.detach().numpy()
    if hasattr(result, "name") and hasattr(result, "fields"):
        return np.asarray([int(x) for x in _list_items(result)])
    if isinstance(result, list):
        return np.asarray(result)
    return np.asarray(result)


# --- Figs. 11/12 and 6/13: latency against the peers -----------------------------------------

FLOOR_RUNS = 5
"""Timed runs of the untuned TVM Relax floor (after one warm-up): its naive loops take up to
seconds per run, and it is a floor, not a competitor."""


def latency(report: Report, args: argparse.Namespace, names: list[str], title: str,
            stem: str) -> None:
    peers_known: list[tuple[str, Callable[[str], Any], int, int]] = [
        ("PyTorch", torch_eager, args.runs, args.warmup),
        ("onnxruntime", lambda n: onnx_runtime(n, workdir), args.runs, args.warmup),
        ("TVM Relax untuned", relax_floor, min(args.runs, FLOOR_RUNS), 1),
    ]
    labels = [p[0] for p in peers_known]
    header = (["model", "ours (ms)"] + [f"{lb} (ms)" for lb in labels]
              + [f"{lb} / ours" for lb in labels])
    rows: list[list[Any]] = []
    ratios: dict[str, list[Ratio | None]] = {f"{lb} / ours": [] for lb in labels}
    workdir = report.out / "onnx"
    workdir.mkdir(exist_ok=True)
    for name in progress(names, title):
        inputs = models.example_inputs(name)
        try:
            exe = ours(name, 3, "graph" if name in models.VISION else "vm")
        except Missing as e:
            report.lack(f"{title}: {name}", str(e))
            continue
        except Exception as e:  # a failure of ours is reported, not hidden
            report.lack(f"{title}: {name}", f"our build failed: {type(e).__name__}: {e}")
            continue
        expect = _as_array(exe(*inputs))
        t_ours = median_time(lambda exe=exe, inputs=inputs: exe(*inputs), args.runs, args.warmup)
        peers: list[Timing | None] = []
        for label, factory, runs, warmup in peers_known:
            try:
                run, convert = factory(name)
                peer_in = convert(inputs)
                got = _as_array(run(*peer_in))
                np.testing.assert_allclose(got, expect, rtol=1e-3,
                                           atol=1e-3 * max(1.0, float(np.abs(expect).max())))
                peers.append(median_time(lambda run=run, a=peer_in: run(*a), runs, warmup))
            except Missing as e:
                report.lack(f"{title}: {label} on {name}", str(e))
                peers.append(None)
            except AssertionError as e:
                worst = [ln.strip() for ln in str(e).splitlines() if "Max absolute" in ln]
                report.lack(f"{title}: {label} on {name}",
                            f"its output differs from ours beyond rtol=1e-3 "
                            f"({worst[0] if worst else 'see the log'}); not timed")
                peers.append(None)
            except Exception as e:
                report.lack(f"{title}: {label} on {name}",
                            f"{type(e).__name__}: {str(e).strip().splitlines()[0][:200]}")
                peers.append(None)
        r = [None if p is None else Ratio.of(p, t_ours) for p in peers]
        for lb, x in zip(labels, r):
            ratios[f"{lb} / ours"].append(x)
        rows.append([name, t_ours.ms()] + [None if p is None else p.ms() for p in peers]
                    + [("—" if x is None else x.cell()) for x in r])
    if not rows:
        raise Missing("no model could be measured (see the entries above)")
    rows = [[("—" if v is None else v) for v in row] for row in rows]
    done = [row[0] for row in rows]
    png = report.out / f"{stem}.png"
    plotted = bar_plot(png, f"{title}: peer latency / ours (higher is better for us)", done,
                       ratios, "ratio", baseline=1.0)
    body = table(header, rows)
    body += (f"\n\nMedian [min–max] of {args.runs} runs after {args.warmup} warm-up runs (the "
             f"untuned TVM Relax floor: {min(args.runs, FLOOR_RUNS)} runs after 1; a "
             f"configuration slower than {SLOW_SECONDS:g} s a run: {SLOW_RUNS} runs), batch 1, "
             f"{THREADS} threads; ratios above 1 mean we are faster (a ratio's range: the "
             f"slowest run of one side over the fastest of the other, and back).")
    if plotted:
        body += f"\n\n![{title}]({png.name})"
    (report.out / f"{stem}.md").write_text(body + "\n")
    report.add(title, body)


def interleaved_medians(fns: dict[str, Callable[[], Any]], runs: int, warmup: int
                        ) -> dict[str, float]:
    """The medians of :func:`interleaved_timings`."""
    return {key: t.median for key, t in interleaved_timings(fns, runs, warmup).items()}


def interleaved_timings(fns: dict[str, Callable[[], Any]], runs: int, warmup: int
                        ) -> dict[str, Timing]:
    """Wall-clock seconds (median, min, max) of each of several configurations of *our own*
    executables, timed in turn, one run of each per round (at most :data:`SLOW_RUNS` rounds
    when a warm-up run of any is slower than :data:`SLOW_SECONDS`).

    On this shared machine a median drifts 30-80 % within minutes, so timing configurations in
    blocks measured the machine's phase as much as the configuration (the same ``-O3``
    ResNet-18 read 35 and 63 ms in one ``make paper`` run, and VGG-16's ``-O3`` came out slower
    than its ``-O0``). In turn, every configuration sees the same phases and their ratio holds.
    Only for our own executables: a peer's runtime leaves its thread pool spinning after each
    run, which slows whatever runs next (see the module docstring's protocol)."""
    for _ in range(warmup):
        for fn in fns.values():
            start = time.perf_counter()
            fn()
            if time.perf_counter() - start > SLOW_SECONDS:
                runs = min(runs, SLOW_RUNS)
    times: dict[str, list[float]] = {key: [] for key in fns}
    for _ in range(runs):
        for key, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[key].append(time.perf_counter() - start)
    return {key: Timing.of(t) for key, t in times.items()}


# --- Fig. 10: optimization levels ------------------------------------------------------------

def fig10(report: Report, args: argparse.Namespace, names: list[str]) -> None:
    rows: list[list[Any]] = []
    series: dict[str, list[Ratio | None]] = {"-O1": [], "-O2": [], "-O3": []}
    for name in progress(names, "Fig. 10"):
        inputs = models.example_inputs(name)
        exes = [ours(name, level, "graph") for level in range(4)]
        timings = interleaved_timings(
            {f"O{level}": (lambda exe=exe, a=inputs: exe(*a)) for level, exe in enumerate(exes)},
            args.runs, args.warmup)
        del exes
        times = [timings[f"O{level}"] for level in range(4)]
        speedups = [Ratio.of(times[0], t) for t in times[1:]]
        for key, s in zip(series, speedups):
            series[key].append(s)
        rows.append([name, times[0].ms()] + [s.cell() for s in speedups])
    png = report.out / "fig10.png"
    plotted = bar_plot(png, "Speedup over -O0 (TVM backend, graph executor)", names, series,
                       "speedup", baseline=1.0)
    body = table(["model", "-O0 (ms)", "-O1 speedup", "-O2 speedup", "-O3 speedup"], rows)
    body += (f"\n\nMedian [min–max] of {args.runs} rounds after {args.warmup} warm-up rounds "
             f"(the four levels timed in turn, a run of each per round); a speedup's range: "
             f"the slowest -O0 run over the fastest run of the level, and back.")
    if plotted:
        body += "\n\n![Fig. 10](fig10.png)"
    (report.out / "fig10.md").write_text(body + "\n")
    report.add("Fig. 10: speedup of -O1/-O2/-O3 over -O0 (vision)", body)


VISION_TITLE = "Fig. 11 / SysML Fig. 6, vision: latency against the peers"
NLP_TITLE = "Fig. 12 / SysML Fig. 6, NLP: latency against the peers"
NOT_REPRODUCED = [
    ("Fig. 13 (quantized inference on ARM boards)",
     "needs the quantization flow (a later issue) and a Raspberry Pi 3 / RK3399; no ARM board "
     "is attached to this machine"),
    ("Fig. 14 (VTA on an Ultra-96 FPGA)",
     "no FPGA is attached: bench/vta.py (paper/vta.md) gives the analogue from the VTA "
     "simulator's cycle model against an assumed Cortex-A53, not a measurement"),
    ("GPU numbers (every figure of the paper ran on a GTX 1080 Ti or Titan-V)",
     "no GPU is available to this project: every number here is this machine's CPU"),
]
"""The paper's figures this command does not produce, with the reason (always listed)."""


TIMED = ("fig10", "vision", "nlp")
"""The steps whose figures are timings (their load average is reported)."""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="paper", help="output folder (default: paper/)")
    ap.add_argument("--only", nargs="*", default=["fig2", "fig5", "fig10", "vision", "nlp"],
                    choices=["fig2", "fig5", "fig10", "vision", "nlp"])
    ap.add_argument("--models", nargs="*", default=None, help="restrict to these models")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="3 runs after 1 warm-up (smoke test)")
    args = ap.parse_args(argv)
    if args.quick:
        args.runs, args.warmup = 3, 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = Report(out)
    chosen = args.models or models.names()
    vision = [n for n in models.VISION if n in chosen]
    nlp = [n for n in models.NLP if n in chosen]
    steps: list[tuple[str, str, Callable[[], None]]] = [
        ("fig2", "Fig. 2", lambda: fig2(report, args)),
        ("fig5", "Fig. 5", lambda: fig5(report, args)),
        ("fig10", "Fig. 10", lambda: fig10(report, args, vision)),
        ("vision", VISION_TITLE,
         lambda: latency(report, args, vision, VISION_TITLE, "vision")),
        ("nlp", NLP_TITLE, lambda: latency(report, args, nlp, NLP_TITLE, "nlp")),
    ]
    started = time.perf_counter()
    chosen_steps = [step for step in steps if step[0] in args.only]
    for i, (key, title, run) in enumerate(chosen_steps, start=1):
        before = load_average()
        began = time.perf_counter()
        print(f"[{i}/{len(chosen_steps)}] {title}: started (load average {format_load(before)}, "
              f"{os.cpu_count()} CPUs)", file=sys.stderr, flush=True)
        sections = len(report.sections)
        try:
            run()
        except Missing as e:
            report.lack(title, str(e))
        except Exception as e:
            report.lack(title, f"failed: {type(e).__name__}: {e}")
            traceback.print_exc()
        after = load_average()
        if key in TIMED:
            report.loads.append((title, before, after))
            note = (f"\n1-minute load average before → after this figure: {format_load(before)} → "
                    f"{format_load(after)} ({os.cpu_count()} CPUs).\n")
            for j in range(sections, len(report.sections)):
                report.sections[j] += note
            figure = report.out / f"{key}.md"
            if figure.exists():
                with figure.open("a", encoding="utf-8") as f:
                    f.write(note)
        print(f"[{i}/{len(chosen_steps)}] {title}: done in {time.perf_counter() - began:.0f} s "
              f"(load average {format_load(after)})", file=sys.stderr, flush=True)
    header = (f"# The paper's figures, reproduced on this machine\n\nGenerated by "
              f"`bench/paper.py` in {time.perf_counter() - started:.0f} s "
              f"({os.cpu_count()} CPUs, {THREADS} threads per system). See REPRODUCING.md for "
              f"what the paper reports and why our numbers differ.")
    for what, why in NOT_REPRODUCED:
        report.lack(what, why)
    path = report.write(header)
    print(path.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
