"""Text that TVM's own parser (Relay text format 0.0.5) accepts parses here with TVM's meaning.

Each case was found running programs printed by TVM: integer literals that need 64 bits, the
bare ``i`` suffix, ``/`` inside ``%``-names, attributes on calls of non-operators, float
literals beyond the dtype's range, and the version header.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import interpreter
import typechecker
from semantics import alpha_equal, pretty
from semantics.errors import ParseError, RelayRuntimeError
from semantics.expr import Call, Constant, Function, Let, Var
from semantics.parser import parse, parse_expr


def _constant(text: str) -> np.ndarray:
    e = parse_expr(text)
    assert isinstance(e, Constant)
    return e.data


# --- integer literals ------------------------------------------------------------------------

@pytest.mark.parametrize("text, dtype, value", [
    ("2147483647", "int32", 2**31 - 1),
    ("2147483648", "int64", 2**31),
    ("-2147483648", "int32", -2**31),
    ("-2147483649", "int64", -2**31 - 1),
    ("9223372036854775807", "int64", 2**63 - 1),
    ("-9223372036854775808", "int64", -2**63),
    ("-42i", "int32", -42),
    ("42i", "int32", 42),
])
def test_unsuffixed_and_i_suffixed_integers(text, dtype, value):
    data = _constant(text)
    assert data.dtype == np.dtype(dtype)
    assert int(data) == value


@pytest.mark.parametrize("text", ["9223372036854775808", "-9223372036854775809",
                                  "99999999999999999999999"])
def test_integer_too_large_for_int64_is_a_parse_error_with_a_span(text):
    with pytest.raises(ParseError, match="out of range for int64") as info:
        parse_expr("let %x = 1;\n" + text)
    assert info.value.span is not None
    assert info.value.span.line == 2
    assert info.value.span.column == 1


def test_i_suffix_is_still_bounded_by_int32():
    with pytest.raises(ParseError, match="out of range for int32"):
        parse_expr("2147483648i")


@given(st.integers(min_value=-2**63, max_value=2**63 - 1))
def test_every_int64_value_parses_unsuffixed_and_prints_back(value):
    data = _constant(str(value))
    assert int(data) == value
    expected = "int32" if -2**31 <= value < 2**31 else "int64"
    assert data.dtype == np.dtype(expected)
    again = parse_expr(pretty(parse_expr(str(value))))
    assert isinstance(again, Constant)
    assert again.data.dtype == data.dtype and int(again.data) == value


def test_int64_literal_evaluates_and_type_checks():
    assert pretty(typechecker.type_of("2147483648 + 1i64")) == "int64"
    mod = parse("def @main() { 2147483648 }")
    result = interpreter.evaluate(mod)
    assert result.dtype == np.dtype("int64") and int(result) == 2**31


# --- float literals --------------------------------------------------------------------------

@pytest.mark.parametrize("text, dtype", [
    ("65505f16", "float16"), ("65519f16", "float16"), ("-65505f16", "float16"),
    ("1e39f", "float32"), ("3.5e38f", "float32"), ("-1e39f", "float32"), ("1e39", "float32"),
    ("1e309f64", "float64"),
])
def test_float_literal_beyond_the_dtype_is_a_parse_error(text, dtype):
    with pytest.raises(ParseError, match=f"out of range for {dtype}") as info:
        parse_expr(text)
    assert info.value.span is not None


@pytest.mark.parametrize("text, dtype, value", [
    ("65504f16", "float16", 65504.0), ("-65504f16", "float16", -65504.0),
    ("65500f16", "float16", 65504.0),     # how the printer writes float16 max
    ("3.4028235e38f", "float32", float(np.finfo(np.float32).max)),
    ("inff", "float32", float("inf")), ("-inff16", "float16", float("-inf")),
])
def test_largest_finite_and_infinite_float_literals_stay(text, dtype, value):
    data = _constant(text)
    assert data.dtype == np.dtype(dtype)
    assert float(data) == value


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_the_largest_finite_value_prints_and_re_parses(dtype):
    largest = np.finfo(dtype).max
    for value in (largest, -largest):
        e = Constant(np.array(value, dtype=dtype))
        again = parse_expr(pretty(e))
        assert isinstance(again, Constant)
        assert again.data.dtype == np.dtype(dtype) and again.data == value


# --- `/` in names ----------------------------------------------------------------------------

def test_slash_is_a_name_character():
    e = parse_expr("let %base/x = 1; %base/x")
    assert isinstance(e, Let)
    assert e.var.name_hint == "base/x"
    assert e.body is e.var


def test_slash_between_names_still_divides():
    for text in ("fn (%a: int32, %b: int32) { %a / %b }",
                 "fn (%a: int32, %b: int32) { %a/%b }"):
        fn = parse_expr(text)
        assert isinstance(fn, Function) and isinstance(fn.body, Call)
        assert fn.body.op.name == "divide"   # type: ignore[union-attr]


def test_slash_names_in_a_module_print_and_re_parse():
    text = ('def @main(%conv1/weight: float32, %block/a.b/c: float32) {\n'
            '  let %out/0 = %conv1/weight * %block/a.b/c;\n  %out/0\n}')
    mod = parse(text)
    printed = pretty(mod)
    assert "%conv1/weight" in printed and "%block/a.b/c" in printed and "%out/0" in printed
    again = parse(printed)
    assert alpha_equal(mod["main"], again["main"])
    assert [p.name_hint for p in again["main"].params] == ["conv1/weight", "block/a.b/c"]


_WORD = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,4}", fullmatch=True)


@given(st.lists(_WORD, min_size=1, max_size=4))
def test_slash_joined_names_round_trip(parts):
    name = "/".join(parts)
    x = Var(name)
    e = Function((x,), Call(parse_expr("add"), (x, x)))
    printed = pretty(e)
    assert f"%{name}" in printed
    again = parse_expr(printed)
    assert alpha_equal(e, again)
    assert isinstance(again, Function) and again.params[0].name_hint == name


# --- attributes on calls of non-operators ----------------------------------------------------

_ATTR_CALLS = [
    ('def @f(%x: int32) { %x }\ndef @main() { @f(5, foo=1) }', {"foo": 1}, 5),
    ('def @main() { let %g = fn (%y: int32) { %y * 2 }; %g(5, bar="s") }', {"bar": "s"}, 10),
    ('def @main() { (fn (%y: int32) { %y + 1 })(5, k=[1, 2], none=None) }',
     {"k": (1, 2), "none": None}, 6),
]


@pytest.mark.parametrize("text, attrs, result", _ATTR_CALLS)
def test_attributes_on_non_operator_calls_are_kept(text, attrs, result):
    mod = parse(text)
    body = mod["main"].body
    call = body.body if isinstance(body, Let) else body
    assert isinstance(call, Call)
    assert dict(call.attrs.items()) == attrs


@pytest.mark.parametrize("text, attrs, result", _ATTR_CALLS)
def test_attributes_on_non_operator_calls_survive_print_and_parse(text, attrs, result):
    mod = parse(text)
    again = parse(pretty(mod))
    assert alpha_equal(mod["main"], again["main"])
    assert pretty(again) == pretty(mod)


@pytest.mark.parametrize("text, attrs, result", _ATTR_CALLS)
def test_checker_and_interpreter_ignore_attributes_of_non_operator_calls(text, attrs, result):
    mod = parse(text)
    typechecker.check(mod)
    assert int(interpreter.evaluate(mod)) == result


def test_attributes_must_still_follow_positional_arguments():
    with pytest.raises(ParseError, match="positional arguments come before attributes"):
        parse('def @f(%x: int32, %y: int32) { %x }\ndef @main() { @f(1, a=1, 2) }')


# --- version header --------------------------------------------------------------------------

def test_version_0_0_5_and_no_header_are_accepted():
    assert int(interpreter.evaluate(parse('#[version = "0.0.5"]\ndef @main() { 1 }'))) == 1
    assert int(interpreter.evaluate(parse('def @main() { 1 }'))) == 1


@pytest.mark.parametrize("version", ["0.0.4", "0.0.3", "0.0.6", "1.0.0", ""])
def test_other_versions_are_rejected_clearly(version):
    with pytest.raises(ParseError, match=f'unsupported text format version "{version}"') as info:
        parse(f'#[version = "{version}"]\ndef @main() {{ 1 }}')
    assert "0.0.5" in str(info.value)
    assert info.value.span is not None and info.value.span.line == 1


def test_slash_in_global_names_prints_and_re_parses():
    mod = parse("def @net/block1(%x: int32) { %x }\ndef @main() { @net/block1(3) }")
    assert set(mod.functions) == {"net/block1", "main"}
    again = parse(pretty(mod))
    assert set(again.functions) == {"net/block1", "main"}
    assert int(interpreter.evaluate(again)) == 3


# --- issue #33 item 9: TVM's own programs --------------------------------------------------

@pytest.mark.parametrize("op", ["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "sin",
                                "cos"])
@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8"])
def test_transcendentals_of_integer_tensors_type_check_and_cast_back(op, dtype):
    """TVM's relation accepts any dtype; ours computes in float64 and casts back (``cast``)."""
    mod = parse(f"def @main(%x: Tensor[(4), {dtype}]) {{ {op}(%x) }}")
    assert pretty(typechecker.type_of(mod["main"])) == f"fn (Tensor[(4), {dtype}]) -> " \
        f"Tensor[(4), {dtype}]"
    x = np.array([0, 1, 10, 100], dtype=dtype)
    got = interpreter.evaluate(mod, x)
    via_cast = parse(f"def @main(%x: Tensor[(4), {dtype}]) {{ "
                     f"cast({op}(cast(%x, dtype=\"float64\")), dtype=\"{dtype}\") }}")
    want = interpreter.evaluate(via_cast, x)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, want)


