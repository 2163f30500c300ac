"""Int8 against float32 kernels on the TVM backend: a ResNet-18-like 3×3 convolution and a
dense layer, each with the realized requantize epilogue (issue 29, item 6).

Run: ``PYTHONPATH=. python bench/int8_kernels.py [--runs N]``.  For each workload the int8
program (``int8 × int8 → int32`` accumulation, ``+ bias + 2**(k-1)``, ``right_shift``,
``clip``, ``cast`` to int8, ``relu`` — the shape ``passes.quantize.realize`` emits) and the
float32 program (``conv/dense + bias + relu``) are built with ``backends.tvm.build`` at -O3
with bound weights, checked against the oracle once (int8: exactly), then timed in turn
(interleaved, so the machine's drift affects both alike).  Prints the median with min–max
in milliseconds, the ratio of medians, and the load average before and after.

``--models resnet18 mobilenet`` times whole networks instead (issue 29's latency bullet), in
one process, batch 1, two threads: the realized int8 program
(``passes.quantize.quantize`` with the default ``QConfig``, calibrated on two random
images) built at -O3, our float32 build of the same model, and onnxruntime's int8 model of
the same weights (the float program after ``passes.quantize.annotate.prepare`` exported to
ONNX by :func:`to_onnx`, then ``quantize_static`` in QDQ format, QInt8 activations and
weights, on the same calibration images), and, as the baseline of the byte-pair path
(``vpmaddubsw`` on data known to lie in [0, 127], ``passes.value_range``), the int8
program built without it (``int8-wd``: every int8 convolution on ``vpmaddwd``). TVM's pool
does not spin
(``TVM_THREAD_POOL_SPIN_COUNT=0``) and neither does onnxruntime's
(``session.intra_op.allow_spinning=0``): on a shared machine a spinning pool steals the
core the other thread needs. The four run in interleaved blocks (``--blocks`` × ``--runs``
calls each); min/median/max over all calls, and the load average before and after.
"""

from __future__ import annotations

import argparse
import functools
import os

os.environ.setdefault("TVM_NUM_THREADS", "2")
os.environ.setdefault("TVM_THREAD_POOL_SPIN_COUNT", "0")
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

# the repository first: bench/ holds modules named like packages (interpreter.py)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
if sys.path[1:2] == [str(Path(__file__).resolve().parent)]:
    del sys.path[1]

from backends.tvm import build  # noqa: E402

CONV_INT8 = """def @main(%x: Tensor[(1, 64, 56, 56), int8], %w: Tensor[(64, 64, 3, 3), int8],
          %b: Tensor[(64, 1, 1), int32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1], channels=64, kernel_size=[3, 3], out_dtype="int32");
  %1 = add(%0, %b);
  %2 = right_shift(add(%1, 512), 10);
  nn.relu(cast(clip(%2, a_min=-127f, a_max=127f), dtype="int8"))
}"""

CONV_F32 = """def @main(%x: Tensor[(1, 64, 56, 56), float32], %w: Tensor[(64, 64, 3, 3), float32],
          %b: Tensor[(64, 1, 1), float32]) {
  nn.relu(add(nn.conv2d(%x, %w, padding=[1, 1], channels=64, kernel_size=[3, 3]), %b))
}"""

DENSE_INT8 = """def @main(%x: Tensor[(16, 1024), int8], %w: Tensor[(1024, 1024), int8],
          %b: Tensor[(1024), int32]) {
  %0 = add(nn.dense(%x, %w, units=1024, out_dtype="int32"), %b);
  %1 = right_shift(add(%0, 512), 10);
  nn.relu(cast(clip(%1, a_min=-127f, a_max=127f), dtype="int8"))
}"""

DENSE_F32 = """def @main(%x: Tensor[(16, 1024), float32], %w: Tensor[(1024, 1024), float32],
          %b: Tensor[(1024), float32]) {
  nn.relu(add(nn.dense(%x, %w, units=1024), %b))
}"""


