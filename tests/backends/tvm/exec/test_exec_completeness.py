"""Completeness: every registered operator runs through the executors — as a compiled kernel
when it lowers, else through the numpy fallback, listed with its reason — and gives the
oracle's result; the fallback path is exercised for every operator. The memory dialect's
``memory.*`` operators are the exception, by declaration: the backend drops ``memory.kill``
and refuses explicit allocation naming the operator."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opcase import draw_call, module

from backends.tvm import build
from backends.tvm.lower.memory import MEMORY_DIALECT
from interpreter import evaluate
from interpreter.values import compare_values
from semantics import RelayRuntimeError, RelayTypeError, ops


@pytest.mark.parametrize("name", [n for n in ops.list_ops() if n not in MEMORY_DIALECT])
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


@pytest.mark.parametrize("name", MEMORY_DIALECT)
@settings(max_examples=3, deadline=None)
@given(data=st.data())
def test_the_memory_dialect_is_dropped_or_refused_naming_the_op(name, data):
    from conformance.strategies.ops import op_call
    from semantics.expr import Attrs, Call, Function, Op, Var
    from semantics.module import IRModule

    arg_types, attrs, values = data.draw(op_call(name))
    params = tuple(Var(f"p{i}", t) for i, t in enumerate(arg_types))
    mod = IRModule({"main": Function(params, Call(Op(name), params, Attrs(attrs)))})
    if name != "memory.kill":
        with pytest.raises(RelayTypeError, match=f"does not run operator {name}"):
            build(mod, opt_level=0, compile_kernels=False)
        return
    exe = build(mod, opt_level=0, compile_kernels=False)
    assert exe.kernels.compiled == 0 and not exe.fallbacks
    assert exe(*values) == evaluate(mod, *values) == ()


def test_fallback_reasons_name_what_did_not_lower():
    exe = build("def @main(%x: Tensor[(2, 2), float32]) { (%x, %x) }", opt_level=0,
                compile_kernels=False)
    assert exe.fallbacks == []
    exe = build("def @main(%x: Tensor[(2, 2), float32]) { exp(%x) }", opt_level=0,
                compile_kernels=False)
    assert exe.fallbacks == [("fallback_exp", "kernel compilation is off (compile_kernels=False)")]
