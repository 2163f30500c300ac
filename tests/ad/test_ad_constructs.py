"""Examples: reverse- and forward-mode AD through every construct of the language (issue 11).

Each example compares the gradient with a value worked out by hand (and, where it helps, with
finite differences through ``check_grads``); both modes run on every example.
"""

from __future__ import annotations

import numpy as np
import pytest

import ad
from interpreter import evaluate
from semantics import (
    RelayTypeError,
    alpha_equal,
    parse,
    parse_expr,
    parse_type,
    pretty,
    types_equal,
)
from semantics.ops.tables import GRADIENTS
from typechecker import type_of

MODES = ("reverse", "forward")
V3 = "Tensor[(3), float32]"
X = np.array([0.5, -1.0, 2.0], dtype=np.float32)


def grad_at(src: str, *args: object, mode: str = "reverse", mod=None):
    f = parse_expr(src) if mod is None else src
    return evaluate(ad.grad(f, mode=mode, mod=mod), *args)


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64),
                               rtol=tol, atol=tol)


@pytest.mark.parametrize("mode", MODES)
def test_product_and_value(mode):
    y = np.array([4.0, 5.0, 6.0], dtype=np.float32)
    value, (gx, gy) = grad_at(f"fn (%x: {V3}, %y: {V3}) {{ %x * %y + %x }}", X, y, mode=mode)
    close(value, X * y + X)
    close(gx, y + 1)
    close(gy, X)


@pytest.mark.parametrize("mode", MODES)
def test_closure_capturing_argument(mode):
    src = f"fn (%x: {V3}) {{ let %f = fn (%y: {V3}) {{ %x * %y }}; %f(%x) + %f(%x) }}"
    value, (g,) = grad_at(src, X, mode=mode)
    close(value, 2 * X * X)
    close(g, 4 * X)


@pytest.mark.parametrize("mode", MODES)
def test_higher_order_function_argument(mode):
    src = (f"fn (%x: {V3}) {{ let %twice = fn (%f: fn ({V3}) -> {V3}, %a: {V3}) {{ %f(%f(%a)) }};"
           f" %twice(fn (%y: {V3}) {{ %y * %x }}, %x) }}")
    value, (g,) = grad_at(src, X, mode=mode)
    close(value, X ** 3)
    close(g, 3 * X ** 2)


@pytest.mark.parametrize("mode", MODES)
def test_prelude_map_and_foldl(mode):
    src = (f"fn (%x: {V3}) {{ let %l = @map(fn (%y: {V3}) {{ %y * %y }}, Cons(%x, Cons(%x, Nil)));"
           f" @foldl(fn (%acc: {V3}, %e: {V3}) {{ %acc + %e }}, %x, %l) }}")
    value, (g,) = grad_at(src, X, mode=mode)
    close(value, X + 2 * X * X)
    close(g, 1 + 4 * X)


@pytest.mark.parametrize("mode", MODES)
def test_tuples(mode):
    src = f"fn (%x: {V3}) {{ let %t = (%x, %x * %x, 3); %t.0 * %t.1 }}"
    value, (g,) = grad_at(src, X, mode=mode)
    close(value, X ** 3)
    close(g, 3 * X ** 2)


@pytest.mark.parametrize("mode", MODES)
def test_tuple_arguments_and_results(mode):
    src = f"fn (%p: ({V3}, float32)) {{ (%p.0 * %p.1, %p.1) }}"
    value, ((g0, g1),) = grad_at(src, (X, np.float32(2.0)), mode=mode)
    close(value[0], 2 * X)
    close(g0, np.full(3, 2.0))
    close(g1, X.sum() + 1)


@pytest.mark.parametrize("mode", MODES)
def test_adt_fields_and_match(mode):
    src = (f"fn (%x: {V3}) {{ match (Cons(%x, Cons(%x * %x, Nil))) {{"
           f" Cons(%a, Cons(%b, _)) => %a * %b, _ => %x }} }}")
    value, (g,) = grad_at(src, X, mode=mode)
    close(value, X ** 3)
    close(g, 3 * X ** 2)


@pytest.mark.parametrize("mode", MODES)
def test_option_and_nested_patterns(mode):
    src = (f"fn (%x: {V3}) {{ match ((Some(%x), %x * 2f)) {{"
           f" (Some(%a), %b) => %a * %b, (None, %b) => %b }} }}")
    value, (g,) = grad_at(src, X, mode=mode)
    close(value, 2 * X * X)
    close(g, 4 * X)


