"""Operator relations through the checker, with concrete, symbolic and ``?`` dims, and Z3."""

from __future__ import annotations

import pytest
import sympy
from tc_util import assert_type, check, expect_type_error, module_types, type_of

from semantics import parse
from semantics.expr import Attrs, Call, Function, Op, Var
from semantics.module import IRModule
from semantics.shapes import ANY, shape_var
from semantics.types import TensorType
from typechecker.shape_solver import Z3DimSolver

n, m, h = shape_var("n"), shape_var("m"), shape_var("h")
F32 = "float32"


def fn_type(params: str, body: str) -> str:
    return f"fn ({params}) {{ {body} }}"


# --- Broadcast ----------------------------------------------------------------------------

@pytest.mark.parametrize("x,y,out", [
    ("(2, 3)", "(3,)", "(2, 3)"),
    ("(2, 1)", "(1, 4)", "(2, 4)"),
    ("(n, 3)", "(1, 3)", "(n, 3)"),
    ("(n, 3)", "(n, 3)", "(n, 3)"),
    ("(?, 3)", "(5, 3)", "(5, 3)"),
    ("(n, 1)", "(1, m)", "(n, m)"),
])
def test_broadcast(x, y, out):
    assert_type(fn_type(f"%x: Tensor[{x}, float32], %y: Tensor[{y}, float32]", "add(%x, %y)"),
                f"fn (Tensor[{x}, float32], Tensor[{y}, float32]) -> Tensor[{out}, float32]")


@pytest.mark.parametrize("x,y", [("(2, 3)", "(4,)"), ("(n, 3)", "(m, 3)"), ("(n,)", "(n + 1,)")])
def test_broadcast_failures(x, y):
    expect_type_error(type_of, fn_type(f"%x: Tensor[{x}, float32], %y: Tensor[{y}, float32]",
                                       "add(%x, %y)"),
                      prefix="relation Broadcast failed", rule="Type-Call-Op")


def test_broadcast_dtype_mismatch():
    expect_type_error(type_of, "add(1, 1f)", prefix="relation Broadcast failed")


# --- Conv2D -------------------------------------------------------------------------------

CONV = "nn.conv2d(%x, %w, strides=[2, 2], padding=[1, 1])"


def test_conv2d_concrete():
    assert_type(fn_type("%x: Tensor[(1, 3, 32, 32), float32], %w: Tensor[(8, 3, 3, 3), float32]",
                        CONV),
                "fn (Tensor[(1, 3, 32, 32), float32], Tensor[(8, 3, 3, 3), float32]) -> "
                "Tensor[(1, 8, 16, 16), float32]")


def test_conv2d_symbolic_batch_and_spatial():
    t = type_of(fn_type("%x: Tensor[(n, 3, h, h), float32], %w: Tensor[(8, 3, 3, 3), float32]",
                        CONV))
    out = t.ret_type
    assert out.shape[0] == n and out.shape[1] == 8
    assert Z3DimSolver().equal(out.shape[2], sympy.floor((h - 1) / 2) + 1) is True


def test_conv2d_any_dims():
    assert_type(fn_type("%x: Tensor[(?, 3, ?, 32), float32], %w: Tensor[(8, 3, 3, 3), float32]",
                        CONV),
                "fn (Tensor[(?, 3, ?, 32), float32], Tensor[(8, 3, 3, 3), float32]) -> "
                "Tensor[(?, 8, ?, 16), float32]")


def test_conv2d_channel_mismatch():
    expect_type_error(type_of, fn_type("%x: Tensor[(1, 4, 8, 8), float32], "
                                       "%w: Tensor[(8, 3, 3, 3), float32]", CONV),
                      prefix="relation Conv2D failed", rule="Type-Call-Op")


def test_conv2d_bad_attribute_points_at_the_call():
    err = expect_type_error(type_of, fn_type("%x: Tensor[(1, 3, 8, 8), float32], "
                                             "%w: Tensor[(8, 3, 3, 3), float32]",
                                             "nn.conv2d(%x, %w, strides=[0, 1])"),
                            prefix="bad attribute", rule="Type-Call-Op")
    assert err.span is not None and err.span.column > 60


# --- Dense, Reshape, Concatenate ----------------------------------------------------------

