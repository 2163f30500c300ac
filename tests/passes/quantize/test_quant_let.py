"""Values bound by ``let`` keep their quantized form: a program in A-normal form is
annotated, calibrated and realized as its dataflow form is, with integer ``let`` variables
and no dequantize/requantize around a ``let``."""

from __future__ import annotations

import numpy as np
import pytest
import qnets

from interpreter import evaluate
from passes import fold_constant
from passes.quantize import QConfig, annotate, calibrate, realize
from passes.quantize.simq import SIMQ
from passes.to_anf import to_anf
from semantics.expr import Call, Let, Op
from semantics.types import TensorType
from semantics.visitor import post_order
from typechecker import check


def _calls(fn, name):
    return [n for n in post_order(fn) if isinstance(n, Call) and isinstance(n.op, Op)
            and n.op.name == name]


@pytest.mark.parametrize("calibrator", ["global_scale", "mse"])
def test_let_bound_intermediates_stay_integers(calibrator):
    mod, params = qnets.downsample_net(seed=1)
    config = QConfig(calibrate=calibrator, skip_conv_layers=())
    data = qnets.inputs(2, seed=1)
    graph_sim = calibrate(annotate(mod, params, config), config, data)
    graph = fold_constant(realize(graph_sim, config))

    annotated = annotate(to_anf(mod), params, config)
    # a let-bound activation is quantized where it is used, as in the dataflow form
    assert len(_calls(annotated["main"], SIMQ)) == len(_calls(graph_sim["main"], SIMQ))
    simulated = calibrate(annotated, config, data)
    realized = realize(simulated, config)
    check(realized)
    fn = realized["main"]
    lets = [n for n in post_order(fn) if isinstance(n, Let)]
    assert len(lets) >= 10
    # every let holding a conv/add/relu result is an integer variable
    ints = [let for let in lets if isinstance(let.var.type_annotation, TensorType)
            and let.var.type_annotation.dtype.startswith("int")]
    assert len(ints) >= len(lets) - 2
    # one dequantize, at the output: nothing is cast back to float around a let
    floats = [c for c in _calls(fn, "cast") if c.attrs.get("dtype") == "float32"]
    assert len(floats) == 1 and fn.body.op.name == "multiply"
    for x in qnets.inputs(3, seed=7):
        r = evaluate(realized, x)
        np.testing.assert_array_equal(r, evaluate(graph, x))
        s = evaluate(simulated, x)
        assert np.abs(r - s).max() <= 2.0 ** -20 * max(1.0, float(np.abs(s).max()))
