"""The prelude (semantics/prelude.relay) and the rule that merges it into parsed programs."""

from __future__ import annotations

import pytest

from semantics.errors import ParseError
from semantics.expr import Constructor, Function, GlobalVar, PatternConstructor
from semantics.module import IRModule
from semantics.parser import parse, parse_expr, parse_expr_with_module
from semantics.prelude import needed_definitions, prelude_module, prelude_text
from semantics.types import FuncType, TensorType, TypeCall, TypeVar
from semantics.visitor import post_order

FUNCTIONS = ["id", "compose", "flip", "hd", "tl", "nth", "update", "length", "map", "foldl",
             "foldr", "foldr1", "sum", "concat", "filter", "zip", "rev", "map_accuml",
             "map_accumr", "unfoldr", "unfoldl", "tmap", "size", "iterate"]


def test_prelude_parses_with_expected_names():
    mod = prelude_module()
    assert isinstance(mod, IRModule)
    assert sorted(mod.functions) == sorted(FUNCTIONS)
    assert list(mod.types) == ["List", "Option", "Tree"]
    shape = {name: [(c.name, len(c.inputs), c.tag) for c in td.constructors]
             for name, td in mod.types.items()}
    assert shape == {"List": [("Cons", 2, 0), ("Nil", 0, 1)],
                     "Option": [("Some", 1, 0), ("None", 0, 1)],
                     "Tree": [("Rose", 2, 0)]}


def test_prelude_is_cached():
    assert prelude_module() is prelude_module()


@pytest.mark.parametrize("name", FUNCTIONS)
def test_every_definition_is_fully_annotated(name):
    fn = prelude_module()[name]
    assert isinstance(fn, Function)
    assert fn.ret_type is not None
    assert all(p.type_annotation is not None for p in fn.params)
    mentioned = set()
    stack = [p.type_annotation for p in fn.params] + [fn.ret_type]
    while stack:
        t = stack.pop()
        if isinstance(t, TypeVar):
            mentioned.add(t)
        elif isinstance(t, FuncType):
            stack.extend((*t.arg_types, t.ret_type))
        elif isinstance(t, TypeCall):
            stack.extend(t.args)
        elif hasattr(t, "fields"):
            stack.extend(t.fields)
    assert mentioned <= set(fn.type_params)


def test_signatures_of_a_few_definitions():
    mod = prelude_module()
    m = mod["map"]
    a, b = m.type_params
    f_type, xs_type = (p.type_annotation for p in m.params)
    assert isinstance(f_type, FuncType) and f_type.arg_types == (a,) and f_type.ret_type is b
    assert xs_type.func.name == "List" and xs_type.args == (a,)
    assert m.ret_type.args == (b,)
    s = mod["sum"]
    assert s.type_params == ()
    assert isinstance(s.ret_type, TensorType) and s.ret_type.dtype == "int32"
    it = mod["iterate"]
    assert isinstance(it.ret_type, FuncType)


def test_prelude_constructors_are_shared_objects():
    mod = prelude_module()
    cons = parse_expr("Cons")
    assert cons is mod.constructors["Cons"]
    call = parse_expr("Cons(1, Nil)")
    assert call.op is mod.constructors["Cons"] and call.args[1].op is mod.constructors["Nil"]
    match = parse_expr("match (%o) { Some(%x) => %x, None => 0 }")
    assert match.clauses[0].lhs.constructor is mod.constructors["Some"]
    user = parse("def @main() { Rose(1, Nil) }")
    assert user.types["Tree"] is mod.types["Tree"]
    assert user["main"].body.op is mod.constructors["Rose"]


