"""Quantization benchmarks: the paper's Table 2 analogue on digits, and ResNet-18 (issue 29).

**Table 2 analogue** (the default; needs the ``quantize`` extra, scikit-learn, whose wheel
ships the ``load_digits`` images, and onnxruntime for its column): a small CNN (conv 1→16,
relu, conv 16→32, relu, 2×2 max pool, dense 512→10) is trained on 1,200 of the 1,797 8×8
digits with **our own** ``ad.grad`` (reverse mode, run on the oracle) and plain SGD with
momentum, then quantized by :func:`passes.quantize.quantize` under 8/16, 8/32 and 16/32
with each calibrator (calibration: 199 training images) and evaluated on the 597 others.
A row with TVM's fixed global scale 8.0 (no dataset, so no overflow-aware sweep) shows the
collapse of the true int16 / int32 accumulators. Beside it, onnxruntime's static int8
quantization (``quantize_static``, QDQ, the same calibration images) of the same weights.

**ResNet-18** (``--resnet``): for ``models.get("resnet18")`` (seeded weights), per calibrator:

* the time of ``passes.quantize.quantize`` on the oracle with ``--calib`` calibration
  images (default 2; random N(0, 1) images, the model is untrained);
* on ``--images`` other random images (default 8): how often the quantized model's top-1
  class equals the float model's, and the cosine between the two logit vectors (min and
  mean), with the quantized model run on the oracle (``--backend oracle``, about 35 s per
  image: numpy's integer convolutions are slow) or on the TVM backend (``--backend tvm``:
  its kernels are compiled first).

The scheme is ``--bits`` (default 8/32) with the default ``QConfig`` otherwise (the first
convolution stays float, ``skip_conv_layers=(0,)``). Usage:
``python bench/quantize.py [--epochs N]`` (the Table 2 analogue) and
``python bench/quantize.py --resnet [--calibrate kl global_scale mse] [--bits 8/32]
[--images N] [--calib N] [--backend oracle|tvm]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TVM_NUM_THREADS", "2")
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

import numpy as np  # noqa: E402

import models  # noqa: E402
from interpreter import evaluate  # noqa: E402
from passes import bind_params  # noqa: E402
from passes.quantize import QConfig, quantize  # noqa: E402


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


# --- the Table 2 analogue on digits ----------------------------------------------------------

_DIGITS_NET = """
def @main(%x: Tensor[({batch}, 1, 8, 8), float32], {extra}%w1: Tensor[(16, 1, 3, 3), float32],
          %b1: Tensor[(16, 1, 1), float32], %w2: Tensor[(32, 16, 3, 3), float32],
          %b2: Tensor[(32, 1, 1), float32], %wd: Tensor[(10, 512), float32],
          %bd: Tensor[(10), float32]) {{
  %0 = nn.relu(add(nn.conv2d(%x, %w1, padding=[1, 1, 1, 1]), %b1));
  %1 = nn.relu(add(nn.conv2d(%0, %w2, padding=[1, 1, 1, 1]), %b2));
  %2 = nn.batch_flatten(nn.max_pool2d(%1, pool_size=[2, 2], strides=[2, 2]));
  {result}
}}
"""
_LOGITS = "nn.bias_add(nn.dense(%2, %wd, units=10), %bd)"
_WEIGHTS = {"w1": (16, 1, 3, 3), "b1": (16, 1, 1), "w2": (32, 16, 3, 3), "b2": (32, 1, 1),
            "wd": (10, 512), "bd": (10,)}
_EVAL_BATCH = 199


def _digits() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    data = load_digits()
    x = (data.data / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    y = data.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(x))
    x, y = x[order], y[order]
    return x[:1200], y[:1200], x[1200:], y[1200:]


def train_digits(x: np.ndarray, y: np.ndarray, epochs: int, batch: int = 32,
                 lr: float = 0.05, momentum: float = 0.9) -> dict[str, np.ndarray]:
    """SGD with momentum on the softmax cross-entropy; gradients by our ``ad.grad``."""
    from ad import grad
    from semantics import parse

    loss = (f"divide(negative(sum(multiply(%y, nn.log_softmax({_LOGITS})))), "
            f"{float(batch)}f)")
    text = _DIGITS_NET.format(batch=batch, extra=f"%y: Tensor[({batch}, 10), float32], ",
                              result=loss)
    gradient = grad("main", mod=parse(text))
    rng = np.random.default_rng(1)
    weights = {k: (rng.normal(size=s) * np.sqrt(2.0 / np.prod(s[1:] or (s[0],))))
               .astype(np.float32) if k.startswith("w") else np.zeros(s, np.float32)
               for k, s in _WEIGHTS.items()}
    velocity = {k: np.zeros_like(v) for k, v in weights.items()}
    onehot = np.eye(10, dtype=np.float32)[y]
    for epoch in range(epochs):
        order = rng.permutation(len(x))
        total = 0.0
        for start in range(0, len(x) - batch + 1, batch):
            idx = order[start:start + batch]
            value, grads = evaluate(gradient, x[idx], onehot[idx], *weights.values())
            total += float(value)
            for (name, w), g in zip(weights.items(), grads[2:]):
                velocity[name] = momentum * velocity[name] - lr * g
                weights[name] = (w + velocity[name]).astype(np.float32)
        print(f"  epoch {epoch + 1}: mean loss {total / (len(x) // batch):.4f}",
              file=sys.stderr, flush=True)
    return weights


def _accuracy(run, x: np.ndarray, y: np.ndarray) -> float:
    hits = 0
    for start in range(0, len(x), _EVAL_BATCH):
        logits = run(x[start:start + _EVAL_BATCH])
        hits += int(np.sum(np.argmax(logits, axis=1) == y[start:start + _EVAL_BATCH]))
    return 100.0 * hits / len(x)


def _onnx_digits(weights: dict[str, np.ndarray], calib: list[np.ndarray], x: np.ndarray,
                 y: np.ndarray) -> tuple[float, float, float] | str:
    """onnxruntime's static int8 QDQ quantization: (float acc, int8 acc, int8 ms/batch)."""
    try:
        import onnx
        import onnxruntime as ort
        from onnx import TensorProto, helper, numpy_helper
        from onnxruntime.quantization import (
            CalibrationDataReader,
            QuantFormat,
            QuantType,
            quantize_static,
        )
    except ImportError as exc:
        return f"onnxruntime quantization unavailable ({exc})"
    import logging
    import tempfile

    logging.getLogger().setLevel(logging.ERROR)   # quantize_static's pre-processing advice
    inits = [numpy_helper.from_array(weights["w1"], "w1"),
             numpy_helper.from_array(weights["b1"].reshape(16), "b1"),
             numpy_helper.from_array(weights["w2"], "w2"),
             numpy_helper.from_array(weights["b2"].reshape(32), "b2"),
             numpy_helper.from_array(weights["wd"], "wd"),
             numpy_helper.from_array(weights["bd"], "bd")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("MaxPool", ["r2"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "wd", "bd"], ["logits"], transB=1)]
    graph = helper.make_graph(
        nodes, "digits", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                        [_EVAL_BATCH, 1, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [_EVAL_BATCH, 10])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.items = iter([{"x": c} for c in calib])

        def get_next(self):  # noqa: ANN202 - onnxruntime's protocol
            return next(self.items, None)

    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    with tempfile.TemporaryDirectory() as tmp:
        fp, q8 = f"{tmp}/digits.onnx", f"{tmp}/digits_int8.onnx"
        onnx.save(model, fp)
        quantize_static(fp, q8, Reader(), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
        float_sess = ort.InferenceSession(fp, options, providers=["CPUExecutionProvider"])
        int8_sess = ort.InferenceSession(q8, options, providers=["CPUExecutionProvider"])
        float_acc = _accuracy(lambda b: float_sess.run(None, {"x": b})[0], x, y)
        int8_acc = _accuracy(lambda b: int8_sess.run(None, {"x": b})[0], x, y)
        batch = x[:_EVAL_BATCH]
        times = []
        for _ in range(20):
            t0 = time.perf_counter()
            int8_sess.run(None, {"x": batch})
            times.append(time.perf_counter() - t0)
    return float_acc, int8_acc, 1000 * float(np.median(times))


def table2(epochs: int) -> int:
    from semantics import parse

    x_train, y_train, x_test, y_test = _digits()
    t0 = time.perf_counter()
    weights = train_digits(x_train, y_train, epochs)
    print(f"digits CNN trained with ad.grad + SGD (momentum 0.9, lr 0.05, batch 32, {epochs} "
          f"epochs on the oracle) in {time.perf_counter() - t0:.0f} s", flush=True)
    mod = parse(_DIGITS_NET.format(batch=_EVAL_BATCH, extra="", result=_LOGITS))
    float_mod = bind_params(mod, weights)
    float_acc = _accuracy(lambda b: evaluate(float_mod, b), x_test, y_test)
    calib = [x_train[:_EVAL_BATCH]]
    rows = [("float32", "—", float_acc, 0.0, "")]
    schemes = [(8, 16), (8, 32), (16, 32)]
    for m, n in schemes:
        for name in ("global_scale", "mse", "kl"):
            config = QConfig(nbit_input=m, nbit_weight=m, nbit_activation=n, calibrate=name,
                             skip_conv_layers=())
            t0 = time.perf_counter()
            qmod = quantize(mod, weights, config, calib)
            seconds = time.perf_counter() - t0
            acc = _accuracy(lambda b, q=qmod: evaluate(q, b), x_test, y_test)
            note = "overflow-aware sweep" if name == "global_scale" else \
                "per-layer ranges; accumulators unchecked"
            rows.append((f"{m}/{n}", name, acc, seconds, note))
    for m, n in ((8, 16), (16, 32)):
        config = QConfig(nbit_input=m, nbit_weight=m, nbit_activation=n, skip_conv_layers=())
        qmod = quantize(mod, weights, config, None)
        acc = _accuracy(lambda b, q=qmod: evaluate(q, b), x_test, y_test)
        rows.append((f"{m}/{n}", "fixed 8.0", acc, 0.0, "TVM's fixed scale: no sweep"))
    print("\nTable 2 analogue: digits (597 test images), every convolution quantized")
    print(f"{'scheme':<8} {'calibrator':<13} {'accuracy %':>10} {'drop':>6} "
          f"{'quantize s':>10}  note")
    for scheme, name, acc, seconds, note in rows:
        drop = float_acc - acc
        print(f"{scheme:<8} {name:<13} {acc:>10.2f} {drop:>6.2f} {seconds:>10.1f}  {note}")
    peer = _onnx_digits(weights, calib, x_test, y_test)
    if isinstance(peer, str):
        print(f"onnxruntime: {peer}")
    else:
        f_acc, q_acc, ms = peer
        qmod = quantize(mod, weights, QConfig(skip_conv_layers=()), calib)
        from backends.tvm import build

        exe = build(qmod)
        batch = x_test[:_EVAL_BATCH]
        times = []
        for _ in range(20):
            t0 = time.perf_counter()
            exe(batch)
            times.append(time.perf_counter() - t0)
        ours_ms = 1000 * float(np.median(times))
        print(f"onnxruntime quantize_static (QDQ, int8, same calibration): float "
              f"{f_acc:.2f} %, int8 {q_acc:.2f} %, {ms:.2f} ms per {_EVAL_BATCH} images; "
              f"ours 8/32 global_scale on the TVM backend: {ours_ms:.2f} ms")
    return 0


# --- ResNet-18 -------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resnet", action="store_true",
                        help="the ResNet-18 numbers instead of the Table 2 analogue")
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--calibrate", nargs="+", default=["kl"],
                        choices=("global_scale", "mse", "kl"))
    parser.add_argument("--bits", default="8/32", help="m/n (default 8/32)")
    parser.add_argument("--images", type=int, default=8)
    parser.add_argument("--calib", type=int, default=2)
    parser.add_argument("--backend", choices=("oracle", "tvm"), default="oracle")
    args = parser.parse_args(argv)
    if not args.resnet:
        return table2(args.epochs)
    m, n = (int(v) for v in args.bits.split("/"))

    mod, params = models.get("resnet18")
    rng = np.random.default_rng(2026)
    shape = (1, 3, 224, 224)
    calib = [rng.normal(size=shape).astype(np.float32) for _ in range(args.calib)]
    images = [rng.normal(size=shape).astype(np.float32) for _ in range(args.images)]
    float_mod = bind_params(mod, params)
    t0 = time.perf_counter()
    reference = [evaluate(float_mod, x) for x in images]
    print(f"float ResNet-18 on the oracle: {(time.perf_counter() - t0) / len(images):.2f} s "
          f"per image", flush=True)

    print(f"{'calibrator':<13} {'bits':<6} {'quantize s':>10} {'top-1':>7} "
          f"{'min cos':>8} {'mean cos':>8}", flush=True)
    for name in args.calibrate:
        config = QConfig(nbit_input=m, nbit_weight=m, nbit_activation=n, calibrate=name)
        t0 = time.perf_counter()
        qmod = quantize(mod, params, config, calib)
        seconds = time.perf_counter() - t0
        if args.backend == "tvm":
            from backends.tvm import build

            exe = build(qmod)
            outputs = [exe(x) for x in images]
        else:
            outputs = [evaluate(qmod, x) for x in images]
        agree = sum(int(np.argmax(o) == np.argmax(r)) for o, r in zip(outputs, reference))
        cosines = [_cosine(o, r) for o, r in zip(outputs, reference)]
        print(f"{name:<13} {config.bits:<6} {seconds:>10.1f} {agree:>3}/{len(images):<3} "
              f"{min(cosines):>8.4f} {float(np.mean(cosines)):>8.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
