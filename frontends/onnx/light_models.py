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
