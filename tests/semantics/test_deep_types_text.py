"""Deep types in the text format and structural equality (docs/architecture.md#robustness).

A 20,000-deep type of every former — ``Ref[...]``, one-element and pair tuples,
function types (nested in the result and in a parameter), ADT calls — parses,
prints back to the same text, re-parses to a type that ``types_equal`` and
``alpha_equal`` accept, and hashes alike; inside annotations of a module too.
Error messages about such types are built without recursion. Also ``int``
(TVM's spelling of ``int32``).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semantics import errors
from semantics.alpha import alpha_equal, structural_hash, types_equal
from semantics.errors import ParseError, RelayTypeError
from semantics.parser import parse, parse_expr, parse_type
from semantics.printer import pretty
from semantics.printing.types import type_summary
from semantics.shapes import shape_var
from semantics.types import (
    FuncType,
    GlobalTypeVar,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
)

N = 20_000
I32 = TensorType((), "int32")
F32 = TensorType((), "float32")

# former name -> (text before the inner type, text after it)
FORMERS: dict[str, tuple[str, str]] = {
    "ref": ("Ref[", "]"),
    "tuple1": ("(", ",)"),
    "pair": ("(int32, ", ")"),
    "fn_ret": ("fn () -> ", ""),
    "fn_arg": ("fn (", ") -> float32"),
    "list": ("List[", "]"),
    "option": ("Option[", "]"),
}


def build(former: str, inner: Type) -> Type:
    """The type ``former`` wraps around ``inner``, built without the parser."""
    if former == "ref":
        return RefType(inner)
    if former == "tuple1":
        return TupleType((inner,))
    if former == "pair":
        return TupleType((I32, inner))
    if former == "fn_ret":
        return FuncType((), inner)
    if former == "fn_arg":
        return FuncType((inner,), F32)
    return TypeCall(GlobalTypeVar("List" if former == "list" else "Option"), (inner,))


def nest_text(formers: list[str], bottom: str) -> str:
    heads = [FORMERS[f][0] for f in formers]
    tails = [FORMERS[f][1] for f in reversed(formers)]
    return "".join(heads) + bottom + "".join(tails)


def nest_type(formers: list[str], bottom: Type) -> Type:
    t = bottom
    for f in reversed(formers):
        t = build(f, t)
    return t


def check_round_trip(formers: list[str], bottom_text: str, bottom: Type) -> Type:
    text = nest_text(formers, bottom_text)
    parsed = parse_type(text)
    built = nest_type(formers, bottom)
    assert pretty(parsed) == text
    assert pretty(built) == text
    again = parse_type(pretty(parsed))
    assert types_equal(parsed, again)
    assert types_equal(parsed, built)
    assert alpha_equal(parsed, again)
    assert structural_hash(parsed) == structural_hash(again) == structural_hash(built)
    return parsed


@pytest.mark.parametrize("former", sorted(FORMERS))
def test_deep_type_round_trip(former):
    parsed = check_round_trip([former] * N, "int32", I32)
    other = nest_type([former] * N, F32)
    assert not types_equal(parsed, other)
    assert not alpha_equal(parsed, other)


def test_deep_mixed_formers_with_symbolic_dims():
    rng = random.Random(19)
    formers = [rng.choice(sorted(FORMERS)) for _ in range(N)]
    n = shape_var("n")
    bottom = TensorType((n + n, 3), "float32")
    parsed = check_round_trip(formers, "Tensor[(2*n, 3), float32]", bottom)
    # n + n and 2*n are the same dim; a different dim at the bottom is a different type
    assert types_equal(parsed, nest_type(formers, TensorType((2 * n, 3), "float32")))
    assert not types_equal(parsed, nest_type(formers, TensorType((n, 3), "float32")))


@given(st.lists(st.sampled_from(sorted(FORMERS)), max_size=60),
       st.sampled_from(["int32", "float32", "Tensor[(n, 3), int8]", "()"]))
def test_nested_formers_round_trip(formers, bottom_text):
    bottom = parse_type(bottom_text)
    check_round_trip(formers, bottom_text, bottom)


def test_deep_parenthesized_type_is_the_inner_type():
    assert types_equal(parse_type("(" * N + "int32" + ")" * N), I32)


def test_deep_ref_call_syntax():
    t = parse_type("ref(" * N + "int32" + ")" * N)
    assert pretty(t) == "Ref[" * N + "int32" + "]" * N
    assert types_equal(t, nest_type(["ref"] * N, I32))


def test_deep_function_types_with_type_parameters():
    # each level binds its own `A`; the printer renames the shadowing ones (A, A1, ...).
    # 2,000 deep: the printer's choice of a fresh name is linear in the shadowing depth.
    depth = 2_000
    text = "fn [A](A) -> " * depth + "int32"
    t = parse_type(text)
    again = parse_type(pretty(t))
    assert types_equal(t, again)
    assert structural_hash(t) == structural_hash(again)
    assert types_equal(t, nest_fn_with_params(depth))
    # the innermost parameter type refers to the outermost binder instead: different
    assert not types_equal(t, nest_fn_with_params(depth, capture_outermost=True))


def nest_fn_with_params(depth: int, *, capture_outermost: bool = False) -> Type:
    """``fn [B](B) -> fn [B](B) -> ... int32``; optionally the innermost ``B`` use is the
    outermost binder's."""
    tvs = [TypeVar("B") for _ in range(depth)]
    t: Type = I32
    for k in reversed(range(depth)):
        use = tvs[0] if capture_outermost and k == depth - 1 else tvs[k]
        t = FuncType((use,), t, (tvs[k],))
    return t


