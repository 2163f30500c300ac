"""annotate: the rule table, skip_conv_layers, sharing, purity, a user override (Fig. 9)."""

from __future__ import annotations

import numpy as np
import pytest
import qnets

from interpreter import evaluate
from passes.quantize import (
    ACTIVATION,
    INPUT,
    WEIGHT,
    QConfig,
    QuantizeError,
    annotate,
    register_quant_annotation,
)
from passes.quantize.calibrate import simq_sites
from passes.quantize.simq import read_simq
from semantics import pretty
from semantics.expr import Call, Constant, Op
from semantics.ops.tables import QUANT_ANNOTATIONS, missing
from semantics.visitor import post_order
from typechecker import check


def _convs(mod) -> list[Call]:
    return [n for n in post_order(mod["main"])
            if isinstance(n, Call) and isinstance(n.op, Op) and n.op.name == "nn.conv2d"]


def _quantized(conv: Call) -> bool:
    return all(isinstance(a, Call) and a.op.name == "annotation.simulated_quantize"
               for a in conv.args)


def test_table_is_complete_with_reasons() -> None:
    assert missing(QUANT_ANNOTATIONS) == []
    for name in ("nn.conv2d", "nn.dense", "add", "nn.relu", "nn.max_pool2d"):
        assert QUANT_ANNOTATIONS.has(name)
    assert "scale" in QUANT_ANNOTATIONS.reason("clip")
    assert QUANT_ANNOTATIONS.reason("nn.softmax")


def test_every_float_operator_has_its_family_reason() -> None:
    """No registered operator falls back to the generic reason; families say why."""
    from passes.quantize.rules import _DEFAULT_REASON
    from semantics.ops.registry import list_ops

    generic = [n for n in list_ops() if QUANT_ANNOTATIONS.reason(n) == _DEFAULT_REASON]
    assert generic == []
    reason = QUANT_ANNOTATIONS.reason
    for name in ("exp", "tanh", "nn.softmax"):
        assert reason(name).startswith("transcendental")
    for name in ("broadcast_to", "tile", "layout_transform"):
        assert "pass-through candidate" in reason(name)
    assert "boolean" in reason("greater") and "training" in reason("nn.dropout")
    assert reason(name) != reason("max")


@pytest.mark.parametrize(("skip", "expected"), [
    ((0,), [False, True]), ((), [True, True]), ((1,), [True, False]), ((0, 1), [False, False]),
])
def test_skip_conv_layers_counts_in_visit_order(skip, expected) -> None:
    mod, params = qnets.conv_net()
    out = annotate(mod, params, QConfig(skip_conv_layers=skip))
    check(out)
    assert [_quantized(c) for c in _convs(out)] == expected


def test_skip_dense_layer() -> None:
    mod, params = qnets.conv_net()
    dense = [n for n in post_order(annotate(mod, params, QConfig(skip_dense_layer=True))["main"])
             if isinstance(n, Call) and isinstance(n.op, Op) and n.op.name == "nn.dense"]
    assert len(dense) == 1 and not _quantized(dense[0])


def test_kinds_and_scales_of_the_default_rules() -> None:
    mod, params = qnets.conv_net()
    out = annotate(mod, params, QConfig(skip_conv_layers=()))
    infos = [read_simq(s) for s in simq_sites(out["main"])]
    kinds = [i.kind for i in infos]
    assert kinds.count(WEIGHT) == 6      # two conv weights, dense weight, three biases
    assert ACTIVATION not in kinds
    for info in infos:
        assert (info.clip_min, info.clip_max) == (-127.0, 127.0)
        if info.kind == INPUT:
            assert info.dom_scale == 8.0 / 128
        else:
            data = info.data.data
            top = info.dom_scale * 128
            assert top >= np.abs(data).max() > top / 2   # a power-of-two max-abs range
    # the residual reads %0 twice (conv input and add): one shared INPUT simQ
    simqs = [s for s in simq_sites(out["main"]) if read_simq(s).kind == INPUT]
    assert len({id(s) for s in simqs}) == len(simqs)
    assert len(simqs) == 3   # x, %0 (shared), the pool's input (flattened for the dense)


def test_annotated_program_runs_close_to_float() -> None:
    mod, params = qnets.conv_net()
    out = annotate(mod, params, QConfig(skip_conv_layers=(), global_scale=16.0))
    from passes import bind_params
    x = qnets.inputs(1)[0]
    ref = evaluate(bind_params(mod, params), x)
    sim = evaluate(out, x)
    assert np.abs(sim - ref).max() < 0.1 * np.abs(ref).max()


def test_annotate_is_pure_and_deterministic() -> None:
    mod, params = qnets.conv_net()
    before = pretty(mod)
    saved = {k: v.copy() for k, v in params.items()}
    a = annotate(mod, params, QConfig())
    b = annotate(mod, params, QConfig())
    assert pretty(mod) == before
    assert all(np.array_equal(saved[k], params[k]) for k in params)
    assert pretty(a) == pretty(b)


def test_bad_arguments() -> None:
    mod, params = qnets.conv_net()
    with pytest.raises(QuantizeError):
        annotate(mod, params, "8/32")  # type: ignore[arg-type]
    with pytest.raises(QuantizeError):
        annotate(mod["main"], params, QConfig())  # type: ignore[arg-type]


# The paper's Fig. 9: unsigned inputs, stochastic rounding of the weights.
def fig9_conv2d(call, kinds, ctx):
    if ctx.conv_skipped(call):
        return None
    data, weight = call.args[:2]
    lhs = data if kinds[0] == INPUT else ctx.quantize(data, INPUT, sign=False)
    rhs = ctx.quantize(weight, WEIGHT, rounding="stochastic")
    return Call(call.op, (lhs, rhs), call.attrs, span=call.span), ACTIVATION


def test_register_quant_annotation_overrides_and_restores() -> None:
    mod, params = qnets.conv_net(residual=False)
    previous = register_quant_annotation("nn.conv2d", fig9_conv2d)
    try:
        out = annotate(mod, params, QConfig())
    finally:
        register_quant_annotation("nn.conv2d", previous)
    assert QUANT_ANNOTATIONS.lookup("nn.conv2d") is previous
    conv = _convs(out)[1]
    lhs, rhs = read_simq(conv.args[0]), read_simq(conv.args[1])
    assert (lhs.sign, lhs.clip_min, lhs.clip_max) == (False, 0.0, 255.0)
    assert rhs.rounding == "stochastic" and isinstance(rhs.data, Constant)
    check(out)
    # the default rule is back
    again = annotate(mod, params, QConfig())
    assert read_simq(_convs(again)[1].args[0]).sign is True


def test_register_quant_annotation_errors() -> None:
    with pytest.raises(QuantizeError, match="unknown operator"):
        register_quant_annotation("nn.not_an_op", fig9_conv2d)
    with pytest.raises(QuantizeError, match="callable"):
        register_quant_annotation("nn.conv2d", 3)