@pytest.mark.parametrize("text, functions, types", [
    ("def @main() { @length(Nil) }", {"main", "length"}, {"List"}),
    ("def @main() { @sum(Nil) }", {"main", "sum", "foldl"}, {"List"}),
    ("def @main(%t: Tree[int32]) { @size(%t) }", {"main", "size", "sum", "foldl", "map"},
     {"Tree", "List"}),
    ("def @main() { @unfoldl }", {"main", "unfoldl", "rev", "unfoldr", "foldl", "flip"},
     {"Option", "List"}),
    ("def @main() { @iterate }", {"main", "iterate", "id", "compose"}, set()),
    ("def @main() { Some(1) }", {"main"}, {"Option"}),
    ("def @main(%x: List[int32]) { %x }", {"main"}, {"List"}),
    ("def @main(%x: Tree[int32]) { %x }", {"main"}, {"Tree", "List"}),
    ("def @main() { match (%o) { None => 0 } }", {"main"}, {"Option"}),
    ("def @main() { add(1, 2) }", {"main"}, set()),
    ("def @main() { @undefined_global(1) }", {"main"}, set()),
])
def test_merge_adds_only_what_is_needed(text, functions, types):
    mod = parse(text)
    assert set(mod.functions) == functions
    assert set(mod.types) == types
    prelude = prelude_module()
    for name in functions - {"main"}:
        assert mod[name] is prelude[name]


def test_user_definitions_shadow_the_prelude():
    mod = parse("""
        def @map(%f: fn (int32) -> int32, %x: int32) -> int32 { %f(%x) }
        def @main() { @map(fn (%y: int32) { %y }, 1) }
    """)
    assert set(mod.functions) == {"map", "main"}
    assert mod["map"] is not prelude_module()["map"]
    assert "List" not in mod.types


def test_shadowing_applies_to_prelude_dependencies():
    mod = parse("""
        def @foldl(%f: fn (int32, int32) -> int32, %z: int32, %xs: List[int32]) -> int32 { %z }
        def @main() { @sum(Nil) }
    """)
    assert set(mod.functions) == {"foldl", "main", "sum"}
    assert mod["foldl"] is not prelude_module()["foldl"]


def test_user_adt_shadows_prelude_adt_and_its_constructors():
    mod = parse("type List { Empty }\ndef @main() { Empty }")
    assert [c.name for c in mod.types["List"].constructors] == ["Empty"]
    with pytest.raises(ParseError, match="unknown operator or constructor `Cons`"):
        parse("type List { Empty }\ndef @main() { Cons(1, Empty) }")


def test_user_constructor_with_a_prelude_name_wins():
    mod = parse("type Stack { Nil, Push(int32, Stack) }\ndef @main() { Nil }")
    nil = mod["main"].body.op
    assert nil.belong_to.name == "Stack" and "List" not in mod.types


def test_constructor_clash_with_needed_prelude_type_is_an_error():
    with pytest.raises(ParseError, match="clashes") as info:
        parse("type Stack { Nil }\ndef @main(%x: List[int32]) { @length(%x) }")
    assert info.value.span is not None


def test_without_prelude_nothing_is_added():
    mod = parse("def @main() { @map }", prelude=False)
    assert set(mod.functions) == {"main"} and not mod.types
    with pytest.raises(ParseError, match="unknown operator or constructor `Cons`"):
        parse("def @main() { Cons }", prelude=False)
    with pytest.raises(ParseError, match="unknown type `List`"):
        parse("def @main(%x: List[int32]) { %x }", prelude=False)


def test_parse_expr_with_module_closure():
    e, mod = parse_expr_with_module("@size(Rose(1, Nil))")
    assert isinstance(e.op, GlobalVar)
    assert set(mod.functions) == {"size", "sum", "foldl", "map"}
    assert set(mod.types) == {"Tree", "List"}


def test_needed_definitions_directly():
    funcs, types = needed_definitions({"rev": None}, {}, (), (), ())
    assert set(funcs) == {"rev", "foldl", "flip"} and set(types) == {"List"}
    funcs, types = needed_definitions({"rev": None}, {}, {"flip"}, (), ())
    assert set(funcs) == {"rev", "foldl"}


