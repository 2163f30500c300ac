"""The parser (docs/architecture.md#text): every construct, scoping, sharing, spans, depth."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy

from semantics import shapes
from semantics.expr import (
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
)
from semantics.module import IRModule
from semantics.parser import parse, parse_expr, parse_expr_with_module, parse_type
from semantics.types import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    Kind,
    RefType,
    TensorType,
    TupleType,
    TypeCall,
    TypeVar,
)
from semantics.visitor import post_order


def const_value(e):
    assert isinstance(e, Constant)
    return e.data.dtype.name, e.data.item()


def op_name(e):
    assert isinstance(e, Call) and isinstance(e.op, Op), e
    return e.op.name


# --- literals ------------------------------------------------------------------------------

@pytest.mark.parametrize("text, dtype, value", [
    ("1", "int32", 1),
    ("0", "int32", 0),
    ("-3", "int32", -3),
    ("2147483647", "int32", 2**31 - 1),
    ("-2147483648", "int32", -2**31),
    ("1i32", "int32", 1),
    ("127i8", "int8", 127),
    ("-128i8", "int8", -128),
    ("32767i16", "int16", 32767),
    ("-32768i16", "int16", -32768),
    ("9223372036854775807i64", "int64", 2**63 - 1),
    ("-9223372036854775808i64", "int64", -2**63),
    ("0u8", "uint8", 0),
    ("255u8", "uint8", 255),
    ("65535u16", "uint16", 65535),
    ("4294967295u32", "uint32", 2**32 - 1),
    ("18446744073709551615u64", "uint64", 2**64 - 1),
    ("1.5", "float32", 1.5),
    ("1.5f", "float32", 1.5),
    ("1.5f32", "float32", 1.5),
    ("2f16", "float16", 2.0),
    ("0.5f64", "float64", 0.5),
    ("1e5", "float32", 1e5),
    ("1e-05f", "float32", float(np.float32(1e-05))),
    ("1.0e-05f", "float32", float(np.float32(1e-05))),
    ("-0.25f", "float32", -0.25),
    ("65504f16", "float16", 65504.0),
    ("1.7976931348623157e308f64", "float64", 1.7976931348623157e308),
    ("True", "bool", True),
    ("False", "bool", False),
])
def test_literals(text, dtype, value):
    e = parse_expr(text)
    assert const_value(e) == (dtype, value)
    assert e.data.shape == ()


@pytest.mark.parametrize("text, dtype, sign", [
    ("inff", "float32", 1), ("-inff", "float32", -1), ("inff16", "float16", 1),
    ("-inff64", "float64", -1), ("inff32", "float32", 1),
])
def test_infinities(text, dtype, sign):
    dt, v = const_value(parse_expr(text))
    assert dt == dtype and math.isinf(v) and (v > 0) == (sign > 0)


@pytest.mark.parametrize("text, dtype", [("nanf", "float32"), ("nanf16", "float16"),
                                         ("nanf64", "float64")])
def test_nans(text, dtype):
    dt, v = const_value(parse_expr(text))
    assert dt == dtype and math.isnan(v)


def test_negative_zero_keeps_its_sign():
    e = parse_expr("-0.0f")
    assert np.signbit(e.data)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_float_literals_round_trip_bit_exactly(dtype):
    from semantics.dtypes import literal

    rng = np.random.default_rng(0)
    bits = {"float16": np.uint16, "float32": np.uint32, "float64": np.uint64}[dtype]
    raw = rng.integers(0, np.iinfo(bits).max, size=300, dtype=bits, endpoint=True)
    for x in raw.view(dtype):
        if np.isnan(x):
            continue
        e = parse_expr(literal(x, dtype))
        assert e.data.dtype == np.dtype(dtype)
        assert e.data.tobytes() == np.array(x, dtype=dtype).tobytes(), (x, literal(x, dtype))


def test_unary_minus_folds_only_into_literals():
    assert const_value(parse_expr("-3")) == ("int32", -3)
    assert const_value(parse_expr("- 3")) == ("int32", -3)
    neg = parse_expr("-%x")
    assert op_name(neg) == "negative" and isinstance(neg.args[0], Var)
    double = parse_expr("--3")
    assert op_name(double) == "negative" and const_value(double.args[0]) == ("int32", -3)
    sub = parse_expr("%x -3")
    assert op_name(sub) == "subtract" and const_value(sub.args[1]) == ("int32", 3)


# --- names and scoping ------------------------------------------------------------------

def test_unbound_locals_are_one_free_var_per_name():
    e = parse_expr("add(%x, %x)")
    assert isinstance(e.args[0], Var) and e.args[0] is e.args[1]
    assert e.args[0].name_hint == "x"


def test_free_var_statement():
    e = parse_expr("free_var %x: Tensor[(3), float32];\nadd(%x, %x)")
    x = e.args[0]
    assert x is e.args[1] and isinstance(x.type_annotation, TensorType)
    assert x.type_annotation.shape == (3,)


def test_let_and_shadowing():
    e = parse_expr("let %x = 1; let %x = add(%x, %x); %x")
    assert isinstance(e, Let) and isinstance(e.body, Let)
    inner = e.body
    assert inner.value.args[0] is e.var and inner.body is inner.var
    assert inner.var is not e.var


def test_let_value_sees_outer_binding():
    e = parse_expr("let %x = %x; %x")
    assert e.value is not e.var and isinstance(e.value, Var)
    assert e.body is e.var


def test_let_bound_function_is_recursive():
    e = parse_expr("let %f = fn (%n: int32) -> int32 { %f(%n) }; %f")
    assert isinstance(e.value, Function)
    assert e.value.body.op is e.var
    parenthesized = parse_expr("let %f = (fn (%n: int32) { %f(%n) }); %f")
    assert parenthesized.value.body.op is parenthesized.var


def test_let_bound_call_of_function_literal_is_not_recursive():
    e = parse_expr("let %f = fn (%n: int32) { %f(%n) }(1); %f")
    assert isinstance(e.value, Call)
    inner_f = e.value.op.body.op
    assert inner_f is not e.var and isinstance(inner_f, Var)


def test_function_parameters_scope_and_shadowing():
    e = parse_expr("fn (%x: int32) { fn (%x: float32) { %x } }")
    inner = e.body
    assert inner.body is inner.params[0] and inner.params[0] is not e.params[0]


def test_let_scope_ends_with_block():
    e = parse_expr("(if (True) { let %y = 1; %y } else { 2 }, %y)")
    then_let = e.fields[0].true_branch
    assert e.fields[1] is not then_let.var  # the second %y is free


def test_sequencing_is_let_underscore():
    e = parse_expr("ref_write(%r, 1); 2")
    assert isinstance(e, Let) and e.var.name_hint == "_"
    assert isinstance(e.value, RefWrite) and const_value(e.body) == ("int32", 2)


def test_graph_bindings_share_nodes():
    e = parse_expr("%0 = add(%x, %x);\n%1 = multiply(%0, %0);\n%1")
    assert op_name(e) == "multiply"
    assert e.args[0] is e.args[1]
    assert op_name(e.args[0]) == "add"


def test_graph_binding_visible_in_nested_function():
    e = parse_expr("%0 = add(%x, %x); fn (%y) { multiply(%0, %y) }(%0)")
    assert e.op.body.args[0] is e.args[0]


def test_sixty_doublings_are_a_dag():
    lines = ["%0 = add(%x, %x);"]
    lines += [f"%{i} = add(%{i - 1}, %{i - 1});" for i in range(1, 60)]
    e = parse_expr("\n".join(lines) + "\n%59")
    nodes = post_order(e)
    assert len([n for n in nodes if isinstance(n, Call)]) == 60
    assert e.args[0] is e.args[1]


# --- operators, precedence, calls -------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("%a + %b * %c", "add(a, multiply(b, c))"),
    ("%a * %b + %c", "add(multiply(a, b), c)"),
    ("%a - %b - %c", "subtract(subtract(a, b), c)"),
    ("%a / %b / %c", "divide(divide(a, b), c)"),
    ("%a < %b == %c", "equal(less(a, b), c)"),
    ("%a == %b != %c", "not_equal(equal(a, b), c)"),
    ("%a || %b && %c", "logical_or(a, logical_and(b, c))"),
    ("%a && %b || %c", "logical_or(logical_and(a, b), c)"),
    ("%a <= %b + %c", "less_equal(a, add(b, c))"),
    ("%a >= %b", "greater_equal(a, b)"),
    ("%a > %b", "greater(a, b)"),
    ("-%a * %b", "multiply(negative(a), b)"),
    ("-%a.0", "negative(a.0)"),
    ("(%a + %b) * %c", "multiply(add(a, b), c)"),
    ("%r := %a + %b", "(r := add(a, b))"),
    ("!%r + %a", "add(!r, a)"),
    ("%a := %b := %c", "((a := b) := c)"),
    ("%f(%a)(%b)", "f(a)(b)"),
    ("%t.0.1", "t.0.1"),
    ("%f(%a).1", "f(a).1"),
])
def test_precedence(text, expected):
    assert _show(parse_expr(text)) == expected


def _show(e):
    if isinstance(e, Var):
        return e.name_hint
    if isinstance(e, Call):
        head = e.op.name if isinstance(e.op, Op) else _show(e.op)
        return f"{head}({', '.join(_show(a) for a in e.args)})"
    if isinstance(e, TupleGetItem):
        return f"{_show(e.tuple_value)}.{e.index}"
    if isinstance(e, RefWrite):
        return f"({_show(e.ref)} := {_show(e.value)})"
    if isinstance(e, RefRead):
        return f"!{_show(e.ref)}"
    raise AssertionError(type(e).__name__)


def test_operator_names_with_dots_and_attributes():
    e = parse_expr("nn.conv2d(%x, %w, padding=[1, 1], channels=16, kernel_size=(3, 3), "
                   "data_layout=\"NCHW\", out_dtype=\"\", groups=1)")
    assert op_name(e) == "nn.conv2d" and len(e.args) == 2
    assert dict(e.attrs) == {"padding": (1, 1), "channels": 16, "kernel_size": (3, 3),
                             "data_layout": "NCHW", "out_dtype": "", "groups": 1}
    assert list(e.attrs) == ["padding", "channels", "kernel_size", "data_layout", "out_dtype",
                             "groups"]


@pytest.mark.parametrize("text, value", [
    ("1", 1), ("-1", -1), ("2i64", 2), ("0.5f", 0.5), ("1e-05f", 1e-05), ("True", True),
    ("False", False), ("None", None), ("nullptr", None), ("\"a\\\"b\\n\"", "a\"b\n"),
    ("[1, [2, 3], []]", (1, (2, 3), ())), ("(1, 2)", (1, 2)), ("(7)", 7), ("[]", ()),
    ("NCHW", "NCHW"),
])
def test_attribute_values(text, value):
    e = parse_expr(f"sum(%x, axis={text})")
    assert e.attrs["axis"] == value
    assert type(e.attrs["axis"]) is type(value)


def test_nullary_constructor_is_a_call_and_unary_is_a_value():
    e = parse_expr("Cons(1, Nil)")
    assert isinstance(e, Call) and isinstance(e.op, Constructor) and e.op.name == "Cons"
    nil = e.args[1]
    assert isinstance(nil, Call) and nil.op.name == "Nil" and nil.args == ()
    bare = parse_expr("Cons")
    assert isinstance(bare, Constructor)
    explicit = parse_expr("Nil()")
    assert isinstance(explicit, Call) and explicit.args == ()


def test_none_is_a_constructor_in_expressions():
    e = parse_expr("Some(None)")
    assert e.op.name == "Some" and e.args[0].op.name == "None"


def test_globals():
    e = parse_expr("@f(1)")
    assert isinstance(e.op, GlobalVar) and e.op.name_hint == "f"


def test_grad_and_references():
    g = parse_expr("grad(fn (%x: float32) { %x })")
    assert isinstance(g, Grad) and isinstance(g.func, Function)
    r = parse_expr("let %r = ref(1); ref_write(%r, ref_read(%r)); !%r")
    assert isinstance(r.value, RefCreate)
    assert isinstance(r.body.value, RefWrite) and isinstance(r.body.value.value, RefRead)
    assert isinstance(r.body.body, RefRead) and r.body.body.ref is r.var


# --- tuples, if, match, functions --------------------------------------------------------

def test_tuples():
    assert isinstance(parse_expr("()"), Tuple) and parse_expr("()").fields == ()
    one = parse_expr("(1,)")
    assert isinstance(one, Tuple) and len(one.fields) == 1
    assert isinstance(parse_expr("(1)"), Constant)
    two = parse_expr("(1, 2.5,)")
    assert [const_value(f) for f in two.fields] == [("int32", 1), ("float32", 2.5)]
    proj = parse_expr("(1, 2).1")
    assert isinstance(proj, TupleGetItem) and proj.index == 1


def test_if():
    e = parse_expr("if (%c) { 1 } else { let %y = 2; %y }")
    assert isinstance(e, If) and isinstance(e.false_branch, Let)


def test_block_expression():
    e = parse_expr("{ let %x = 1; %x }")
    assert isinstance(e, Let)


def test_match_and_patterns():
    e = parse_expr("""
        match (%xs) {
          Cons(%h, Cons(_, %t: List[int32])) => { add(%h, 1) },
          Cons(%h, Nil) => %h,
          Nil => 0,
        }""")
    assert isinstance(e, Match) and e.complete and len(e.clauses) == 3
    first = e.clauses[0]
    assert isinstance(first, Clause) and isinstance(first.lhs, PatternConstructor)
    h, rest = first.lhs.patterns
    assert isinstance(h, PatternVar) and first.rhs.args[0] is h.var
    assert isinstance(rest.patterns[0], PatternWildcard)
    assert isinstance(rest.patterns[1].var.type_annotation, TypeCall)
    nil = e.clauses[2].lhs
    assert isinstance(nil, PatternConstructor) and nil.patterns == ()
    assert e.clauses[1].lhs.patterns[0].var is not h.var


def test_partial_match_and_tuple_patterns():
    e = parse_expr("match? ((%a, %b)) { (%x, (_, %y)) => %y }")
    assert isinstance(e, Match) and not e.complete
    pat = e.clauses[0].lhs
    assert isinstance(pat, PatternTuple) and isinstance(pat.patterns[1], PatternTuple)
    assert e.clauses[0].rhs is pat.patterns[1].patterns[1].var


def test_one_element_tuple_pattern_follows_tvm():
    e = parse_expr("match (%t) { (%x) => %x }")
    assert isinstance(e.clauses[0].lhs, PatternTuple)


def test_function_literal_full_syntax():
    e = parse_expr("fn [A, n: Shape](%x: A, %y: Tensor[(n), float32], Primitive=1, "
                   "hash=\"abc\") -> A { %x }")
    assert isinstance(e, Function)
    a, n = e.type_params
    assert a.kind is Kind.Type and n.kind is Kind.ShapeVar
    assert e.params[0].type_annotation is a and e.ret_type is a
    assert dict(e.attrs) == {"Primitive": 1, "hash": "abc"}
    angle = parse_expr("fn <B>(%x: B) -> B { %x }")
    assert angle.params[0].type_annotation is angle.type_params[0]


def test_function_attributes_without_parameters():
    e = parse_expr("fn (Primitive=1) { 1 }")
    assert e.params == () and e.attrs["Primitive"] == 1


# --- types -----------------------------------------------------------------------------

def test_scalar_and_tensor_types():
    t = parse_type("float32")
    assert isinstance(t, TensorType) and t.shape == () and t.dtype == "float32"
    assert parse_type("Tensor[(10), int8]").shape == (10,)
    assert parse_type("Tensor[(10,), int8]").shape == (10,)
    assert parse_type("Tensor[(), bool]").shape == ()
    assert parse_type("Tensor[(1i64, 3), float16]").shape == (1, 3)
    assert parse_type("float32x4").dtype == "float32x4"


def test_symbolic_dimensions():
    n = shapes.shape_var("n")
    m = shapes.shape_var("m")
    t = parse_type("Tensor[(n, ?, n * 2, n + 1, n - 1, floor(n / 2), ceil(m / 3), n % 4, "
                   "2 * 3), float32]")
    d = t.shape
    assert d[0] == n and d[1] is shapes.ANY and d[2] == 2 * n and d[3] == n + 1
    assert d[4] == n - 1 and sympy.simplify(d[5] - sympy.floor(n / 2)) == 0
    assert sympy.simplify(d[6] - sympy.ceiling(m / 3)) == 0
    assert sympy.simplify(d[7] - sympy.Mod(n, 4)) == 0
    assert d[8] == 6 and isinstance(d[8], int)


def test_compound_types():
    t = parse_type("(int32, (float32,), ())")
    assert isinstance(t, TupleType) and len(t.fields) == 3
    assert len(t.fields[1].fields) == 1 and t.fields[2].fields == ()
    assert isinstance(parse_type("(int32)"), TensorType)
    f = parse_type("fn (int32, float32) -> bool")
    assert isinstance(f, FuncType) and len(f.arg_types) == 2 and f.ret_type.dtype == "bool"
    poly = parse_type("fn [A](A) -> List[A]")
    assert poly.arg_types[0] is poly.type_params[0]
    assert isinstance(poly.ret_type, TypeCall) and poly.ret_type.args[0] is poly.type_params[0]
    assert isinstance(parse_type("Ref[int32]"), RefType)
    assert isinstance(parse_type("ref(int32)"), RefType)
    assert isinstance(parse_type("_"), IncompleteType)
    option = parse_type("Option[(int32, List[bool])]")
    assert isinstance(option.func, GlobalTypeVar) and option.func.name == "Option"


def test_type_variables_are_scoped():
    e = parse_expr("fn [A](%x: A) { fn [A](%y: A) { %y } }")
    outer, inner = e.type_params[0], e.body.type_params[0]
    assert outer is not inner and e.body.params[0].type_annotation is inner
    assert isinstance(outer, TypeVar)


# --- modules ----------------------------------------------------------------------------

def test_module_definitions_and_order_independence():
    mod = parse("""
        #[version = "0.0.5"]
        def @main(%x: Color) -> Tensor[(), int32] { @score(%x) }
        def @score(%c: Color) -> int32 {
          match (%c) { Red => 1, Green => 2, Mix(%a, %b) => add(@score(%a), @score(%b)) }
        }
        type Color { Red, Green, Mix(Color, Color) }
    """, prelude=False)
    assert isinstance(mod, IRModule) and set(mod.functions) == {"main", "score"}
    color = mod.types["Color"]
    assert [c.name for c in color.constructors] == ["Red", "Green", "Mix"]
    assert [c.tag for c in color.constructors] == [0, 1, 2]
    mix = color.constructors[2]
    assert mix.belong_to is color.header
    assert all(isinstance(t, TypeCall) and t.func.name == "Color" for t in mix.inputs)
    clause_ctor = mod["score"].body.clauses[2].lhs.constructor
    assert clause_ctor is mix


def test_polymorphic_adt_and_def_type_params():
    mod = parse("""
        type Pair[A, B] { MkPair(A, B), }
        def @swap[A, B](%p: Pair[A, B]) -> Pair[B, A] {
          match (%p) { MkPair(%a, %b) => MkPair(%b, %a) }
        }
        def @id<T>(%x: T) -> T { %x }
    """, prelude=False)
    pair = mod.types["Pair"]
    a, b = pair.type_vars
    assert pair.constructors[0].inputs == (a, b)
    swap = mod["swap"]
    ret = swap.ret_type
    assert ret.args == (swap.type_params[1], swap.type_params[0])
    assert mod["id"].params[0].type_annotation is mod["id"].type_params[0]


def test_spans_on_nodes():
    text = "def @main(%x: float32) {\n  let %y = add(%x, 1f);\n  multiply(%y, %y)\n}"
    mod = parse(text, source_name="prog.relay")
    main = mod["main"]
    assert main.span.line == 1 and main.span.source == "prog.relay"
    let = main.body
    assert (let.span.line, let.span.column) == (2, 3)
    assert (let.var.span.line, let.var.span.column) == (2, 7)
    add = let.value
    assert (add.span.line, add.span.column, add.span.end_column) == (2, 12, 23)
    assert (add.args[1].span.line, add.args[1].span.column) == (2, 20)
    mul = let.body
    assert (mul.span.line, mul.span.column) == (3, 3)
    for node in post_order(main):
        if not isinstance(node, (Var, Constructor)):
            assert node.span is not None, type(node).__name__


# --- depth and size ---------------------------------------------------------------------

def test_20000_let_chain():
    n = 20_000
    text = "".join(f"let %x{i} = add(%x{i - 1 if i else 'in'}, 1);\n" for i in range(n))
    e = parse_expr(text + f"%x{n - 1}")
    count = 0
    while isinstance(e, Let):
        count += 1
        e = e.body
    assert count == n


def test_20000_operator_graph():
    n = 20_000
    lines = ["%0 = add(%x, %x);"] + [f"%{i} = multiply(%{i - 1}, 2f);" for i in range(1, n)]
    mod = parse("def @main(%x: float32) {\n" + "\n".join(lines) + f"\n%{n - 1}\n}}")
    calls = [node for node in post_order(mod["main"]) if isinstance(node, Call)]
    assert len(calls) == n


@pytest.mark.parametrize("text", [
    "(" * 5000 + "1" + ")" * 5000,
    "negative(" * 5000 + "%x" + ")" * 5000,
    "if (True) { " * 3000 + "1" + " } else { 2 }" * 3000,
    "fn (%x) { " * 3000 + "%x" + " }" * 3000,
    "-" * 5000 + "%x",
    " + ".join(["%x"] * 5000),
    "match (%x) { _ => " * 2000 + "1" + " }" * 2000,
    "match (%x) { " + "Cons(_, " * 3000 + "Nil" + ")" * 3000 + " => 1 }",
])
def test_deep_nesting_parses(text):
    parse_expr(text)


# --- TVM printouts ----------------------------------------------------------------------

TVM_CONV = """#[version = "0.0.5"]
def @main(%data: Tensor[(1, 3, 224, 224), float32], %weight: Tensor[(16, 3, 3, 3), float32], \
%bias: Tensor[(16), float32]) -> Tensor[(1, 16, 224, 224), float32] {
  %0 = nn.conv2d(%data, %weight, padding=[1, 1, 1, 1], channels=16, kernel_size=[3, 3]) \
/* ty=Tensor[(1, 16, 224, 224), float32] */;
  %1 = nn.bias_add(%0, %bias) /* ty=Tensor[(1, 16, 224, 224), float32] */;
  %2 = nn.relu(%1) /* ty=Tensor[(1, 16, 224, 224), float32] */;
  multiply(%2, 0.5f /* ty=float32 */) /* ty=Tensor[(1, 16, 224, 224), float32] */
}
"""

TVM_FUSED = """#[version = "0.0.5"]
def @main(%x: Tensor[(10, 10), float32] /* ty=Tensor[(10, 10), float32] */) \
-> Tensor[(10, 10), float32] {
  %2 = fn (%p0: Tensor[(10, 10), float32] /* ty=Tensor[(10, 10), float32] */, Primitive=1, \
hash="6f1a5d0b3e9c1c2d") -> Tensor[(10, 10), float32] {
    %0 = add(%p0, %p0) /* ty=Tensor[(10, 10), float32] */;
    %1 = multiply(%0, 2f /* ty=float32 */) /* ty=Tensor[(10, 10), float32] */;
    exp(%1) /* ty=Tensor[(10, 10), float32] */
  } /* ty=fn (Tensor[(10, 10), float32]) -> Tensor[(10, 10), float32] */;
  %2(%x) /* ty=Tensor[(10, 10), float32] */
}
"""

TVM_FREE_VARS = """#[version = "0.0.5"]
free_var %x: Tensor[(2, 3), float32];
free_var %y: Tensor[(2, 3), float32];
%0 = add(%x, %y) /* ty=Tensor[(2, 3), float32] */;
%1 = (%0, %x) /* ty=(Tensor[(2, 3), float32], Tensor[(2, 3), float32]) */;
%2 = %1.0 /* ty=Tensor[(2, 3), float32] */;
subtract(%2, meta[relay.Constant][0] /* ty=Tensor[(2, 3), float32] */) \
/* ty=Tensor[(2, 3), float32] */
#[metadata]
{"relay.Constant": [{"dtype": "float32", "shape": [2, 3],
  "data": "AACAPwAAAEAAAEBAAACAQAAAoEAAAMBA"}]}