@pytest.mark.parametrize("mode", MODES)
def test_tree_adt(mode):
    src = ("fn (%x: float32) { let %t = Rose(%x, Cons(Rose(%x * %x, Nil), Nil));"
           " match (%t) { Rose(%a, Cons(Rose(%b, _), _)) => %a * %b, _ => %x } }")
    value, (g,) = grad_at(src, np.float32(1.5), mode=mode)
    close(value, 1.5 ** 3)
    close(g, 3 * 1.5 ** 2)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("x, expected", [(2.0, 4.0), (-2.0, -1.0)])
def test_data_dependent_if(mode, x, expected):
    src = "fn (%x: float32) { if (%x > 0f) { %x * %x } else { negative(%x) } }"
    _, (g,) = grad_at(src, np.float32(x), mode=mode)
    close(g, expected)


@pytest.mark.parametrize("mode", MODES)
def test_let_bound_recursion(mode):
    src = (f"fn (%x: {V3}) {{ let %pow = fn (%n: int32, %a: {V3}) -> {V3} {{"
           f" if (%n == 0) {{ %a }} else {{ %pow(%n - 1, %a * %x) }} }}; %pow(3, %x) }}")
    value, (g,) = grad_at(src, X, mode=mode)
    close(value, X ** 4)
    close(g, 4 * X ** 3)


MUTUAL = """
def @even(%n: int32, %x: float32) -> float32 {
  if (%n == 0) { %x } else { @odd(%n - 1, %x * %x) }
}
def @odd(%n: int32, %x: float32) -> float32 {
  if (%n == 0) { %x * 3f } else { @even(%n - 1, %x) }
}
def @main(%x: float32) -> float32 { @even(3, %x) }
"""


@pytest.mark.parametrize("mode", MODES)
def test_global_and_mutual_recursion(mode):
    mod = parse(MUTUAL)
    # even(3, x) = odd(2, x^2) = even(1, x^2) = odd(0, x^4) = 3 x^4
    value, (g,) = evaluate(ad.grad("main", mode=mode, mod=mod), np.float32(2.0))
    close(value, 48.0)
    close(g, 96.0)


def test_grad_module_keeps_lifted_globals():
    mod = parse(MUTUAL)
    gm = ad.grad_module(mod)
    assert {"even__rev", "odd__rev", "main__rev"} <= set(gm.functions)
    value, (g,) = evaluate(gm, np.float32(2.0))
    close(g, 96.0)
    reparsed = parse(pretty(gm))
    assert alpha_equal(reparsed["main"], gm["main"])
    close(evaluate(reparsed, np.float32(2.0))[1][0], 96.0)


@pytest.mark.parametrize("mode", MODES)
def test_program_using_references(mode):
    src = (f"fn (%x: {V3}) {{ let %r = ref(%x); %r := !%r * %x; let %s = ref(1f);"
           f" %s := !%s + 1f; !%r * !%s }}")
    value, (g,) = grad_at(src, X, mode=mode)
    close(value, 2 * X * X)
    close(g, 4 * X)


@pytest.mark.parametrize("mode", MODES)
def test_broadcast_gradients_are_summed_back(mode):
    src = f"fn (%x: {V3}, %s: float32) {{ %x * %s }}"
    _, (gx, gs) = grad_at(src, X, np.float32(3.0), mode=mode)
    close(gx, np.full(3, 3.0))
    assert np.asarray(gs).shape == ()
    close(gs, X.sum())


@pytest.mark.parametrize("mode", MODES)
def test_integer_arguments_have_zero_gradient(mode):
    src = "fn (%x: float32, %n: int32) { %x * cast(%n, dtype=\"float32\") }"
    value, (gx, gn) = grad_at(src, np.float32(2.0), np.int32(5), mode=mode)
    close(value, 10.0)
    close(gx, 5.0)
    assert gn.dtype == np.int32 and gn == 0


def test_shared_node_differentiated_once():
    src = f"fn (%x: {V3}) {{ %0 = multiply(%x, %x); add(%0, %0) }}"
    calls = []
    rule = GRADIENTS.lookup("multiply")

    def counting(call, out, g):
        calls.append(call)
        return rule(call, out, g)

    GRADIENTS.unregister("multiply")
    try:
        GRADIENTS.add("multiply", counting)
        g = ad.grad(parse_expr(src))
    finally:
        GRADIENTS.unregister("multiply")
        GRADIENTS.add("multiply", rule)
    assert len(calls) == 1
    _, (gx,) = evaluate(g, X)
    close(gx, 4 * X)


