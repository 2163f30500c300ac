"""Tests of the core modules: spans and errors, dtypes, shapes, Attrs, module, visitor."""

from __future__ import annotations

import numpy as np
import pytest
import sympy
from hypothesis import given
from hypothesis import strategies as st

from semantics.dtypes import FLOAT_DTYPES, INT_DTYPES, UINT_DTYPES, is_dtype, literal, scalar
from semantics.errors import (
    InternalError,
    ParseError,
    RelayError,
    RelayRuntimeError,
    RelayTypeError,
)
from semantics.expr import (
    Attrs,
    Call,
    Constant,
    Let,
    Op,
    Tuple,
    Var,
    children,
    const,
    with_children,
)
from semantics.module import IRModule
from semantics.shapes import ANY, DEFAULT_SOLVER, normalize, shape_var
from semantics.span import Source, Span
from semantics.visitor import ExprMutator, ExprVisitor, count_uses, post_order, run_recursive


def test_error_format_has_location_line_and_caret():
    src = Source("prog.relay", "let %x = 1;\nadd(%x, %y)\n")
    err = RelayTypeError("unbound variable %y", Span("prog.relay", 2, 9, 2, 11, src))
    text = str(err)
    assert text.splitlines()[0] == "prog.relay:2:9: error: unbound variable %y"
    assert text.splitlines()[1].strip() == "add(%x, %y)"
    source_line, caret_line = text.splitlines()[1:3]
    assert caret_line.strip() == "^^"
    assert source_line[caret_line.index("^"):].startswith("%y")


def test_error_hierarchy():
    for cls in (ParseError, RelayTypeError, RelayRuntimeError):
        assert issubclass(cls, RelayError)
    assert not issubclass(InternalError, RelayError)


def test_error_without_span():
    assert str(RelayError("plain")) == "error: plain"


def test_with_span_keeps_first_span():
    a = Span("f", 1, 1, 1, 2)
    b = Span("f", 3, 1, 3, 2)
    err = RelayError("m", a).with_span(b)
    assert err.span is a


def test_span_merge():
    a = Span("f", 1, 5, 1, 8)
    b = Span("f", 2, 1, 2, 4)
    m = a.merge(b)
    assert (m.line, m.column, m.end_line, m.end_column) == (1, 5, 2, 4)


@pytest.mark.parametrize("dtype", [*INT_DTYPES, *UINT_DTYPES])
def test_int_literals_extremes(dtype):
    info = np.iinfo(dtype)
    for v in (info.min, info.max, 0):
        text = literal(np.array(v, dtype=dtype), dtype)
        assert text.startswith(str(int(v)))


def test_scalar_wraps():
    assert scalar(128, "int8") == -128
    assert scalar(-1, "uint8") == 255
    assert scalar(2**64, "uint64") == 0


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_float_literal_special_values(dtype):
    suffix = {"float16": "f16", "float32": "f", "float64": "f64"}[dtype]
    assert literal(np.array(np.inf, dtype), dtype) == f"inf{suffix}"
    assert literal(np.array(-np.inf, dtype), dtype) == f"-inf{suffix}"
    assert literal(np.array(np.nan, dtype), dtype) == f"nan{suffix}"


@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_float32_literal_is_exact(x):
    text = literal(np.array(x, np.float32), "float32")
    assert text.endswith("f")
    assert np.float32(float(text[:-1])) == np.float32(x)


def test_dtype_names():
    assert is_dtype("float32x4") and is_dtype("bool") and is_dtype("uint64")
    assert not is_dtype("float8") and not is_dtype("int") and not is_dtype("float32x0")


