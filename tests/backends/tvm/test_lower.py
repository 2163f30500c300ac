"""Every lowering rule against the operator's numpy reference (the oracle's semantics).

For each registered operator, Hypothesis draws valid calls from the conformance kit's
operator-call strategies (:func:`conformance.strategies.ops.op_call`: shapes with zero-size
dims, attributes, inputs with NaN/±inf/-0.0 and integer extremes), the call is wrapped in a
``Primitive=1`` function, compiled, run, and compared with the reference: exactly for
integers and bools, within a tolerance by dtype for floats.  A call a rule declines must
be one of the documented cases (integer division, ``take`` mode ``fast``, ...) and never a
TVM build failure.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends.tvm.kernel.compile import compile_function
from backends.tvm.kernel.runtime import COMPILE_FAILED, NoLowering
from backends.tvm.lower import TARGET
from conformance.strategies.ops import fast_arrays, op_call_args, op_inputs
from semantics import ops
from semantics.errors import RelayRuntimeError
from semantics.expr import Attrs, Call, Function, Op, Var
from semantics.ops.tables import LOWERINGS, missing
from semantics.types import TupleType

OPS = ops.list_ops()

# Reasons a rule may decline a call (the executors then run the reference).
DECLINED = ("integer divide", "integer mod", "integer floor_divide", "integer floor_mod",
            "integer power", "integer mean", "take in mode", "take from an empty",
            "average pooling over", "global max pooling over an empty", "padding of an empty")

# Reductions whose float results depend on the summation order, and transcendental
# functions computed in another precision: looser float tolerances.
LOOSE = {"float16": 3e-2, "float32": 1e-3}


def test_every_operator_has_a_lowering_or_a_reason():
    assert missing(LOWERINGS, qualifier=TARGET) == []
    for op in OPS:
        if not LOWERINGS.has(op, TARGET):
            reason = LOWERINGS.reason(op, TARGET)
            assert reason and len(reason) > 20, op


def test_the_declared_absences_are_known_and_have_reasons():
    """arange (its length depends on argument values), the memory dialect (the backend plans
    memory itself; vm.reshape_tensor checks its shape tensor at run time), and the operators
    not compiled yet: the gradient rules' backward operators (numpy fallback)."""
    absent = [op for op in OPS if not LOWERINGS.has(op, TARGET)]
    assert absent == ["arange", "memory.alloc_storage", "memory.alloc_tensor", "memory.kill",
                      "nn.avg_pool2d_grad", "nn.conv2d_backward_weight",
                      "nn.conv2d_transpose", "nn.max_pool2d_grad",
                      "nn.max_pool2d_pick", "vm.reshape_tensor"]
    assert all(LOWERINGS.reason(op, TARGET) for op in absent)


def primitive(name: str, arg_types: tuple, attrs: dict) -> Function:
    """``fn (%p0, ...) { name(%p0, ...) }`` marked ``Primitive=1``."""
    params = tuple(Var(f"p{i}", t) for i, t in enumerate(arg_types))
    return Function(params, Call(Op(name), params, Attrs(attrs)), None, (),
                    Attrs({"Primitive": 1}))


def flat_arrays(values: tuple, arg_types: tuple) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    for v, t in zip(values, arg_types):
        if isinstance(t, TupleType):
            out.extend(flat_arrays(tuple(v), t.fields))
        else:
            out.append(np.asarray(v))
    return out


def check_call(name: str, arg_types: tuple, attrs: dict, values: tuple, cache: object,
               close: object) -> None:
    try:
        want = ops.get(name).reference(*values, **attrs)
    except RelayRuntimeError:
        want = None
    func = primitive(name, arg_types, attrs)
    try:
        kernel = compile_function(func, arg_types, cache=cache)  # type: ignore[arg-type]
    except NoLowering as err:
        assert err.op != COMPILE_FAILED, err.reason
        assert any(err.reason.startswith(d) or d in err.reason for d in DECLINED), err.reason
        return
    assert want is not None, f"the reference traps on {name}{attrs} but the kernel compiled"
    got = kernel(*flat_arrays(values, arg_types))
    close(got, want, LOOSE)  # type: ignore[operator]


# nn.lrn (the ONNX importer's) has no conformance-kit call strategy: test_lower_lrn.py.
@pytest.mark.parametrize("name", [op for op in OPS if LOWERINGS.has(op, TARGET)
                                  and op != "nn.lrn"])
@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_lowering_matches_the_reference(name: str, data: st.DataObject, kernel_cache: object,
                                        close: object) -> None:
    arg_types, attrs = data.draw(op_call_args(name), label="call")
    if any(isinstance(t, TupleType) for t in arg_types):     # concatenate, stack
        values = tuple(tuple(data.draw(fast_arrays(f.dtype, f.shape)) for f in t.fields)
                       if isinstance(t, TupleType) else data.draw(fast_arrays(t.dtype, t.shape))
                       for t in arg_types)
    else:
        values = data.draw(op_inputs(name, arg_types, attrs), label="inputs")
    check_call(name, arg_types, attrs, values, kernel_cache, close)


@pytest.mark.parametrize("name", ["equal", "less_equal", "greater_equal", "less", "greater",
                                  "not_equal"])
def test_a_float_compared_with_itself_follows_nan(name: str, kernel_cache: object) -> None:
    """``equal(%x, %x)`` is false where ``%x`` is NaN (TVM's simplifier folds ``x == x``)."""
    from semantics.types import TensorType

    t = TensorType((4,), "float32")
    x = Var("x", t)
    fn = Function((x,), Call(Op(name), (x, x), Attrs({})), None, (), Attrs({"Primitive": 1}))
    data = np.array([1.0, np.nan, -np.inf, 0.0], np.float32)
    got = compile_function(fn, [t], cache=kernel_cache)(data)  # type: ignore[arg-type]
    assert np.array_equal(got, ops.get(name).reference(data, data))
