"""``infer`` returns a new program with every node's ``checked_type`` (paper step 3)."""

from __future__ import annotations

from tc_util import infer, pretty

from semantics import alpha_equal, parse, parse_expr, types_equal
from semantics.expr import Constructor, Function, Let, Match, PatternConstructor
from semantics.module import IRModule
from semantics.types import FuncType, IncompleteType, TypeVar, type_children
from semantics.visitor import post_order

PROGRAM = """
type Shape { Circle(float32), Square(float32, float32), }
def @area(%s: Shape) -> float32 {
  match (%s) {
    Circle(%r) => multiply(%r, %r),
    Square(%a, %b) => multiply(%a, %b),
  }
}
def @main(%x: Tensor[(2, 3), float32]) {
  %0 = nn.relu(%x);
  let %f = fn (%y) { (%y, %y) };
  (%f(%0), %f(@area(Circle(2f))), add(%0, %0))
}
"""


def _resolved(t) -> bool:
    stack = [t]
    while stack:
        u = stack.pop()
        if isinstance(u, IncompleteType):
            return False
        stack.extend(type_children(u))
    return True


def test_module_annotation():
    mod = parse(PROGRAM)
    out = infer(mod)
    assert isinstance(out, IRModule) and out is not mod
    assert alpha_equal(out, mod)
    for name, fn in out.functions.items():
        assert fn.checked_type is not None, name
        for node in post_order(fn):
            assert node.checked_type is not None and _resolved(node.checked_type), node
    assert pretty(out["main"].checked_type) == (
        "fn (Tensor[(2, 3), float32]) -> ((Tensor[(2, 3), float32], Tensor[(2, 3), float32]), "
        "(float32, float32), Tensor[(2, 3), float32])")


def test_input_module_is_untouched():
    mod = parse(PROGRAM)
    infer(mod)
    for fn in mod.functions.values():
        for node in post_order(fn):
            assert node.checked_type is None


def test_binders_and_uses_share_the_annotated_var():
    out = infer(parse_expr("let %x = (1, 2f); (%x, %x.0)"))
    assert isinstance(out, Let)
    assert out.body.fields[0] is out.var
    assert pretty(out.var.checked_type) == "(int32, float32)"


def test_generalized_function_types_in_annotations():
    out = infer(parse_expr("let %f = fn (%y) { (%y, %y) }; %f(1)"))
    fn_type = out.var.checked_type
    assert isinstance(fn_type, FuncType) and len(fn_type.type_params) == 1
    (a,) = fn_type.type_params
    assert isinstance(a, TypeVar)
    assert out.value.params[0].checked_type is a
    assert out.value is not None and out.value.checked_type is fn_type or types_equal(
        out.value.checked_type, fn_type)


def test_constructors_and_patterns_are_annotated_consistently():
    out = infer(parse(PROGRAM))
    td = out.types["Shape"]
    circle = td.constructors[0]
    assert isinstance(circle, Constructor) and circle.checked_type is not None
    match = out["area"].body
    assert isinstance(match, Match)
    pat = match.clauses[0].lhs
    assert isinstance(pat, PatternConstructor)
    assert pat.constructor is circle
    assert pat.patterns[0].var.checked_type is not None


def test_infer_is_cached_per_module_and_pure():
    mod = parse(PROGRAM)
    assert infer(mod) is infer(mod)


def test_expression_annotation_of_a_function():
    out = infer(parse_expr("fn (%x: int32) { add(%x, 1) }"))
    assert isinstance(out, Function)
    assert pretty(out.checked_type) == "fn (int32) -> int32"
    assert pretty(out.body.checked_type) == "int32"
    assert pretty(out.body.op.checked_type) == "fn (int32, int32) -> int32"