def test_prelude_patterns_use_prelude_constructors():
    mod = prelude_module()
    ctors = set(map(id, mod.constructors.values()))
    for fn in mod.functions.values():
        for node in post_order(fn):
            if isinstance(node, Constructor):
                assert id(node) in ctors
            for clause in getattr(node, "clauses", ()):
                stack = [clause.lhs]
                while stack:
                    p = stack.pop()
                    if isinstance(p, PatternConstructor):
                        assert id(p.constructor) in ctors
                    stack.extend(getattr(p, "patterns", ()))


def test_prelude_text_has_version_header():
    assert prelude_text().startswith('#[version = "0.0.5"]')


def test_prelude_type_checks():
    typechecker = pytest.importorskip("typechecker")
    if not hasattr(typechecker, "check"):
        pytest.skip("typechecker.check not available yet")
    assert typechecker.check(prelude_module()) is None


@pytest.mark.parametrize("call, expected", [
    ("@length(Cons(1, Cons(2, Nil)))", 2),
    ("@sum(Cons(1, Cons(2, Cons(3, Nil))))", 6),
    ("@nth(Cons(5, Cons(6, Nil)), 1)", 6),
    ("@sum(@map(fn (%x: int32) { %x * 2 }, Cons(1, Cons(2, Nil))))", 6),
    ("@foldl(fn (%a: int32, %b: int32) { %a - %b }, 10, Cons(1, Cons(2, Nil)))", 7),
    ("@foldr(fn (%a: int32, %b: int32) { %a - %b }, 10, Cons(1, Cons(2, Nil)))", 9),
    ("@foldr1(fn (%a: int32, %b: int32) { %a - %b }, Cons(1, Cons(2, Cons(3, Nil))))", 2),
    ("@hd(@rev(Cons(1, Cons(2, Cons(3, Nil)))))", 3),
    ("@length(@concat(Cons(1, Nil), Cons(2, Cons(3, Nil))))", 3),
    ("@length(@filter(fn (%x: int32) { %x > 1 }, Cons(1, Cons(2, Cons(3, Nil)))))", 2),
    ("@size(Rose(1, Cons(Rose(2, Nil), Cons(Rose(3, Nil), Nil))))", 3),
    ("@iterate(fn (%x: int32) { %x + 3 }, 4)(1)", 13),
    ("@hd(@update(Cons(1, Cons(2, Nil)), 0, 9))", 9),
    ("@hd(@zip(Cons(1, Nil), Cons(2, Nil))).1", 2),
    ("@map_accuml(fn (%acc: int32, %x: int32) { (%acc + %x, %acc) }, 0, "
     "Cons(1, Cons(2, Cons(3, Nil)))).0", 6),
    ("@nth(@map_accuml(fn (%acc: int32, %x: int32) { (%acc + %x, %acc) }, 0, "
     "Cons(1, Cons(2, Cons(3, Nil)))).1, 2)", 3),
    ("@nth(@map_accumr(fn (%acc: int32, %x: int32) { (%acc + %x, %acc) }, 0, "
     "Cons(1, Cons(2, Cons(3, Nil)))).1, 0)", 5),
    ("@hd(@unfoldr(fn (%n: int32) { if (%n == 0) { None } else { Some((%n - 1, %n)) } }, 3))",
     3),
    ("@hd(@unfoldl(fn (%n: int32) { if (%n == 0) { None } else { Some((%n - 1, %n)) } }, 3))",
     1),
])
def test_prelude_functions_evaluate(call, expected):
    interpreter = pytest.importorskip("interpreter")
    if not hasattr(interpreter, "evaluate"):
        pytest.skip("interpreter.evaluate not available yet")
    e, mod = parse_expr_with_module(call)
    result = interpreter.evaluate(IRModule.from_expr(e, mod.functions, mod.types), check=False)
    assert int(result) == expected