def test_dense():
    assert_type(fn_type("%x: Tensor[(n, 7), float32], %w: Tensor[(5, 7), float32]",
                        "nn.dense(%x, %w)"),
                "fn (Tensor[(n, 7), float32], Tensor[(5, 7), float32]) -> Tensor[(n, 5), float32]")
    assert_type(fn_type("%x: Tensor[(2, ?), float32], %w: Tensor[(5, 7), float32]",
                        "nn.dense(%x, %w)"),
                "fn (Tensor[(2, ?), float32], Tensor[(5, 7), float32]) -> Tensor[(2, 5), float32]")
    expect_type_error(type_of, fn_type("%x: Tensor[(2, 6), float32], %w: Tensor[(5, 7), float32]",
                                       "nn.dense(%x, %w)"), prefix="relation Dense failed")


def test_reshape():
    assert_type(fn_type("%x: Tensor[(n, 12), float32]", "reshape(%x, newshape=[0, 3, 4])"),
                "fn (Tensor[(n, 12), float32]) -> Tensor[(n, 3, 4), float32]")
    assert_type(fn_type("%x: Tensor[(2, 12), float32]", "reshape(%x, newshape=[-1])"),
                "fn (Tensor[(2, 12), float32]) -> Tensor[(24,), float32]")
    expect_type_error(type_of, fn_type("%x: Tensor[(2, 12), float32]",
                                       "reshape(%x, newshape=[5, 5])"),
                      prefix="relation Reshape failed")


def test_concatenate():
    assert_type(fn_type("%x: Tensor[(n, 3), float32], %y: Tensor[(m, 3), float32]",
                        "concatenate((%x, %y), axis=0)"),
                "fn (Tensor[(n, 3), float32], Tensor[(m, 3), float32]) -> "
                "Tensor[(n + m, 3), float32]")
    expect_type_error(type_of, fn_type("%x: Tensor[(2, 3), float32], %y: Tensor[(2, 4), float32]",
                                       "concatenate((%x, %y), axis=0)"),
                      prefix="relation Concatenate failed")


def test_relation_waits_for_its_arguments():
    # the argument type of the call is only known after the let's annotation is unified
    text = "fn (%a: Tensor[(2, 2), float32]) { let %f = fn (%x) { nn.relu(%x) }; %f(%a) }"
    assert_type(text, "fn (Tensor[(2, 2), float32]) -> Tensor[(2, 2), float32]")


def test_relation_result_against_an_annotation():
    expect_type_error(type_of, "let %y: Tensor[(3,), float32] = add(1f, 1f); %y",
                      prefix="type mismatch", rule="Type-Let")


def test_relation_result_mismatch_when_output_was_fixed_first():
    # the inner function's result is annotated before its body's relation can run
    x = Var("x")
    a = Var("a", TensorType((2,), F32))
    inner = Function((x,), Call(Op("negative"), (x,)), TensorType((3,), F32))
    err = expect_type_error(type_of, Function((a,), Call(inner, (a,))), prefix="type mismatch")
    assert "Tensor[(3" in err.message and "Tensor[(2" in err.message


# --- Z3: equalities SymPy cannot decide ----------------------------------------------------

def test_return_annotation_n_plus_n_is_2n():
    assert_type(fn_type("%x: Tensor[(n + n,), float32]", "%x").replace(
        ") {", ") -> Tensor[(2 * n,), float32] {"),
        "fn (Tensor[(2 * n,), float32]) -> Tensor[(2 * n,), float32]")


def test_return_annotation_n_plus_1_is_not_n():
    err = expect_type_error(type_of, "fn (%x: Tensor[(n + 1,), float32]) -> "
                                     "Tensor[(n,), float32] { %x }",
                            prefix="type mismatch", rule="Type-Function")
    assert "n + 1" in err.message and "differ" in err.message