def test_second_and_third_derivatives():
    cube = "fn (%x: float32) { %x * %x * %x }"
    d2 = "fn (%x: float32) { grad(fn (%y: float32) { %y * %y * %y })(%x).1.0 }"
    d3 = ("fn (%x: float32) { grad(fn (%z: float32) {"
          " grad(fn (%y: float32) { %y * %y * %y })(%z).1.0 })(%x).1.0 }")
    x = np.float32(2.0)
    close(grad_at(cube, x)[1][0], 12.0)
    close(grad_at(d2, x)[1][0], 12.0)          # d2/dx2 x^3 = 6x
    close(grad_at(d3, x)[1][0], 6.0)           # d3/dx3 x^3 = 6
    close(grad_at(d2, x, mode="forward")[1][0], 12.0)


def test_grad_of_grad_function():
    cube = parse_expr("fn (%x: float32) { %x * %x * %x }")
    g = ad.grad(cube)
    # grad of (x -> grad(cube)(x).1.0), built from the returned function
    from semantics.expr import Call, Function, TupleGetItem, Var
    from semantics.types import TensorType

    x = Var("x", TensorType((), "float32"))
    dcube = Function((x,), TupleGetItem(TupleGetItem(Call(g, (x,)), 1), 0))
    value, (g2,) = evaluate(ad.grad(dcube), np.float32(2.0))
    close(value, 12.0)
    close(g2, 12.0)


def test_grad_nodes_in_text_expand_through_the_interpreter():
    text = """
    def @main(%x: float32) {
      let %f = fn (%y: float32) { %y * %y * %y };
      grad(%f)(%x)
    }"""
    value, (g,) = evaluate(text, np.float32(2.0))
    close(value, 8.0)
    close(g, 12.0)


def test_grad_of_global_in_text():
    text = """
    def @cube(%y: float32) -> float32 { %y * %y * %y }
    def @main(%x: float32) { grad(@cube)(%x) }"""
    value, (g,) = evaluate(text, np.float32(3.0))
    close(value, 27.0)
    close(g, 27.0)


def test_grad_of_parameter_is_a_type_error():
    text = """
    def @apply(%f: fn (float32) -> float32, %x: float32) { grad(%f)(%x) }
    def @main(%x: float32) { @apply(fn (%y: float32) { %y }, %x) }"""
    with pytest.raises(RelayTypeError, match="grad: cannot differentiate"):
        evaluate(text, np.float32(1.0))


def test_argmax_has_no_gradient_and_the_error_names_it():
    src = 'fn (%x: Tensor[(3), float32]) {\n  cast(argmax(%x), dtype="float32") * %x\n}'
    for mode in MODES:
        with pytest.raises(RelayTypeError, match="argmax") as info:
            ad.grad(parse_expr(src), mode=mode)
        assert info.value.span is not None and info.value.span.line == 2


def test_comparisons_need_no_rule():
    _, (g,) = grad_at("fn (%x: float32) { if (%x >= 1f) { %x } else { 2f * %x } }",
                      np.float32(0.0))
    close(g, 2.0)


BOX = """
type Box { B(Tensor[(3), float32], int32), Empty }
type Chain { Link(Box, Chain), End }
def @main(%x: Tensor[(3), float32]) -> Tensor[(3), float32] {
  let %c = Link(B(%x * %x, 2), Link(Empty, End));
  match (%c) { Link(B(%y, _), _) => %y * %x, _ => %x }
}"""


@pytest.mark.parametrize("mode", MODES)
def test_monomorphic_adt_with_float_field_gets_a_lifted_copy(mode):
    mod = parse(BOX)
    # the closed function uses the lifted copies: it runs as it is (type-checking it needs the
    # module that defines them, which grad_module builds)
    value, (g,) = evaluate(ad.grad("main", mode=mode, mod=mod), X, check=False)
    close(value, X ** 3)
    close(g, 3 * X ** 2)
    gm = ad.grad_module(mod, mode=mode)
    if mode == "reverse":
        assert {"Box__rev", "Chain__rev"} <= set(gm.types)
    again = parse(pretty(gm))
    close(evaluate(again, X)[1][0], 3 * X ** 2)
    ad.check_grads("main", [X], mod=mod)


def test_non_tensor_signature_is_rejected():
    with pytest.raises(RelayTypeError, match="tensors or tuples of tensors"):
        ad.grad(parse_expr("fn (%l: List[float32]) { 1f }"))
    with pytest.raises(RelayTypeError, match="polymorphic"):
        ad.grad(parse_expr("fn [A](%x: A) -> A { %x }"))


def test_type_gradient():
    f = parse_expr("fn (%x: Tensor[(2, 3), float32], %y: float32, %n: int32) { sum(%x) * %y }")
    expected = parse_type("fn (Tensor[(2, 3), float32], float32, int32)"
                          " -> (float32, (Tensor[(2, 3), float32], float32, int32))")
    for mode in MODES:
        assert types_equal(type_of(ad.grad(f, mode=mode)), expected)


