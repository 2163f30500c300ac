"""Error reporting: stable prefixes, the failing rule (message and ``code``), both types, spans."""

from __future__ import annotations

import pytest
from tc_util import check, expect_type_error, type_of

from semantics import parse
from semantics.errors import RelayTypeError

SOURCE = """def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(3, 2), float32]) {
  let %z = add(%x, %y);
  %z
}
"""


def test_relation_error_has_span_caret_relation_and_arguments():
    mod = parse(SOURCE, source_name="model.relay")
    with pytest.raises(RelayTypeError) as info:
        check(mod)
    err = info.value
    assert err.code == "Type-Call-Op"
    assert err.span.source == "model.relay" and err.span.line == 2 and err.span.column == 12
    text = str(err)
    assert text.startswith("model.relay:2:12: error: relation Broadcast failed for "
                           "(Tensor[(2, 3), float32], Tensor[(3, 2), float32])")
    assert "(Type-Call-Op: add)" in text
    assert text.splitlines()[1].strip() == "let %z = add(%x, %y);"
    assert "^^^^" in text.splitlines()[2]


def test_mismatch_shows_both_types_and_the_rule():
    err = expect_type_error(type_of, "(fn (%a: (int32, float32)) { %a })((1, 2))",
                            prefix="type mismatch in Type-Call (argument 1 of the callee)")
    assert "expected (int32, float32), found (int32, int32)" in err.message


def test_nested_dimension_conflict_is_pinpointed():
    err = expect_type_error(type_of, "fn (%a: Tensor[(2, 3), float32]) -> Tensor[(2, 4), float32]"
                                     " { %a }", prefix="type mismatch in Type-Function")
    assert "dimension 1: 4 and 3 differ" in err.message


def test_unbound_variable_span_points_at_the_variable():
    text = "let %a = 1;\n(%a, %b)"
    err = expect_type_error(type_of, text, prefix="unbound variable %b", rule="Type-Var")
    assert (err.span.line, err.span.column) == (2, 6)


def test_undefined_global_in_text():
    from semantics.expr import Call, Function, GlobalVar
    from semantics.module import IRModule
    from semantics.span import Span

    span = Span("m.relay", 3, 5, 3, 11)
    mod = IRModule({"main": Function((), Call(GlobalVar("nowhere", span=span), ()))})
    err = expect_type_error(check, mod, prefix="undefined global @nowhere", rule="Type-Global")
    assert err.span == span


def test_underconstrained_names_what_is_unknown():
    err = expect_type_error(type_of, "fn (%x) { nn.relu(%x) }", prefix="underconstrained",
                            rule="Type-Call-Op")
    assert "nn.relu" in err.message and "relation" in err.message


def test_infinite_type():
    expect_type_error(type_of, "fn (%f) { %f(%f) }", prefix="type mismatch",
                      contains=("infinite type",))


def test_errors_are_relay_type_errors_not_internal():
    for text in ["%undefined", "(1, 2).5", "if (1f) { 1 } else { 1 }", "add(1)",
                 "nn.conv2d(1f, 1f)", "let %r = ref(1); %r := 1f", "grad(1)",
                 "match (1) { Cons(_, _) => 1, }", "reshape(1f, newshape=[2])"]:
        with pytest.raises(RelayTypeError):
            type_of(text)