@pytest.mark.parametrize("former", ["list", "fn_arg"])
def test_deep_types_in_annotations_of_a_module(former):
    t = nest_text([former] * N, "int32")
    text = f"def @f(%x: {t}) -> {t} {{\n  let %y: {t} = %x;\n  %y\n}}\n"
    mod = parse(text)
    back = parse(pretty(mod))
    assert alpha_equal(mod, back)
    assert structural_hash(mod) == structural_hash(back)
    different = parse(text.replace("int32", "float32", 1))
    assert not alpha_equal(mod, different)
    expr = parse_expr(f"fn (%x: {t}) -> {t} {{ %x }}")
    assert alpha_equal(expr, parse_expr(pretty(expr)))


def test_error_inside_a_deep_type_is_a_parse_error():
    text = "Ref[" * N + "intt32" + "]" * N
    with pytest.raises(ParseError) as info:
        parse_type(text)
    assert "unknown type `intt32`" in info.value.message
    assert info.value.span.column == 4 * N + 1


def test_messages_about_deep_types_are_built_without_recursion():
    deep = nest_type(["tuple1"] * N, I32)
    other = nest_type(["ref"] * N, I32)
    summary = type_summary(deep, 100)
    assert summary.endswith("…") and len(summary) == 101
    assert summary.startswith("(" * 100)
    assert type_summary(I32) == "int32"
    assert len(repr(deep)) < 300
    err = RelayTypeError(errors.type_mismatch(type_summary(deep), type_summary(other)))
    assert str(err).startswith("error: type mismatch: expected ((")
    # the type checker's message helper prints with the (iterative) printer and elides
    # the middle of a type too long to read
    from typechecker import messages

    shown = messages.show(other)
    assert shown.startswith("Ref[" * 10)
    assert len(shown) < 500 and "..." in shown


def test_int_is_int32():
    assert types_equal(parse_type("int"), I32)
    assert pretty(parse_type("int")) == "int32"
    assert pretty(parse_type("(int, fn (int) -> Tensor[(2, n), int])")) == \
        "(int32, fn (int32) -> Tensor[(2, n), int32])"
    mod = parse("def @main(%x: int) -> int { %x }")
    assert types_equal(mod["main"].params[0].type_annotation, I32)
    assert "int32" in pretty(mod)
    # a type parameter called `int` shadows it
    t = parse_type("fn [int](int) -> int")
    assert isinstance(t, FuncType) and t.ret_type is t.type_params[0]
    assert types_equal(t, parse_type(pretty(t)))