def _workload(text: str, shapes: dict[str, tuple[int, ...]], dtype: str, seed: int
              ) -> tuple[str, dict[str, np.ndarray], np.ndarray]:
    rng = np.random.default_rng(seed)

    def draw(shape: tuple[int, ...], bias: bool) -> np.ndarray:
        if dtype == "int8":
            if bias:
                return rng.integers(-2000, 2000, shape).astype("int32")
            return rng.integers(-128, 128, shape).astype("int8")
        return rng.standard_normal(shape).astype("float32")

    params = {"w": draw(shapes["w"], False), "b": draw(shapes["b"], True)}
    return text, params, draw(shapes["x"], False)


def _timings(fns: dict[str, Callable[[], Any]], runs: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {k: [] for k in fns}
    for fn in fns.values():
        fn()                                   # warm up
    for _ in range(runs):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            out[name].append((time.perf_counter() - start) * 1e3)
    return out


def _report(label: str, times: dict[str, list[float]]) -> None:
    med = {k: float(np.median(v)) for k, v in times.items()}
    for k, v in times.items():
        print(f"{label:24s} {k:9s} median {med[k]:8.3f} ms  (min {min(v):.3f}, "
              f"max {max(v):.3f}, {len(v)} runs)")
    names = list(times)
    for other in names[1:]:
        print(f"{label:24s} {names[0]}/{other} time ratio {med[names[0]] / med[other]:.2f}")


_ONNX_OPS = {"add": "Add", "multiply": "Mul", "nn.relu": "Relu", "nn.batch_flatten": "Flatten",
             "nn.global_avg_pool2d": "GlobalAveragePool"}


def _pads(padding: Any) -> list[int]:
    """Relay's padding (1, 2 or 4 values: top, left, bottom, right) as ONNX's pads."""
    p = [int(v) for v in (padding if isinstance(padding, (list, tuple)) else (padding,))]
    t, left, b, r = p * 4 if len(p) == 1 else p * 2 if len(p) == 2 else p
    return [t, left, b, r]


def to_onnx(mod: Any, name: str) -> Any:
    """A float Relay ``main`` of the ops ``passes.quantize.annotate.prepare`` leaves in a
    CNN (conv2d, dense, add, multiply, relu, clip, max pool, global average pool, flatten),
    with its constants as initializers, as an ONNX model (opset 17).

    Raises:
        ValueError: another operator.
    """
    from onnx import TensorProto, helper, numpy_helper

    from semantics.expr import Call, Constant, Op, Var
    from semantics.visitor import post_order

    main = mod["main"]
    names: dict[int, str] = {}
    nodes: list[Any] = []
    inits: list[Any] = []

    def ref(e: Any) -> str:
        if id(e) not in names:
            names[id(e)] = f"c{len(names)}"
            inits.append(numpy_helper.from_array(np.asarray(e.data), names[id(e)]))
        return names[id(e)]

    for node in post_order(main.body):
        if isinstance(node, Var):
            names[id(node)] = node.name_hint
        if not (isinstance(node, Call) and isinstance(node.op, Op)):
            continue
        out = f"t{len(nodes)}"
        args = [ref(a) if isinstance(a, Constant) else names[id(a)] for a in node.args]
        op, at = node.op.name, dict(node.attrs or {})
        if op == "nn.conv2d":
            nodes.append(helper.make_node(
                "Conv", args, [out], strides=list(at.get("strides", (1, 1))),
                pads=_pads(at.get("padding", (0, 0))), group=int(at.get("groups", 1)),
                dilations=list(at.get("dilation", (1, 1)))))
        elif op == "nn.dense":
            nodes.append(helper.make_node("Gemm", args, [out], transB=1))
        elif op == "nn.max_pool2d":
            nodes.append(helper.make_node("MaxPool", args, [out],
                                          kernel_shape=list(at["pool_size"]),
                                          strides=list(at.get("strides", (1, 1))),
                                          pads=_pads(at.get("padding", (0, 0)))))
        elif op == "clip":
            lo = ref(Constant(np.array(at["a_min"], np.float32)))
            hi = ref(Constant(np.array(at["a_max"], np.float32)))
            nodes.append(helper.make_node("Clip", [*args, lo, hi], [out]))
        elif op in _ONNX_OPS:
            nodes.append(helper.make_node(_ONNX_OPS[op], args, [out]))
        else:
            raise ValueError(f"to_onnx: no ONNX form for {op}")
        names[id(node)] = out
    data = main.params[0]
    shape = [int(d) for d in data.type_annotation.shape]
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info(data.name_hint, TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, None)],
        inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _onnxruntime_int8(prepared: Any, name: str, calib: list[np.ndarray]) -> Any:
    """onnxruntime's QDQ int8 session of a prepared float model (as many threads as TVM's
    pool, ``TVM_NUM_THREADS``; no spinning)."""
    import logging
    import tempfile

    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    logging.getLogger().setLevel(logging.ERROR)
    data_name = prepared["main"].params[0].name_hint

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.items = iter([{data_name: c} for c in calib])

        def get_next(self):  # noqa: ANN202 - onnxruntime's protocol
            return next(self.items, None)

    options = ort.SessionOptions()
    options.intra_op_num_threads = int(os.environ["TVM_NUM_THREADS"])
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    with tempfile.TemporaryDirectory() as tmp:
        fp, q8 = f"{tmp}/{name}.onnx", f"{tmp}/{name}_int8.onnx"
        onnx.save(to_onnx(prepared, name), fp)
        quantize_static(fp, q8, Reader(), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
        sess = ort.InferenceSession(q8, options, providers=["CPUExecutionProvider"])
    return lambda x: sess.run(None, {data_name: x})[0]


def _blocks(fns: dict[str, Callable[[], Any]], blocks: int, runs: int
            ) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {k: [] for k in fns}
    for fn in fns.values():
        fn()
    for _ in range(blocks):
        for name, fn in fns.items():
            for _ in range(runs):
                start = time.perf_counter()
                fn()
                out[name].append((time.perf_counter() - start) * 1e3)
    return out


def kernel_table(qmod: Any, x: np.ndarray, repeat: int = 10) -> None:
    """Where the int8 program's time goes: its graph-executor build profiled kernel by
    kernel (the median of ``repeat`` calls of each on its real inputs), grouped by the
    kernel's anchor (depthwise and ordinary convolutions apart), then the slowest kernels."""
    from collections import defaultdict

    exe = build(qmod, opt_level=3, executor="graph")
    exe(x)
    rows = exe.profile(x, repeat=repeat)
    total = sum(r.seconds for r in rows)
    groups: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for r in rows:
        groups[_anchor(r)][0] += r.seconds
        groups[_anchor(r)][1] += 1
    print(f"  {len(rows)} kernels, sum {total * 1e3:.2f} ms")
    print(f"  {'anchor':34s} {'kernels':>7s} {'ms':>8s} {'%':>6s}")
    for name, (secs, count) in sorted(groups.items(), key=lambda kv: -kv[1][0]):
        print(f"  {name:34s} {count:7d} {secs * 1e3:8.2f} {100 * secs / total:6.1f}")
    print("  slowest kernels:")
    for r in sorted(rows, key=lambda r: -r.seconds)[:8]:
        shape = "x".join(map(str, r.shapes[0])) if r.shapes else ""
        print(f"  {r.seconds * 1e3:8.3f} ms  {' '.join(r.ops)[:80]}  -> {shape}")


def _anchor(row: Any) -> str:
    """A kernel's group in :func:`kernel_table`."""
    ops = row.ops
    if "nn.conv2d" in ops:
        kind = "int8" if "right_shift" in ops else "float"
        outputs = int(np.prod(row.shapes[0])) if row.shapes else 0
        # a depthwise 3×3 has 9 multiply-adds per output, a pointwise one the input channels
        if outputs and row.flops <= 2 * 25 * outputs:
            kind += ", depthwise"
        return f"nn.conv2d ({kind})"
    for name in ("nn.dense", "layout_transform", "nn.max_pool2d", "nn.global_avg_pool2d",
                 "nn.avg_pool2d", "nn.batch_flatten"):
        if name in ops:
            return name
    return "elementwise: " + " ".join(sorted(set(ops)))[:20]


def models_latency(names: list[str], blocks: int, runs: int, profile: bool = False) -> None:
    """Int8 against float32 and onnxruntime int8 on whole models (module docstring)."""
    import models
    from passes.quantize import QConfig, quantize
    from passes.quantize.annotate import prepare

    print(f"load average before: {os.getloadavg()}  (TVM_NUM_THREADS="
          f"{os.environ.get('TVM_NUM_THREADS')}, spin count "
          f"{os.environ.get('TVM_THREAD_POOL_SPIN_COUNT')})")
    for name in names:
        mod, params = models.get(name)
        shape = [int(d) for d in mod["main"].params[0].type_annotation.shape]
        rng = np.random.default_rng(0)
        calib = [rng.standard_normal(shape).astype("float32") for _ in range(2)]
        x = rng.standard_normal(shape).astype("float32")
        t0 = time.perf_counter()
        qmod = quantize(mod, params, QConfig(), calib)
        t1 = time.perf_counter()
        exe8 = build(qmod, opt_level=3)
        exe32 = build(mod, params=params, opt_level=3)
        t2 = time.perf_counter()
        ort8 = _onnxruntime_int8(prepare(mod, params), name, calib)
        print(f"{name}: quantize {t1 - t0:.1f} s, two TVM builds {t2 - t1:.1f} s; top-1 "
              f"float32 {int(np.argmax(exe32(x)))}, int8 {int(np.argmax(exe8(x)))}, "
              f"onnxruntime int8 {int(np.argmax(ort8(x)))}")
        if profile:
            kernel_table(qmod, x)
        words = _without_byte_pairs(qmod)
        assert np.array_equal(words(x), exe8(x)), "the byte-pair path changed a value"
        times = _blocks({"int8": functools.partial(exe8, x),
                         "float32": functools.partial(exe32, x),
                         "ort-int8": functools.partial(ort8, x),
                         "int8-wd": functools.partial(words, x)}, blocks, runs)
        _report(name, times)
        print(f"load average: {os.getloadavg()}")


def _without_byte_pairs(qmod: Any) -> Any:
    """The int8 build as it was before the byte-pair path: ``clamp_known_ranges`` off, so
    every int8 convolution runs ``vpmaddwd`` (the baseline of that change, same run)."""
    import passes.value_range as vr
    from backends.tvm.kernel.cache import KernelCache

    saved = vr.clamp_known_ranges
    vr.clamp_known_ranges = lambda mod: mod
    try:
        # an in-memory cache: a disk cache would return the memo of the build above
        return build(qmod, opt_level=3, cache=KernelCache(disk=False))
    finally:
        vr.clamp_known_ranges = saved


def main(argv: list[str] | None = None) -> None:
    from interpreter import evaluate

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--models", nargs="*", metavar="NAME",
                        help="time whole models (resnet18 mobilenet) instead of kernels")
    parser.add_argument("--profile", action="store_true",
                        help="with --models: also the int8 program's time per kernel")
    args = parser.parse_args(argv)
    if args.models:
        models_latency(args.models, args.blocks, args.runs, args.profile)
        return
    conv_shapes = {"x": (1, 64, 56, 56), "w": (64, 64, 3, 3), "b": (64, 1, 1)}
    dense_shapes = {"x": (16, 1024), "w": (1024, 1024), "b": (1024,)}
    cases = {
        "conv 3x3 64->64 56x56": ((CONV_INT8, conv_shapes), (CONV_F32, conv_shapes)),
        "dense 16x1024 -> 1024": ((DENSE_INT8, dense_shapes), (DENSE_F32, dense_shapes)),
    }
    print(f"load average before: {os.getloadavg()}")
    for label, ((t8, s8), (t32, s32)) in cases.items():
        text8, p8, x8 = _workload(t8, s8, "int8", 0)
        text32, p32, x32 = _workload(t32, s32, "float32", 0)
        exe8 = build(text8, params=p8)
        exe32 = build(text32, params=p32)
        assert np.array_equal(exe8(x8), evaluate(text8, x8, p8["w"], p8["b"])), label
        times = _timings({"int8": functools.partial(exe8, x8),
                          "float32": functools.partial(exe32, x32)}, args.runs)
        _report(label, times)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
