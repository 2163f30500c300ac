"""Completeness: every registered operator runs through the executors — as a compiled kernel
when it lowers, else through the numpy fallback, listed with its reason — and gives the
oracle's result; the fallback path is exercised for every operator."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opcase import draw_call, module

from backends.tvm import build
from interpreter import evaluate
from interpreter.values import compare_values
from semantics import RelayRuntimeError, ops


@pytest.mark.parametrize("name", ops.list_ops())
@settings(max_examples=3, deadline=None)
@given(data=st.data())
def test_every_operator_lowers_or_falls_back_and_agrees(name, data):
    drawn = draw_call(data.draw, name)
    assert drawn is not None, f"the conformance kit knows no valid call of {name}"
    call, values = drawn
    mod = module(call)
    try:
        expected = evaluate(mod, *values)
    except RelayRuntimeError:
        expected = RelayRuntimeError
    for compile_kernels in (True, False):
        exe = build(mod, opt_level=0, compile_kernels=compile_kernels)
        groups = exe.kernels.compiled + len(exe.fallbacks)
        assert groups >= 1, "the operator call became no kernel"
        assert all(reason for _, reason in exe.fallbacks)
        if not compile_kernels:
            assert exe.kernels.compiled == 0 and exe.fallbacks
        if expected is RelayRuntimeError:
            with pytest.raises(RelayRuntimeError):
                exe(*values)
            continue
        equal, why = compare_values(expected, exe(*values))
        assert equal, f"{name} (compile_kernels={compile_kernels}): {why}"


def test_fallback_reasons_name_what_did_not_lower():
    exe = build("def @main(%x: Tensor[(2, 2), float32]) { (%x, %x) }", opt_level=0,
                compile_kernels=False)
    assert exe.fallbacks == []
    exe = build("def @main(%x: Tensor[(2, 2), float32]) { exp(%x) }", opt_level=0,
                compile_kernels=False)
    assert exe.fallbacks == [("fallback_exp", "kernel compilation is off (compile_kernels=False)")]