def test_conv_output_formula_equality_needs_z3():
    # stride-2 conv, 1x1 kernel, no padding: out = floor((h - 1) / 2) + 1, written as
    # floor((h + 1) / 2): equal for every natural h, which SymPy cannot show but Z3 can
    x = Var("x", TensorType((1, 3, h, h), F32))
    w = Var("w", TensorType((8, 3, 1, 1), F32))
    out_dim = sympy.floor((h + 1) / 2)
    ret = TensorType((1, 8, out_dim, out_dim), F32)
    conv = Call(Op("nn.conv2d"), (x, w), Attrs({"strides": (2, 2)}))
    from typechecker.shape_solver import SHAPE_SOLVER

    SHAPE_SOLVER._cache.clear()
    before = SHAPE_SOLVER.z3_queries
    t = type_of(Function((x, w), conv, ret))
    assert t.ret_type.shape[2] == out_dim
    assert SHAPE_SOLVER.z3_queries > before


def test_unprovable_dimension_equation_is_shown():
    x = Var("x", TensorType((n,), F32))
    ret = TensorType((sympy.floor(n / 2) * 2,), F32)
    err = expect_type_error(type_of, Function((x,), x, ret), prefix="type mismatch",
                            rule="Type-Function")
    assert "cannot prove" in err.message and "floor" in err.message


def test_symbolic_z3_refutation():
    x = Var("x", TensorType((2 * n + 1,), F32))
    ret = TensorType((2 * sympy.floor(n / 2) + 2 * sympy.Mod(n, 2),), F32)
    expect_type_error(type_of, Function((x,), x, ret), prefix="type mismatch")


class TestZ3DimSolver:
    def test_fast_paths(self):
        s = Z3DimSolver()
        assert s.equal(3, 3) is True and s.equal(3, 4) is False
        assert s.equal(ANY, 7) is True and s.equal(n, ANY) is True
        assert s.z3_queries == 0

    def test_sympy_decides_linear_cases(self):
        s = Z3DimSolver()
        assert s.equal(n + n, 2 * n) is True
        assert s.equal(n + 1, n) is False
        assert s.z3_queries == 0

    def test_z3_proves_floor_identities(self):
        s = Z3DimSolver()
        assert s.equal(sympy.floor(n / 2) + sympy.floor((n + 1) / 2), n) is True
        assert s.equal(sympy.floor((n - 1) / 2) + 1, sympy.floor((n + 1) / 2)) is True
        assert s.equal(sympy.Mod(n, 2) + 2 * sympy.floor(n / 2), n) is True
        assert s.z3_queries == 3

    def test_z3_refutes_and_abstains(self):
        s = Z3DimSolver()
        assert s.equal(sympy.floor(n / 2) * 2, 2 * n + 1) is False
        assert s.equal(sympy.floor(n / 2), n) is None  # equal for n = 0 only
        assert s.equal(n, m) is None

    def test_cache(self):
        s = Z3DimSolver()
        a, b = sympy.floor(n / 2) + sympy.floor((n + 1) / 2), n
        assert s.equal(a, b) is True
        assert s.equal(a, b) is True
        assert s.z3_queries == 1

    def test_require_equal_message_shows_the_equation(self):
        from semantics.errors import RelayTypeError

        with pytest.raises(RelayTypeError, match="cannot prove floor"):
            Z3DimSolver().require_equal(sympy.floor(n / 2), n, "ctx")


def test_module_with_symbolic_batch_resnet_block():
    types = module_types("""
    def @block(%x: Tensor[(n, 16, 8, 8), float32], %w: Tensor[(16, 16, 3, 3), float32]) {
      %0 = nn.conv2d(%x, %w, padding=[1, 1]);
      %1 = nn.relu(%0);
      add(%1, %x)
    }
    """)
    assert types["block"] == ("fn (Tensor[(n, 16, 8, 8), float32], Tensor[(16, 16, 3, 3), "
                              "float32]) -> Tensor[(n, 16, 8, 8), float32]")


def test_module_level_check_of_shape_polymorphic_dense():
    mod = parse("""
    def @mlp(%x: Tensor[(b, 4), float32], %w1: Tensor[(8, 4), float32],
             %w2: Tensor[(2, 8), float32]) -> Tensor[(b, 2), float32] {
      nn.dense(nn.relu(nn.dense(%x, %w1)), %w2)
    }
    def @main(%x: Tensor[(3, 4), float32], %w1: Tensor[(8, 4), float32],
              %w2: Tensor[(2, 8), float32]) { @mlp(%x, %w1, %w2) }
    """)
    check(mod)
    assert isinstance(mod, IRModule)