def test_log_of_an_integer_tensor_truncates_and_log_of_zero_is_zero():
    mod = parse("def @main(%x: Tensor[(3), int32]) { (log(%x), sqrt(%x)) }")
    log, sqrt = interpreter.evaluate(mod, np.array([0, 10, 100], np.int32))
    np.testing.assert_array_equal(log, np.array([0, 2, 4], np.int32))
    np.testing.assert_array_equal(sqrt, np.array([0, 3, 10], np.int32))


@pytest.mark.parametrize("text, name", [
    ("def @main() { %zz }", "%zz"),
    ("def @main() { %t.first }", "%t.first"),
    ("def @main(%x: int32) { let %y = %x; %w }", "%w"),
    ("def @main() { fn (%a: int32) { %b } }", "%b"),
])
def test_an_undeclared_local_is_a_parse_error_with_tvm_message(text, name):
    with pytest.raises(ParseError, match="this local variable has not been previously "
                                         "declared") as info:
        parse(text)
    span = info.value.span
    assert span is not None and span.line == 1
    assert text[span.column - 1:].startswith(name)


def test_open_terms_are_opt_in_for_modules_and_opt_out_for_expressions():
    with pytest.raises(ParseError, match="not been previously declared"):
        parse_expr("%t.first", open_terms=False)
    assert isinstance(parse_expr("free_var %x: int32; %x + 1", open_terms=False), Call)
    e = parse_expr("%x + %x")
    assert isinstance(e, Call) and e.args[0] is e.args[1]
    mod = parse("def @main() { %zz }", open_terms=True)
    assert isinstance(mod["main"].body, Var)


