"""The real models the ``onnx`` package ships (``onnx/backend/test/data/light/``) with their
expected outputs: import, type-check and run on the oracle.

The input is the one ONNX's backend test runner generates for these models
(``arange(n).reshape(shape) / n`` in float32); the weights are the models' own
``ConstantOfShape`` fills. Tolerances are the runner's (``rtol`` 1e-3, DenseNet 2e-3) with
``atol`` 1e-5 (the runner's 1e-7 is below float32 noise of a different summation order).
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

NAMES = ("bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
         "shufflenet", "squeezenet", "vgg19", "zfnet512")
RTOL = {"densenet121": 2e-3}


def light_dir() -> str:
    """The directory of the light models in the installed ``onnx`` package."""
    import onnx
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


def load(name: str) -> tuple[Any, list[np.ndarray], list[np.ndarray]]:
    """``(model, inputs, expected_outputs)`` of light model ``name``."""
    import onnx
    from onnx import numpy_helper

    path = os.path.join(light_dir(), f"light_{name}.onnx")
    model = onnx.load(path)
    inits = {i.name for i in model.graph.initializer}
    inputs = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        shape = tuple(d.dim_value if d.HasField("dim_value") else 1
                      for d in vi.type.tensor_type.shape.dim)
        n = int(np.prod(shape))
        inputs.append((np.arange(n).reshape(shape) / n).astype(np.float32))
    outputs = []
    for i in range(len(model.graph.output)):
        t = onnx.TensorProto()
        with open(os.path.join(light_dir(), f"light_{name}_output_{i}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        outputs.append(numpy_helper.to_array(t))
    return model, inputs, outputs


def run(name: str) -> dict[str, Any]:
    """Import, check and evaluate light model ``name``; returns timings and the max error.

    Raises:
        AssertionError: the oracle's output differs from the expected output.
    """
    from frontends.onnx import from_onnx
    from interpreter import evaluate
    from typechecker import check

    model, inputs, expected = load(name)
    t0 = time.perf_counter()
    mod, params = from_onnx(model)
    t1 = time.perf_counter()
    check(mod)
    t2 = time.perf_counter()
    got = evaluate(mod, *inputs, *params.values(), check=False)
    t3 = time.perf_counter()
    results = list(got) if isinstance(got, tuple) else [got]
    err = 0.0
    for g, want in zip(results, expected):
        np.testing.assert_allclose(g, want, rtol=RTOL.get(name, 1e-3), atol=1e-5)
        err = max(err, float(np.max(np.abs(g - want))))
    return {"name": name, "import_s": t1 - t0, "check_s": t2 - t1, "eval_s": t3 - t2,
            "max_abs_err": err, "nodes": len(model.graph.node)}


def randomized(name: str, seed: int = 0) -> Any:
    """Light model ``name`` with its ``ConstantOfShape`` weights replaced by seeded random
    initializers (``N(0, 1/fan_in)`` for weights of rank >= 2, ``U(0.5, 1.5)`` for vectors —
    positive, so batch-norm variances stay valid): the shipped expected outputs come from
    constant fills and are uniform, so this is the sharper check (against onnxruntime)."""
    from onnx import helper, numpy_helper

    model, _, _ = load(name)
    g = model.graph
    known = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    shape_inputs = {n.input[0] for n in g.node if n.op_type == "ConstantOfShape"}
    rng = np.random.default_rng(seed)
    nodes = []
    inits = [i for i in g.initializer if i.name not in shape_inputs]
    for n in g.node:
        if n.op_type != "ConstantOfShape":
            nodes.append(n)
            continue
        shape = tuple(int(d) for d in known[n.input[0]])
        if len(shape) >= 2:
            fan_in = int(np.prod(shape[1:]))
            arr = rng.standard_normal(shape) / np.sqrt(fan_in)
        else:
            arr = rng.uniform(0.5, 1.5, shape)
        inits.append(numpy_helper.from_array(arr.astype(np.float32), n.output[0]))
    kept = {i.name for i in inits}
    data = [vi for vi in g.input if vi.name not in kept and vi.name not in shape_inputs]
    graph = helper.make_graph(nodes, g.name, data, list(g.output), inits)
    out = helper.make_model(graph, opset_imports=list(model.opset_import))
    out.ir_version = 8  # initializers need not be listed as graph inputs
    return out


def run_randomized(name: str, seed: int = 0) -> dict[str, Any]:
    """The randomized light model on the oracle against onnxruntime (``rtol`` 1e-3,
    ``atol`` 1e-5 relative to the output's scale); returns the max error.

    Raises:
        AssertionError: the outputs differ.
    """
    import onnxruntime as ort  # type: ignore[import-untyped]

    from frontends.onnx import from_onnx
    from interpreter import evaluate

    model = randomized(name, seed)
    _, inputs, _ = load(name)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {vi.name: x for vi, x in zip(model.graph.input, inputs)}
    want = sess.run(None, feeds)
    mod, params = from_onnx(model)
    got = evaluate(mod, *inputs, *params.values())
    results = list(got) if isinstance(got, tuple) else [got]
    err = 0.0
    for g, w in zip(results, want):
        scale = float(np.max(np.abs(w))) or 1.0
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-5 * scale)
        err = max(err, float(np.max(np.abs(g - w))))
    spread = float(np.max(want[0]) - np.min(want[0]))
    return {"name": name, "max_abs_err": err, "output_spread": spread}
