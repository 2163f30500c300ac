"""Host rules for scalar integer/bool groups (``backends.tvm.lower.scalar``) agree with the
operators' references on every dtype, wrapping included; other groups are declined."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import typechecker
from backends.tvm.lower.scalar import SCALAR_RULES, scalar_program
from semantics import ops, parse
from semantics.expr import Attrs, Call, Function, Op, Var
from semantics.types import TensorType

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
UNARY = {"negative", "logical_not"}
LOGICAL = {"logical_and", "logical_or", "logical_not"}


def _group(name: str, dtype: str) -> Function:
    t = TensorType((), dtype)
    params = tuple(Var(f"p{i}", t) for i in range(1 if name in UNARY else 2))
    fn = Function(params, Call(Op(name), params, Attrs({})), None, (), Attrs({"Primitive": 1}))
    out = typechecker.infer(fn)
    assert isinstance(out, Function)
    return out


def _value(draw: st.DrawFn, dtype: str) -> np.ndarray:
    if dtype == "bool":
        return np.array(draw(st.booleans()))
    info = np.iinfo(dtype)
    return np.array(draw(st.integers(int(info.min), int(info.max))), dtype)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_scalar_rules_match_the_references(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(SCALAR_RULES)))
    dtype = "bool" if name in LOGICAL else data.draw(st.sampled_from(INTS))
    if name == "negative" and dtype.startswith("u"):
        dtype = "int32"
    fn = _group(name, dtype)
    run = scalar_program(fn)
    assert run is not None, name
    args = [_value(data.draw, dtype) for _ in fn.params]
    want = ops.get(name).reference(*args)
    got = run(*args)
    assert isinstance(got, np.ndarray) and got.shape == ()
    assert got.dtype == np.asarray(want).dtype and got == want, (name, args, got, want)


def test_a_chain_with_constants() -> None:
    mod = typechecker.infer(parse(
        "def @main(%i: int32, %j: int32) { logical_and(greater_equal(add(%i, 1), %j), "
        "less(multiply(%i, -3), 2147483647)) }"))
    run = scalar_program(mod["main"])
    assert run is not None
    for i, j in [(5, 6), (2**31 - 1, -2**31), (-7, 0), (0, 2)]:
        a, b = np.array(i, np.int32), np.array(j, np.int32)
        want = np.logical_and((a + np.int32(1)) >= b, (a * np.int32(-3)) < np.int32(2**31 - 1))
        assert run(a, b) == want and run(a, b).dtype == np.bool_


@pytest.mark.parametrize("text", [
    "def @main(%x: float32) { add(%x, 1f) }",                                # a float
    "def @main(%x: Tensor[(2), int32]) { add(%x, 1) }",                      # not a scalar
    "def @main(%x: int32) { divide(%x, 2) }",                                # no rule here
    "def @main(%x: int32) { cast(%x, dtype=\"int64\") }",                    # an attribute
])
def test_other_groups_are_declined(text: str) -> None:
    mod = typechecker.infer(parse(text))
    assert scalar_program(mod["main"]) is None