def test_a_definition_with_free_variables_prints_them_declared_and_parses_back():
    mod = parse("def @main(%a: int32) { %x + %a }", open_terms=True)
    text = pretty(mod)
    assert "free_var %x;" in text
    assert alpha_equal(parse(text), mod)


@pytest.mark.parametrize("dtype", ["uint1x4", "uint1", "int4", "int4x8", "uint2x16"])
def test_sub_byte_and_vector_dtypes_parse_kind_and_print_but_are_not_evaluated(dtype):
    mod = parse(f"def @main(%x: Tensor[(2), {dtype}]) {{ (%x, %x) }}")
    assert alpha_equal(parse(pretty(mod)), mod)
    assert pretty(typechecker.type_of(mod["main"])) == \
        f"fn (Tensor[(2), {dtype}]) -> (Tensor[(2), {dtype}], Tensor[(2), {dtype}])"
    with pytest.raises(RelayRuntimeError, match="cannot be evaluated"):
        interpreter.evaluate(mod, np.zeros(2, np.uint8))


@pytest.mark.parametrize("dtype", ["uint3", "int128", "uint1x0", "float8"])
def test_other_bit_widths_are_still_not_dtypes(dtype):
    with pytest.raises(ParseError, match="expected a dtype"):
        parse(f"def @main(%x: Tensor[(2), {dtype}]) {{ %x }}")
