"""The one operator call object (semantics/ops/bound.py) and the registry's per-operator
facts that passes read (``OpDef.traps``, ``semantics.ops.layouts``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semantics import ops
from semantics.errors import RelayError, RelayTypeError
from semantics.ops import Traps
from semantics.ops.bound import BoundOp
from semantics.ops.layouts import is_blocked, parse_layout


def test_run_equals_the_reference_and_caches_the_verdict_per_signature() -> None:
    bound = BoundOp.of("add")
    a, b = np.arange(6, dtype="float32").reshape(2, 3), np.ones(3, dtype="float32")
    assert bound.last is None
    out = bound.run((a, b))
    np.testing.assert_array_equal(out, ops.get("add").reference(a, b))
    assert bound.last is not None and bound.last[1] == ((2, 3), (3,))
    # The same signature skips the relation: same result.
    np.testing.assert_array_equal(bound.run((a + 1, b)), a + 1 + b)
    # Another signature is decided again (and an ill-typed one is rejected).
    with pytest.raises(RelayError):
        bound.run((a, np.ones(4, dtype="float32")))


def test_attrs_are_normalized_and_bad_ones_rejected() -> None:
    bound = BoundOp.of("sum", {"axis": [1]})
    assert bound.attrs["axis"] == (1,) and "keepdims" in bound.attrs
    with pytest.raises(RelayTypeError):
        BoundOp.of("sum", {"no_such_attribute": 1})
    with pytest.raises(RelayTypeError):
        BoundOp.of("no_such_operator")


def test_attempt_returns_none_where_run_time_would_fail() -> None:
    i = np.array([4, 5], dtype="int32")
    assert BoundOp.attempt_call("divide", None, (i, np.array([0, 1], dtype="int32"))) is None
    assert BoundOp.attempt_call("add", None, (i,)) is None              # wrong arity
    assert BoundOp.attempt_call("no_such_operator", None, (i,)) is None
    assert BoundOp.attempt_call("add", {"bad": 1}, (i, i)) is None
    np.testing.assert_array_equal(BoundOp.attempt_call("add", None, (i, i)), i + i)
    assert BoundOp.of("add").arity_error(3) == (
        "wrong number of arguments: operator add expects 2, got 3")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-50, 50), min_size=1, max_size=5),
       st.lists(st.integers(-50, 50), min_size=1, max_size=5))
def test_a_cached_verdict_never_changes_a_result(xs: list[int], ys: list[int]) -> None:
    bound = BoundOp.of("subtract")
    x = np.array(xs, dtype="int32")
    y = np.array(ys[:1], dtype="int32")
    first = bound.run((x, y))
    again = bound.run((x, y))          # through the cached verdict
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(first, ops.get("subtract").reference(x, y))


def test_traps_are_registered_with_the_operators() -> None:
    trapping = {n: ops.get(n).traps for n in ops.list_ops() if ops.get(n).traps is not Traps.NEVER}
    assert trapping["divide"] is Traps.ON_INTEGERS and trapping["mod"] is Traps.ON_INTEGERS
    assert trapping["take"] is Traps.ALWAYS and trapping["arange"] is Traps.ALWAYS
    assert ops.get("add").traps is Traps.NEVER
    # Integer division by zero really traps; the float one does not.
    with pytest.raises(RelayError):
        ops.get("divide").reference(np.array(1, "int32"), np.array(0, "int32"))
    assert np.isinf(ops.get("divide").reference(np.array(1.0, "float32"),
                                                np.array(0.0, "float32")))


def test_the_layout_parser() -> None:
    assert parse_layout("op", "NCHW16c") == [("N", 0), ("C", 0), ("H", 0), ("W", 0), ("c", 16)]
    assert is_blocked("NCHW4c") and not is_blocked("NHWC")
    for bad in ("NCHW0c", "NCcHW", "NCHWc", "N1CHW", "NCHWd4", "NN", ""):
        with pytest.raises(RelayTypeError):
            parse_layout("op", bad)
