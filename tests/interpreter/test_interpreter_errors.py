"""Every run-time error a program can provoke: a RelayRuntimeError with a span, nothing else."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from interp_util import run

from interpreter import evaluate, register_grad_expander
from semantics import IRModule, RelayError, RelayRuntimeError, RelayTypeError, parse, parse_expr
from semantics.errors import InternalError
from semantics.expr import (
    Attrs,
    Call,
    Clause,
    Constructor,
    Function,
    GlobalVar,
    Grad,
    If,
    Match,
    Op,
    PatternConstructor,
    PatternVar,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    const,
)
from semantics.types import GlobalTypeVar


def runtime_error(program, *args, **kwargs) -> RelayRuntimeError:
    kwargs.setdefault("check", False)
    with pytest.raises(RelayRuntimeError) as info:
        evaluate(program, *args, **kwargs)
    return info.value


def test_unbound_variable_when_unchecked():
    err = runtime_error(parse_expr("let %a = 1; %a + %b"))
    assert err.message == "unbound variable %b"
    assert (err.span.line, err.span.column) == (1, 18)


def test_unbound_variable_is_a_type_error_when_checked():
    with pytest.raises(RelayTypeError, match="unbound variable"):
        evaluate(parse_expr("let %a = 1; %a + %b"))


def test_unbound_variable_only_when_reached():
    assert evaluate(parse_expr("if (True) { 1 } else { %nope }"), check=False) == 1


def test_undefined_global():
    mod = parse("def @main() -> int32 { @nowhere(1) }")
    err = runtime_error(mod)
    assert err.message == "undefined global @nowhere"
    assert err.span is not None
    with pytest.raises(RelayTypeError):
        evaluate(mod)


def test_module_without_the_entry():
    err = runtime_error(parse("def @f() { 1 }"))
    assert err.message == "the module has no global @main"


def test_calling_a_non_function():
    err = runtime_error(parse_expr("let %x = 1; %x(2)"))
    assert err.message.startswith("cannot call a value that is not a function: 1")
    err = runtime_error(Call(const(3), ()))
    assert err.message.startswith("cannot call a value that is not a function")


def test_calling_an_adt_value():
    err = runtime_error(parse_expr("let %x = Some(1); %x(2)"))
    assert err.message.startswith("cannot call a value that is not a function: Some(1)")


def test_closure_wrong_arity():
    err = runtime_error(parse_expr("let %f = fn (%a: int32) { %a }; %f(1, 2)"))
    assert err.message == "wrong number of arguments: %f expects 1, got 2"
    assert err.span.column == 33


def test_global_wrong_arity():
    err = runtime_error(parse("def @g(%a: int32) -> int32 { %a }\ndef @main() { @g() }"))
    assert err.message == "wrong number of arguments: @g expects 1, got 0"


def test_operator_wrong_arity():
    err = runtime_error(Call(Op("add"), (const(1),)))
    assert err.message == "wrong number of arguments: operator add expects 2, got 1"


def test_constructor_wrong_arity():
    cons = parse_expr("Cons")
    err = runtime_error(Call(cons, (const(1),)), check=False)
    assert err.message == "wrong number of arguments: constructor Cons expects 2, got 1"


def test_entry_wrong_number_of_arguments():
    mod = parse("def @main(%a: int32, %b: int32) -> int32 { %a + %b }")
    err = runtime_error(mod, 1)
    assert err.message == "wrong number of arguments: @main expects 2, got 1"
    err = runtime_error(mod, 1, 2, 3)
    assert err.message == "wrong number of arguments: @main expects 2, got 3"


def test_expression_function_wrong_number_of_arguments():
    err = runtime_error(parse_expr("fn (%a: int32) { %a }"), 1, 2)
    assert err.message.startswith("wrong number of arguments")


def test_arguments_to_a_non_function_expression():
    err = runtime_error(parse_expr("(1, 2)"), 1)
    assert err.message.startswith("arguments were given, but the expression's value is not")


def test_non_exhaustive_complete_match_when_unchecked():
    # `match` (complete) that is not exhaustive: the type checker rejects it; unchecked, the
    # run reaches Semantics-Match-Fail.
    some = parse_expr("Some")
    x = Var("x")
    m = Match(Call(parse_expr("None").op, ()),
              (Clause(PatternConstructor(some, (PatternVar(x),)), x),), complete=True)
    err = runtime_error(m)
    assert err.message == "non-exhaustive match: no clause for None"


def test_match_question_failure_span():
    text = "def @main() -> int32 {\n  match? (Nil) {\n    Cons(%x, _) => %x\n  }\n}"
    err = runtime_error(parse(text))
    assert err.message.startswith("non-exhaustive match")
    assert (err.span.line, err.span.column) == (2, 3)


def test_if_condition_must_be_a_scalar_bool():
    err = runtime_error(If(const(1), const(2), const(3)))
    assert err.message.startswith("the condition of an if must be a scalar bool")
    err = runtime_error(If(const(np.array([True, False])), const(2), const(3)))
    assert "scalar bool" in err.message


def test_integer_division_by_zero_has_the_call_span():
    src = "def @main(%a: int32, %b: int32) -> int32 {\n  %a / %b\n}"
    with pytest.raises(RelayRuntimeError) as info:
        run(src, 7, 0)
    assert "division by zero" in info.value.message
    assert (info.value.span.line, info.value.span.column) == (2, 3)


def test_float_division_by_zero_is_ieee():
    assert np.isinf(run("def @main(%a: float32) -> float32 { %a / 0f }", 1.0))


def test_projection_errors():
    err = runtime_error(TupleGetItem(const(1), 0))
    assert err.message.startswith("projection .0 of a value that is not a tuple")
    err = runtime_error(TupleGetItem(Tuple((const(1),)), 3))
    assert err.message == "projection .3 out of range for a tuple of 1 fields"


def test_reference_errors():
    err = runtime_error(RefRead(const(1)))
    assert err.message.startswith("ref_read of a value that is not a reference")
    err = runtime_error(RefWrite(const(1), const(2)))
    assert err.message.startswith("ref_write to a value that is not a reference")


def test_unknown_operator_node():
    err = runtime_error(Call(Op("no_such_op"), ()))
    assert err.message == "unknown operator no_such_op"


def test_bad_operator_attribute_when_unchecked():
    call = Call(Op("nn.relu"), (const(np.zeros(2, np.float32)),),
                attrs=Attrs({"bogus": 1}))
    with pytest.raises(RelayError, match="bad attribute"):
        evaluate(call, check=False)


def test_operator_type_mismatch_when_unchecked():
    # add(int32, float32) is ill-typed; unchecked, the operator itself refuses.
    with pytest.raises(RelayRuntimeError):
        evaluate(Call(Op("add"), (const(1), const(2.0))), check=False)


def test_grad_without_an_expander(monkeypatch):
    # No expander, and the `ad` plugin cannot be loaded (as in an install without it).
    monkeypatch.setitem(sys.modules, "ad", None)
    previous = register_grad_expander(None)
    try:
        f = parse_expr("fn (%x: float32) { %x * %x }")
        err = runtime_error(Grad(f))
        assert err.message == ("grad(...) needs an automatic-differentiation expander "
                               "(the `ad` package)")
    finally:
        register_grad_expander(previous)


def test_grad_expander_is_used():
    calls = []

    def expander(node, mod, roots):
        calls.append((node, roots))
        return Function((Var("x"),), Tuple((const(1.0), Tuple((const(2.0),)))))

    previous = register_grad_expander(expander)
    try:
        g = Grad(parse_expr("fn (%x: float32) { %x * %x }"))
        program = Call(g, (const(3.0),))
        v = evaluate(program, check=False)
        assert v[0] == 1.0 and v[1][0] == 2.0
        assert calls == [(g, (program,))]
    finally:
        register_grad_expander(previous)


@pytest.mark.parametrize("p", [42, None, b"bytes", [1, 2], object()])
def test_not_a_program(p):
    with pytest.raises(RelayRuntimeError, match="evaluate expects"):
        evaluate(p)


@pytest.mark.parametrize("kwargs", [
    {"fuel": -1}, {"fuel": "many"}, {"fuel": True}, {"max_depth": 0}, {"max_depth": 2.5},
    {"trace": 3}, {"entry": 7},
])
def test_bad_options(kwargs):
    with pytest.raises(RelayRuntimeError):
        evaluate("def @main() { 1 }", **kwargs)


def test_parse_errors_surface_as_parse_errors():
    from semantics import ParseError

    with pytest.raises(ParseError):
        evaluate("def @main( { 1 }")


def test_trace_callback_exceptions_propagate_unchanged():
    class Stop(Exception):
        pass

    def trace(name, node):
        raise Stop(name)

    with pytest.raises(Stop, match="Semantics-Global"):
        evaluate("def @main() { 1 }", trace=trace)


def test_user_adt_module_built_by_hand():
    # An IRModule built directly (no text) works too; its undefined global is an error.
    mod = IRModule({"main": Function((), Call(GlobalVar("g"), ()))})
    err = runtime_error(mod)
    assert err.message == "undefined global @g"


def test_ill_typed_programs_never_raise_python_errors():
    programs = [
        "let %x = (1, 2); %x + 1",
        "let %f = fn (%a: int32) { %a }; %f.0",
        "match (1) { Some(%x) => %x, None => 0 }",
        "let %r = 1; !%r",
        "let %r = ref(1); %r(1)",
        "add",
        "Cons(1)",
        "(1, 2).5",
        "if ((True, False)) { 1 } else { 2 }",
        "nn.dense(1, 2)",
        "let %x = Nil; %x()",
        "concatenate((1, 2))",
        "reshape(1, newshape=[3, 3])",
    ]
    for text in programs:
        try:
            evaluate(parse_expr(text), check=False)
        except RelayError:
            pass
        except InternalError as exc:  # pragma: no cover - shows the program in the report
            raise AssertionError(f"{text}: {exc}") from exc


def test_nullary_constructor_value_called_with_no_arguments_is_itself():
    nil = Constructor("Nil", (), GlobalTypeVar("List"))
    assert evaluate(Call(nil, ()), check=False).name == "Nil"
    assert evaluate(nil, check=False).name == "Nil"


def test_operator_returning_a_non_tensor_is_an_internal_error():
    # A broken registry contract is a bug, not a user error: InternalError (not a RelayError).
    from dataclasses import replace

    from interpreter.eval import Interpreter
    from interpreter.values import OpValue
    from semantics import ops

    broken = replace(ops.get("negative"), impl=lambda x: [1, 2])
    interp = Interpreter(IRModule())
    with pytest.raises(InternalError, match="returned list, not a tensor"):
        interp.apply(OpValue("negative", broken), [np.float32(1)])
    fine = replace(ops.get("negative"), impl=lambda x: np.float32(2))  # numpy scalar: a 0-d array
    out = interp.apply(OpValue("negative", fine), [np.float32(1)])
    assert isinstance(out, np.ndarray) and out.ndim == 0
