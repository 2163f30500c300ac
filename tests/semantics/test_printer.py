"""Golden tests of the printer (semantics/printer.py): one per construct, sharing, names."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
import sympy

from semantics.expr import (
    Attrs,
    Call,
    Clause,
    Constant,
    Constructor,
    Function,
    GlobalVar,
    Grad,
    If,
    Let,
    Match,
    Op,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    const,
)
from semantics.module import IRModule
from semantics.printer import INLINE_DEPTH, pretty
from semantics.shapes import ANY, shape_var
from semantics.types import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    Kind,
    RefType,
    TensorType,
    TupleType,
    TypeCall,
    TypeData,
    TypeVar,
)

F32 = TensorType((), "float32")
I32 = TensorType((), "int32")
n = shape_var("n")


def add(a, b):
    return Call(Op("add"), (a, b))


def _list_adt():
    header = GlobalTypeVar("List")
    a = TypeVar("A")
    cons = Constructor("Cons", (a, TypeCall(header, (a,))), header, 0)
    nil = Constructor("Nil", (), header, 1)
    return TypeData(header, (a,), (cons, nil)), cons, nil


# --- modules and functions -------------------------------------------------------------------

def test_module_with_dense():
    x = Var("x", TensorType((1, 10), "float32"))
    w = Var("w", TensorType((20, 10), "float32"))
    body = Call(Op("nn.dense"), (x, w), Attrs({"units": 20}))
    mod = IRModule({"main": Function((x, w), body, TensorType((1, 20), "float32"))})
    assert pretty(mod) == (
        '#[version = "0.0.5"]\n'
        "def @main(%x: Tensor[(1, 10), float32], %w: Tensor[(20, 10), float32]) "
        "-> Tensor[(1, 20), float32] {\n"
        "  nn.dense(%x, %w, units=20)\n"
        "}\n")


def test_adt_definition_and_module_layout():
    td, cons, nil = _list_adt()
    mod = IRModule({"main": Function((), Call(cons, (const(1), Call(nil, ()))))}, {"List": td})
    assert pretty(mod, show_prelude=True) == (
        '#[version = "0.0.5"]\n'
        "type List[A] {\n"
        "  Cons(A, List[A]),\n"
        "  Nil,\n"
        "}\n"
        "\n"
        "def @main() {\n"
        "  Cons(1, Nil)\n"
        "}\n")
    assert pretty(td) == "type List[A] {\n  Cons(A, List[A]),\n  Nil,\n}"


def test_empty_module_is_just_the_header():
    assert pretty(IRModule()) == '#[version = "0.0.5"]\n'


def test_function_with_type_params_attrs_and_return_type():
    a = TypeVar("A")
    p = Var("p", a)
    fn = Function((p,), p, a, (a,), Attrs({"Primitive": 1}))
    assert pretty(fn) == "fn [A](%p: A, Primitive=1) -> A {\n  %p\n}"


def test_function_attrs_without_params_and_string_attr():
    fn = Function((), const(1), None, (), Attrs({"Composite": "conv_bias"}))
    assert pretty(fn) == 'fn (Composite="conv_bias") {\n  1\n}'


def test_type_param_kinds_are_printed():
    n_param = TypeVar("n", Kind.ShapeVar)
    fn = Function((), const(1), None, (n_param,))
    assert pretty(fn) == "fn [n: Shape]() {\n  1\n}"


def test_nested_function_indentation():
    x, y = Var("x"), Var("y")
    fn = Function((x,), Function((y,), add(x, y)))
    assert pretty(fn) == "fn (%x) {\n  fn (%y) {\n    add(%x, %y)\n  }\n}"


# --- statements ------------------------------------------------------------------------------

def test_let_with_annotation_and_body():
    x = Var("x", F32)
    e = Let(x, const(1.0), add(x, x))
    assert pretty(e) == "let %x: float32 = 1.0f;\nadd(%x, %x)"


def test_sequencing_prints_as_statement():
    e = Let(Var("_"), RefWrite(Var("r"), const(1)), const(2))
    assert pretty(e) == "ref_write(%r, 1);\n2"


def test_used_underscore_variable_prints_as_let():
    u = Var("_")
    assert pretty(Let(u, const(1), u)) == "let %_ = 1;\n%_"


def test_let_in_expression_position_is_parenthesized():
    q = Var("q")
    e = Tuple((Let(q, const(1), q), const(3)))
    assert pretty(e) == "((\n  let %q = 1;\n  %q\n), 3)"


def test_if_layout():
    c = Var("c")
    e = If(c, const(1), const(2))
    assert pretty(e) == "if (%c) {\n  1\n} else {\n  2\n}"


def test_match_and_partial_match():
    td, cons, nil = _list_adt()
    lst, h, t = Var("l"), Var("h"), Var("t")
    y = Var("y")
    m = Match(lst, (
        Clause(PatternConstructor(cons, (PatternVar(h), PatternVar(t))), Let(y, h, y)),
        Clause(PatternConstructor(nil), const(0)),
    ))
    assert pretty(m) == (
        "match (%l) {\n"
        "  Cons(%h, %t) => {\n"
        "    let %y = %h;\n"
        "    %y\n"
        "  },\n"
        "  Nil => 0,\n"
        "}")
    partial = Match(lst, (Clause(PatternWildcard(), const(1)),), complete=False)
    assert pretty(partial) == "match? (%l) {\n  _ => 1,\n}"


def test_patterns():
    td, cons, nil = _list_adt()
    x = Var("x", I32)
    p = PatternTuple((PatternConstructor(cons, (PatternVar(x), PatternWildcard())),
                      PatternConstructor(nil), PatternTuple((PatternWildcard(),))))
    assert pretty(p) == "(Cons(%x: int32, _), Nil, (_,))"
    assert pretty(PatternTuple(())) == "()"


def test_clause_alone():
    x = Var("x")
    assert pretty(Clause(PatternVar(x), x)) == "%x => %x"


# --- expressions -----------------------------------------------------------------------------

def test_tuples_and_projection():
    a, b = Var("a"), Var("b")
    assert pretty(Tuple(())) == "()"
    assert pretty(Tuple((a,))) == "(%a,)"
    assert pretty(Tuple((a, b))) == "(%a, %b)"
    assert pretty(TupleGetItem(Var("t"), 0)) == "%t.0"
    assert pretty(TupleGetItem(Tuple((a, b)), 1)) == "(%a, %b).1"


def test_references_and_grad():
    r = Var("r")
    assert pretty(RefCreate(const(1))) == "ref(1)"
    assert pretty(RefRead(r)) == "ref_read(%r)"
    assert pretty(RefWrite(r, const(2))) == "ref_write(%r, 2)"
    assert pretty(Grad(Var("f"))) == "grad(%f)"


def test_calls_of_globals_vars_constructors():
    td, cons, nil = _list_adt()
    f = Var("f")
    assert pretty(Call(GlobalVar("g"), (const(1),))) == "@g(1)"
    assert pretty(Call(f, ())) == "%f()"
    assert pretty(Call(nil, ())) == "Nil"
    assert pretty(cons) == "Cons"
    assert pretty(Call(cons, (const(1), Call(nil, ())))) == "Cons(1, Nil)"


def test_postfix_operands_are_parenthesized_when_needed():
    td, cons, nil = _list_adt()
    x = Var("x")
    assert pretty(Call(Function((x,), x), (const(1),))) == "(fn (%x) {\n  %x\n})(1)"
    assert pretty(TupleGetItem(const(-1), 0)) == "(-1).0"
    assert pretty(Call(Call(nil, ()), ())) == "(Nil)()"
    assert pretty(Call(Call(Var("f"), ()), ())) == "%f()()"


def test_call_attrs_of_every_kind():
    e = Call(Op("nn.conv2d"), (Var("d"), Var("w")), Attrs({
        "padding": (1, 1), "channels": 16, "epsilon": 1e-05, "rate": 0.5, "layout": "NC\"HW\n",
        "out_dtype": None, "flag": True, "off": False, "big": 2**40, "neg": -3,
        "nested": ((1, 2), ()), "huge": 1e300, "inf": float("inf"), "ninf": float("-inf"),
    }))
    assert pretty(e) == (
        'nn.conv2d(%d, %w, padding=[1, 1], channels=16, epsilon=1e-05f, rate=0.5f, '
        'layout="NC\\"HW\\n", out_dtype=None, flag=True, off=False, big=1099511627776i64, '
        'neg=-3, nested=[[1, 2], []], huge=1e+300f64, inf=inff, ninf=-inff)')


def test_string_attr_escapes_control_characters():
    e = Call(Op("nn.relu"), (Var("x"),), Attrs({"s": "a\\b\t\x01é"}))
    assert pretty(e) == 'nn.relu(%x, s="a\\\\b\\t\\x01é")'


# --- constants -------------------------------------------------------------------------------

@pytest.mark.parametrize("value, dtype, text", [
    (1, "int32", "1"), (-3, "int32", "-3"), (1, "int64", "1i64"), (7, "uint8", "7u8"),
    (2.5, "float32", "2.5f"), (2, "float16", "2.0f16"), (0.5, "float64", "0.5f64"),
    (True, "bool", "True"), (False, "bool", "False"), (np.inf, "float32", "inff"),
    (-np.inf, "float16", "-inff16"), (np.nan, "float32", "nanf"), (1e-05, "float32", "1.0e-05f"),
])
def test_scalar_literals(value, dtype, text):
    assert pretty(const(value, dtype)) == text


def _metadata(text):
    head, _, payload = text.partition("#[metadata]\n")
    return head, json.loads(payload)


def test_tensor_constants_go_to_metadata():
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    c = Constant(arr)
    text = pretty(Tuple((c, c, const(np.array([True, False])))))
    head, meta = _metadata(text)
    assert head == "(meta[relay.Constant][0], meta[relay.Constant][0], meta[relay.Constant][1])\n"
    entries = meta["relay.Constant"]
    assert entries[0]["dtype"] == "float32" and entries[0]["shape"] == [2, 3]
    assert base64.b64decode(entries[0]["data"]) == arr.astype("<f4").tobytes()
    assert entries[1] == {"dtype": "bool", "shape": [2], "data": base64.b64encode(b"\x01\x00")
                          .decode()}


def test_nan_with_payload_goes_to_metadata():
    bits = np.array(0x7FC00001, dtype=np.uint32).view(np.float32)
    text = pretty(Constant(bits))
    head, meta = _metadata(text)
    assert head == "meta[relay.Constant][0]\n"
    assert base64.b64decode(meta["relay.Constant"][0]["data"]) == bits.tobytes()


# --- types -----------------------------------------------------------------------------------

def test_types():
    td, cons, nil = _list_adt()
    a = TypeVar("A")
    assert pretty(F32) == "float32"
    assert pretty(TensorType((10,), "float32")) == "Tensor[(10), float32]"
    assert pretty(TensorType((1, ANY), "int8")) == "Tensor[(1, ?), int8]"
    assert pretty(TupleType(())) == "()"
    assert pretty(TupleType((F32,))) == "(float32,)"
    assert pretty(TupleType((F32, I32))) == "(float32, int32)"
    assert pretty(FuncType((F32,), I32)) == "fn (float32) -> int32"
    assert pretty(FuncType((a,), a, (a,))) == "fn [A](A) -> A"
    assert pretty(RefType(F32)) == "Ref[float32]"
    assert pretty(TypeCall(td.header, (I32,))) == "List[int32]"
    assert pretty(IncompleteType()) == "_"
    assert pretty(TensorType((), "float32x4")) == "float32x4"


@pytest.mark.parametrize("dim, text", [
    (n, "n"), (2 * n, "2*n"), (n + 1, "n + 1"), (sympy.floor(n / 2), "floor(n/2)"),
    (n * n, "n*n"), (n * shape_var("m"), "m*n"), (sympy.Mod(n, 3), "n % 3"),
    (n - 1, "n - 1"), (sympy.ceiling(n / 3), "ceil(n/3)"), (sympy.Integer(4), "4"),
])
def test_symbolic_dims(dim, text):
    assert pretty(TensorType((dim,), "float32")) == f"Tensor[({text}), float32]"


# --- sharing ---------------------------------------------------------------------------------

def test_shared_node_is_bound_once_at_top_level():
    x = Var("x")
    s = add(x, x)
    assert pretty(Tuple((s, s))) == "%0 = add(%x, %x);\n(%0, %0)"


def test_shared_node_after_the_let_it_uses():
    a = Var("a")
    s = add(a, a)
    e = Let(a, const(1), Tuple((s, Call(Op("multiply"), (s, s)))))
    assert pretty(e) == "let %a = 1;\n%0 = add(%a, %a);\n(%0, multiply(%0, %0))"


def test_shared_node_is_bound_in_innermost_block():
    x, c = Var("x"), Var("c")
    s = add(x, x)
    fn = Function((x, c), If(c, Tuple((s, s)), const(0)))
    assert pretty(fn) == (
        "fn (%x, %c) {\n"
        "  if (%c) {\n"
        "    %0 = add(%x, %x);\n"
        "    (%0, %0)\n"
        "  } else {\n"
        "    0\n"
        "  }\n"
        "}")


def test_node_shared_by_both_branches_is_hoisted_before_the_if():
    x, c = Var("x"), Var("c")
    s = add(x, x)
    e = If(c, s, s)
    assert pretty(e) == "%0 = add(%x, %x);\nif (%c) {\n  %0\n} else {\n  %0\n}"


def test_shared_node_inside_match_clause_gets_braces():
    td, cons, nil = _list_adt()
    h, t = Var("h"), Var("t")
    s = add(h, h)
    m = Match(Var("l"), (Clause(PatternConstructor(cons, (PatternVar(h), PatternVar(t))),
                                Tuple((s, s))),))
    assert pretty(m) == (
        "match (%l) {\n"
        "  Cons(%h, %t) => {\n"
        "    %0 = add(%h, %h);\n"
        "    (%0, %0)\n"
        "  },\n"
        "}")


def test_shared_let_is_a_parenthesized_binding():
    y = Var("y")
    shared = Let(y, const(1), add(y, y))
    assert pretty(Tuple((shared, shared))) == \
        "%0 = (\n  let %y = 1;\n  add(%y, %y)\n);\n(%0, %0)"


def test_shared_leaves_are_printed_again():
    x = Var("x")
    one = const(1)
    assert pretty(Tuple((one, one, x, x))) == "(1, 1, %x, %x)"


def test_doubling_chain_is_linear():
    cur = Var("x")
    for _ in range(60):
        cur = add(cur, cur)
    text = pretty(cur)
    assert len(text) < 2000
    lines = text.splitlines()
    assert len(lines) == 60
    assert lines[0] == "%0 = add(%x, %x);"
    assert lines[-1] == "add(%58, %58)"


def test_deep_inline_chain_is_cut_into_bindings():
    cur = Var("x")
    for _ in range(3 * INLINE_DEPTH):
        cur = Call(Op("negative"), (cur,))
    lines = pretty(cur).splitlines()
    assert len(lines) > 1
    assert all(line.count("negative(") <= INLINE_DEPTH + 1 for line in lines)


def test_graph_numbers_skip_numeric_variable_names():
    zero = Var("0")
    s = add(zero, zero)
    text = pretty(Function((zero,), Tuple((s, s))))
    assert text == "fn (%0) {\n  %1 = add(%0, %0);\n  (%1, %1)\n}"


def test_node_shared_with_recursive_function_is_printed_at_each_use():
    f = Var("f")
    s = Call(f, (const(1),))
    e = Let(f, Function((), s), s)
    text = pretty(e)
    assert "%0" not in text
    assert text == "let %f = fn () {\n  %f(1)\n};\n%f(1)"


# --- names -----------------------------------------------------------------------------------

def test_shadowing_binder_is_renamed():
    a1, a2 = Var("a"), Var("a")
    e = Let(a1, const(1), Let(a2, add(a1, const(2)), add(a1, a2)))
    assert pretty(e) == "let %a = 1;\nlet %a1 = add(%a, 2);\nadd(%a, %a1)"


def test_sibling_scopes_keep_names():
    x1, x2 = Var("x"), Var("x")
    e = Tuple((Function((x1,), x1), Function((x2,), x2)))
    assert pretty(e) == "(fn (%x) {\n  %x\n}, fn (%x) {\n  %x\n})"


def test_free_variable_keeps_its_name_and_binders_avoid_it():
    free, bound = Var("a"), Var("a")
    e = Let(bound, free, add(bound, free))
    assert pretty(e) == "let %a1 = %a;\nadd(%a1, %a)"


def test_distinct_free_variables_with_one_name_are_renamed():
    assert pretty(Tuple((Var("x"), Var("x")))) == "(%x, %x1)"


def test_name_ending_in_digit_gets_underscore_suffix():
    v1, v2 = Var("x1"), Var("x1")
    assert pretty(Let(v1, const(1), Let(v2, v1, v2))) == \
        "let %x1 = 1;\nlet %x1_1 = %x1;\n%x1_1"


def test_invalid_and_empty_hints_are_sanitized():
    a, b = Var(""), Var("a-b")
    assert pretty(Let(a, const(1), Let(b, a, b))) == "let %v = 1;\nlet %a_b = %v;\n%a_b"


def test_annotated_free_variables_are_declared():
    z = Var("z", TensorType((3,), "int8"))
    assert pretty(Tuple((z, z))) == "free_var %z: Tensor[(3), int8];\n(%z, %z)"


def test_free_variable_declared_once_per_module():
    z = Var("z", I32)
    mod = IRModule({"f": Function((), z), "main": Function((), z)})
    text = pretty(mod)
    assert text.count("free_var %z: int32;") == 1


def test_type_parameters_avoid_shadowing_and_adt_names():
    outer, inner = TypeVar("A"), TypeVar("A")
    x = Var("x", inner)
    fn = Function((), Function((x,), x, None, (inner,)), None, (outer,))
    assert pretty(fn) == "fn [A]() {\n  fn [A1](%x: A1) {\n    %x\n  }\n}"
    clash = TypeVar("List")
    assert pretty(FuncType((clash,), clash, (clash,))) == "fn [List1](List1) -> List1"


# --- prelude ---------------------------------------------------------------------------------

def test_prelude_definitions_are_left_out_unless_asked():
    from semantics.parser import parse

    mod = parse("def @main() { @map(fn (%x: int32) { %x }, Cons(1, Nil)) }")
    assert "map" in mod.functions and "List" in mod.types
    text = pretty(mod)
    assert "def @map" not in text and "type List" not in text
    full = pretty(mod, show_prelude=True)
    assert "def @map" in full and "type List" in full


def test_unreferenced_prelude_definition_is_kept():
    from semantics.prelude import prelude_module

    pre = prelude_module()
    mod = IRModule({"main": Function((), const(1)), "id": pre.functions["id"]})
    assert "def @id" in pretty(mod)


def test_pretty_rejects_non_nodes():
    with pytest.raises(TypeError):
        pretty(42)