def test_dim_solver():
    n, m = shape_var("n"), shape_var("m")
    assert DEFAULT_SOLVER.equal(n + n, 2 * n) is True
    assert DEFAULT_SOLVER.equal(n + 1, n) is False
    assert DEFAULT_SOLVER.equal(3, 4) is False
    assert DEFAULT_SOLVER.equal(ANY, 7) is True
    assert DEFAULT_SOLVER.equal(n, m) is None
    assert DEFAULT_SOLVER.unify(ANY, n, "ctx") == n
    with pytest.raises(RelayTypeError, match="dimensions"):
        DEFAULT_SOLVER.require_equal(n + 1, n, "ctx")
    assert shape_var("n") == n
    assert normalize(sympy.Integer(4)) == 4 and isinstance(normalize(sympy.Integer(4)), int)


def test_attrs_immutable_and_ordered():
    a = Attrs({"b": [1, 2], "a": 0.5})
    assert list(a) == ["b", "a"]
    assert a["b"] == (1, 2)
    assert a.b == (1, 2)
    with pytest.raises(AttributeError):
        a.c = 1  # type: ignore[attr-defined]
    assert a == Attrs({"a": 0.5, "b": (1, 2)})
    assert hash(a) == hash(Attrs({"a": 0.5, "b": (1, 2)}))
    assert a.replace(a=1.0)["a"] == 1.0 and a["a"] == 0.5


def test_constant_is_read_only_copy():
    arr = np.arange(3, dtype=np.int32)
    c = Constant(arr)
    arr[0] = 7
    assert c.data[0] == 0
    with pytest.raises(ValueError):
        c.data[0] = 1


def test_const_defaults():
    assert const(1).dtype == "int32"
    assert const(1.5).dtype == "float32"
    assert const(True).dtype == "bool"
    assert const(1, "int64").dtype == "int64"


def test_with_children_returns_same_node_when_unchanged():
    x = Var("x")
    call = Call(Op("add"), (x, x))
    assert with_children(call, children(call)) is call
    y = Var("y")
    new = with_children(call, (call.op, y, x))
    assert new is not call and new.args[0] is y


def _let_chain(n: int):
    body = Var("x0")
    first = body
    for i in range(n):
        v = Var(f"x{i + 1}")
        body = Let(v, Call(Op("add"), (first, first)), body)
    return body


def test_post_order_deep_let_chain():
    e = _let_chain(20_000)
    order = post_order(e)
    assert order[-1] is e
    assert len(order) == 1 + 20_000 * 3  # x0, then an Op, a Call and a Let per level


def test_post_order_visits_shared_nodes_once():
    x = Var("x")
    node = x
    for _ in range(60):
        node = Call(Op("add"), (node, node))
    order = post_order(node)
    assert len(order) == 1 + 60 * 2
    uses = count_uses(node)
    assert max(uses.values()) == 2


def test_mutator_preserves_sharing_and_identity():
    x = Var("x")
    shared = Call(Op("add"), (x, x))
    root = Tuple((shared, shared))

    class Noop(ExprMutator):
        pass

    assert Noop().mutate(root) is root

    class ReplaceVar(ExprMutator):
        def visit_var(self, new, old):
            return const(1)

    out = ReplaceVar().mutate(root)
    assert out is not root
    assert out.fields[0] is out.fields[1]


def test_visitor_counts_nodes():
    class Count(ExprVisitor):
        def __init__(self):
            self.n = 0

        def visit_default(self, node):
            self.n += 1

    c = Count()
    c.visit(_let_chain(1000))
    assert c.n > 3000


def test_run_recursive_depth_and_exceptions():
    def down(n):
        if n == 0:
            raise RelayRuntimeError("bottom")
        try:
            return (yield down(n - 1))
        except RelayRuntimeError as err:
            if n == 50_000:
                return f"caught {err.message}"
            raise

    assert run_recursive(down(50_000)) == "caught bottom"


def test_module_functional_update():
    from semantics.expr import Function

    f = Function((), const(1))
    mod = IRModule({"main": f})
    mod2 = mod.with_function("g", f)
    assert "g" in mod2 and "g" not in mod
    assert mod2["main"] is f and mod2["@main"] is f
    with pytest.raises(KeyError):
        mod["nope"]
    with pytest.raises(TypeError):
        mod.functions["x"] = f  # type: ignore[index]