def test_grad_does_not_mutate_its_input():
    f = parse_expr(f"fn (%x: {V3}) {{ let %f = fn (%y: {V3}) {{ %y * %x }}; %f(%f(%x)) }}")
    before = pretty(f)
    types_before = f.checked_type
    ad.grad(f)
    ad.grad(f, mode="forward")
    ad.jvp(f)
    assert pretty(f) == before
    assert f.checked_type is types_before


def test_gradient_program_prints_reparses_and_typechecks():
    f = parse_expr(MUTUAL_EXPR)
    for mode in MODES:
        g = ad.grad(f, mode=mode)
        text = pretty(g)
        again = parse_expr(text)
        assert alpha_equal(again, g)
        close(evaluate(again, X)[1][0], evaluate(g, X)[1][0])
        assert pretty(type_of(again)) == pretty(type_of(g))


MUTUAL_EXPR = (f"fn (%x: {V3}) {{ let %t = (%x, ref(%x)); let %u = Cons(%t.0 * %x, Nil);"
               f" match (%u) {{ Cons(%h, _) => %h * !%t.1, Nil => %x }} }}")


def test_jvp():
    f = parse_expr(f"fn (%x: {V3}, %y: {V3}) {{ %x * %y }}")
    dx = np.array([1.0, 0.0, 2.0], dtype=np.float32)
    dy = np.array([0.5, 1.0, 0.0], dtype=np.float32)
    y = np.array([4.0, 5.0, 6.0], dtype=np.float32)
    value, tangent = evaluate(ad.jvp(f), X, y, dx, dy)
    close(value, X * y)
    close(tangent, dx * y + X * dy)


def test_forward_mode_needs_static_small_inputs():
    f = parse_expr("fn (%x: Tensor[(n), float32]) { sum(%x) }")
    with pytest.raises(RelayTypeError, match="static"):
        ad.grad(f, mode="forward")
    big = parse_expr("fn (%x: Tensor[(100, 100), float32]) { sum(%x) }")
    with pytest.raises(RelayTypeError, match="reverse mode"):
        ad.grad(big, mode="forward")


def test_reverse_mode_with_symbolic_shapes():
    f = parse_expr("fn (%x: Tensor[(n), float32]) { %x * %x }")
    g = ad.grad(f)
    _, (gx,) = evaluate(g, X)
    close(gx, 2 * X)


def test_bad_mode_and_missing_module():
    f = parse_expr("fn (%x: float32) { %x }")
    with pytest.raises(ValueError, match="mode"):
        ad.grad(f, mode="sideways")
    with pytest.raises(RelayTypeError, match="module"):
        ad.grad("main")


def test_grad_node_of_literal_calling_a_let_bound_closure():
    text = """
    def @main(%x: float32) {
      let %sq = fn (%y: float32) { %y * %y };
      grad(fn (%z: float32) { %sq(%z) * %z })(%x)
    }"""
    value, (g,) = evaluate(text, np.float32(2.0))
    close(value, 8.0)
    close(g, 12.0)


@pytest.mark.parametrize("mode", MODES)
def test_nested_grad_capturing_the_outer_argument(mode):
    # d/dx [ d/dy (y * y * x) at y = x ] = d/dx (2 x^2) = 4x
    src = "fn (%x: float32) { grad(fn (%y: float32) { %y * %y * %x })(%x).1.0 }"
    value, (g,) = grad_at(src, np.float32(1.5), mode=mode)
    close(value, 2 * 1.5 ** 2)
    close(g, 4 * 1.5)


def test_semantics_grad_fires():
    fired = []
    evaluate("def @main(%x: float32) { grad(fn (%y: float32) { %y * %y })(%x) }",
             np.float32(1.0), trace=lambda rule, node: fired.append(rule))
    assert fired.count("Semantics-Grad") == 1


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_zero_size_inputs_have_empty_gradients(mode):
    """Issue 33: forward mode stacked the sweeps of a zero-size input (none) into an
    ill-typed ``stack(())``; its gradient is the empty array of its shape, in both modes."""
    f = parse_expr("fn (%x: Tensor[(0, 3), float32], %y: float32) { sum(%x) + %y * %y }")
    value, (gx, gy) = evaluate(ad.grad(f, mode=mode), np.zeros((0, 3), "float32"),
                               np.float32(3))
    assert value == np.float32(9)
    assert gx.shape == (0, 3) and gx.dtype == np.float32
    assert gy == np.float32(6)