"""

TVM_ADT = """#[version = "0.0.5"]
type Seq[A] {
  More(A, Seq[A]),
  Done,
}

def @count[A](%s: Seq[A]) -> int32 {
  match (%s) {
    More(_, %rest) => {
      %0 = @count(%rest) /* ty=int32 */;
      add(%0, 1 /* ty=int32 */) /* ty=int32 */
    },
    Done => {
      0 /* ty=int32 */
    },
  }
}

def @main(%n: int32) -> int32 {
  let %s: Seq[int32] = More(%n, More(%n, Done /* ty=Seq[int32] */) /* ty=Seq[int32] */);
  @count(%s) /* ty=int32 */
}
"""


def test_tvm_conv_printout():
    mod = parse(TVM_CONV)
    body = mod["main"].body
    assert op_name(body) == "multiply"
    relu = body.args[0]
    conv = relu.args[0].args[0]
    assert op_name(conv) == "nn.conv2d"
    assert conv.attrs["padding"] == (1, 1, 1, 1) and conv.attrs["kernel_size"] == (3, 3)


def test_tvm_fused_printout():
    mod = parse(TVM_FUSED)
    call = mod["main"].body
    fused = call.op
    assert isinstance(fused, Function) and fused.attrs["Primitive"] == 1
    assert fused.attrs["hash"] == "6f1a5d0b3e9c1c2d"
    assert op_name(fused.body) == "exp"


def test_tvm_free_vars_and_metadata():
    e = parse_expr(TVM_FREE_VARS)
    assert op_name(e) == "subtract"
    meta = e.args[1]
    assert isinstance(meta, Constant) and meta.data.dtype == np.float32
    assert meta.data.tolist() == [[1, 2, 3], [4, 5, 6]]
    proj = e.args[0]
    assert isinstance(proj, TupleGetItem)
    x = proj.tuple_value.fields[1]
    assert x.name_hint == "x" and x.type_annotation.shape == (2, 3)
    assert proj.tuple_value.fields[0].args[0] is x


def test_tvm_adt_printout():
    mod = parse(TVM_ADT)
    assert set(mod.types) == {"Seq"} and set(mod.functions) == {"count", "main"}
    let = mod["main"].body
    assert isinstance(let.var.type_annotation, TypeCall)
    done = let.value.args[1].args[1]
    assert isinstance(done, Call) and done.op.name == "Done"


def test_metadata_every_dtype_bit_exact():
    import base64
    import json

    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal((2, 3)).astype(np.float32),
              rng.standard_normal(4).astype(np.float16),
              rng.standard_normal((1, 2, 2)).astype(np.float64),
              np.array([np.nan, -0.0, np.inf], dtype=np.float32),
              rng.integers(-128, 127, size=(3,), dtype=np.int8),
              rng.integers(0, 2**16, size=(2, 2), dtype=np.uint16),
              rng.integers(-2**62, 2**62, size=(2,), dtype=np.int64),
              np.array([True, False, True]),
              np.zeros((0, 3), dtype=np.int32)]
    table = {"relay.Constant": [
        {"dtype": a.dtype.name, "shape": list(a.shape),
         "data": base64.b64encode(a.astype(a.dtype.newbyteorder("<")).tobytes()).decode()}
        for a in arrays]}
    refs = ", ".join(f"meta[relay.Constant][{i}]" for i in range(len(arrays)))
    e = parse_expr(f"({refs})\n#[metadata]\n" + json.dumps(table))
    for got, want in zip(e.fields, arrays, strict=True):
        assert got.data.dtype == want.dtype and got.data.shape == want.shape
        assert got.data.tobytes() == want.tobytes()


def test_metadata_shared_reference_is_one_constant():
    e = parse_expr("(meta[relay.Constant][0], meta[Constant][0])\n#[metadata]\n"
                   '{"relay.Constant": [{"dtype": "int32", "shape": [1], "data": "BwAAAA=="}]}')
    assert e.fields[0] is e.fields[1] and e.fields[0].data.tolist() == [7]


def test_tvm_node_graph_metadata():
    import base64
    import json
    import struct

    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    blob = struct.pack("<QQiiiBBH", 0xDD5E40F096B4A13F, 0, 1, 0, 2, 2, 32, 1)
    blob += struct.pack("<2q", 2, 3) + struct.pack("<q", data.nbytes) + data.tobytes()
    meta = {"root": 1, "nodes": [
        {"type_key": ""},
        {"type_key": "Map", "keys": ["relay.Constant"], "data": [2]},
        {"type_key": "Array", "data": [3]},
        {"type_key": "relay.Constant", "attrs": {"_checked_type_": "0", "data": "0",
                                                 "span": "0"}},
    ], "b64ndarrays": [base64.b64encode(blob).decode()], "attrs": {"tvm_version": "0.8.0"}}
    e = parse_expr("meta[relay.Constant][0]\n#[metadata]\n" + json.dumps(meta, indent=2))
    assert e.data.tolist() == data.tolist() and e.data.dtype == np.float32


def test_parse_expr_with_module_returns_needed_prelude():
    e, mod = parse_expr_with_module("@length(Cons(1, Nil))")
    assert isinstance(e.op, GlobalVar)
    assert set(mod.functions) == {"length"} and set(mod.types) == {"List"}
    e2, mod2 = parse_expr_with_module("add(1, 2)")
    assert len(mod2.functions) == 0 and len(mod2.types) == 0


def test_comments_and_version_header_are_ignored():
    e = parse_expr('#[version = "0.0.5"]\n// line comment\n/* block /* nested */ comment */ 1')
    assert const_value(e) == ("int32", 1)


# --- round trips through the printer (a few; the printer's own suite owns the rest) --------

@pytest.mark.parametrize("text", [TVM_CONV, TVM_FUSED, TVM_ADT])
def test_tvm_samples_round_trip_through_the_printer(text):
    from semantics.alpha import alpha_equal
    from semantics.printer import pretty

    mod = parse(text)
    assert alpha_equal(parse(pretty(mod)), mod)


def test_prelude_round_trips_through_the_printer():
    from semantics.alpha import alpha_equal
    from semantics.prelude import prelude_text
    from semantics.printer import pretty

    mod = parse(prelude_text(), prelude=False)
    assert alpha_equal(parse(pretty(mod, show_prelude=True), prelude=False), mod)


def test_expression_with_free_vars_and_metadata_round_trips():
    from semantics.alpha import alpha_equal
    from semantics.printer import pretty

    e = parse_expr(TVM_FREE_VARS)
    assert alpha_equal(parse_expr(pretty(e)), e)


def test_else_if_chain_is_nested_if():
    from semantics.expr import If

    e = parse_expr("if (True) { 1 } else if (False) { 2 } else { 3 }")
    assert isinstance(e, If) and isinstance(e.false_branch, If)
    assert isinstance(e.false_branch.false_branch, Constant)


def test_ackermann_from_the_docs_parses():
    mod = parse("""
def @ackermann(%m : Tensor[(), int32], %n : Tensor[(), int32]) -> Tensor[(), int32] {
    if (%m == 0) {
        %n + 1
    } else if (%m > 0 && %n == 0) {
        @ackermann(%m - 1, 1)
    } else {
        @ackermann(%m - 1, @ackermann(%m, %n - 1))
    }
}""")
    assert "ackermann" in mod.functions
