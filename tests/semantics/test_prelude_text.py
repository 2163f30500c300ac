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
    assert list(mod.types) == ["List", "Option", "Tree", "Storage"]
    shape = {name: [(c.name, len(c.inputs), c.tag) for c in td.constructors]
             for name, td in mod.types.items()}
    assert shape == {"List": [("Cons", 2, 0), ("Nil", 0, 1)],
                     "Option": [("Some", 1, 0), ("None", 0, 1)],
                     "Tree": [("Rose", 2, 0)], "Storage": []}


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
    ("def @main(%o: Option[int32]) { match (%o) { None => 0 } }", {"main"}, {"Option"}),
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
    import typechecker

    assert typechecker.check(prelude_module()) is None


def _py(value):
    """A Python rendering of a small prelude value: lists as lists, tuples as tuples,
    ``Some(x)``/``None`` as ``("Some", x)``/``"None"``, ``Rose(v, cs)`` as ``("Rose", v, cs)``,
    scalars as ints (test values are tiny, so recursion is fine here)."""
    from interpreter.values import ConstructorValue

    if isinstance(value, ConstructorValue):
        if value.name in ("Cons", "Nil"):
            out = []
            while value.name == "Cons":
                out.append(_py(value.fields[0]))
                value = value.fields[1]
            return out
        if not value.fields:
            return value.name
        return (value.name, *(_py(f) for f in value.fields))
    if isinstance(value, tuple):
        return tuple(_py(f) for f in value)
    return int(value)


def _run(call):
    import interpreter

    e, mod = parse_expr_with_module(call)
    return _py(interpreter.evaluate(IRModule.from_expr(e, mod.functions, mod.types),
                                    check=False))


_L123 = "Cons(1, Cons(2, Cons(3, Nil)))"
_COUNTDOWN = "fn (%n: int32) { if (%n == 0) { None } else { Some((%n - 1, %n * 10)) } }"
# Each expectation is worked out by hand from the definition in TVM's prelude
# (python/tvm/relay/std/prelude.rly, v0.19.0): argument order and result order included.
TVM_MEANING = [
    ("id", "@id(7)", 7),
    # compose(f, g)(x) = f(g(x)): (2 * 10) + 1, not (2 + 1) * 10
    ("compose", "@compose(fn (%x: int32) { %x + 1 }, fn (%x: int32) { %x * 10 })(2)", 21),
    # flip(f)(b, a) = f(a, b)
    ("flip", "@flip(fn (%a: int32, %b: int32) { %a - %b })(10, 3)", -7),
    ("hd", f"@hd({_L123})", 1),
    ("tl", f"@tl({_L123})", [2, 3]),
    ("nth", f"@nth({_L123}, 2)", 3),
    ("update", f"@update({_L123}, 1, 9)", [1, 9, 3]),
    ("length", f"@length({_L123})", 3),
    ("map", f"@map(fn (%x: int32) {{ %x * 2 }}, {_L123})", [2, 4, 6]),
    # foldl(f, z, [1, 2, 3]) = f(f(f(z, 1), 2), 3) with f(acc, x) = 10 * acc + x
    ("foldl", f"@foldl(fn (%a: int32, %x: int32) {{ 10 * %a + %x }}, 0, {_L123})", 123),
    # foldr(f, z, [1, 2, 3]) = f(1, f(2, f(3, z))) with f(x, acc) = 10 * acc + x
    ("foldr", f"@foldr(fn (%x: int32, %a: int32) {{ 10 * %a + %x }}, 0, {_L123})", 321),
    # foldr1(f, [1, 2, 3]) = f(1, f(2, 3)) with f(x, acc) = 10 * acc + x
    ("foldr1", f"@foldr1(fn (%x: int32, %a: int32) {{ 10 * %a + %x }}, {_L123})", 321),
    ("sum", f"@sum({_L123})", 6),
    ("concat", "@concat(Cons(1, Cons(2, Nil)), Cons(3, Nil))", [1, 2, 3]),
    ("filter", f"@filter(fn (%x: int32) {{ %x != 2 }}, {_L123})", [1, 3]),
    ("zip", "@zip(Cons(1, Cons(2, Cons(3, Nil))), Cons(4, Cons(5, Nil)))", [(1, 4), (2, 5)]),
    ("rev", f"@rev({_L123})", [3, 2, 1]),
    # map_accuml: foldl that conses each output -- the last element's output comes first;
    # f(acc, x) = (acc + x, 10 * acc + x): outputs 1, 12, 33 in order of production
    ("map_accuml", f"@map_accuml(fn (%acc: int32, %x: int32) {{ (%acc + %x, 10 * %acc + %x) }}, "
                   f"0, {_L123})", (6, [33, 12, 1])),
    # map_accumr: foldr -- visits 3, 2, 1; outputs 3, 32, 51 listed in the input's order
    ("map_accumr", f"@map_accumr(fn (%acc: int32, %x: int32) {{ (%acc + %x, 10 * %acc + %x) }}, "
                   f"0, {_L123})", (6, [51, 32, 3])),
    # unfoldr lists outputs in the order produced; unfoldl reverses them
    ("unfoldr", f"@unfoldr({_COUNTDOWN}, 3)", [30, 20, 10]),
    ("unfoldl", f"@unfoldl({_COUNTDOWN}, 3)", [10, 20, 30]),
    ("tmap", "@tmap(fn (%x: int32) { %x + 1 }, Rose(1, Cons(Rose(2, Nil), Nil)))",
     ("Rose", 2, [("Rose", 3, [])])),
    ("size", "@size(Rose(1, Cons(Rose(2, Cons(Rose(3, Nil), Nil)), Cons(Rose(4, Nil), Nil))))",
     4),
    # iterate(f, n) = f composed n times; iterate(f, 0) = id
    ("iterate", "@iterate(fn (%x: int32) { 2 * %x + 1 }, 3)(0)", 7),
    ("iterate", "@iterate(fn (%x: int32) { 2 * %x + 1 }, 0)(5)", 5),
    ("Option", "Some((1, None))", ("Some", (1, "None"))),
    ("Tree", "Rose(1, Nil)", ("Rose", 1, [])),
]


def test_every_prelude_function_has_a_tvm_meaning_test():
    covered = {name for name, _, _ in TVM_MEANING}
    assert set(FUNCTIONS) <= covered
    assert {"Option", "Tree"} <= covered


@pytest.mark.parametrize("name, call, expected", TVM_MEANING,
                         ids=[f"{i}-{c[0]}" for i, c in enumerate(TVM_MEANING)])
def test_prelude_function_has_tvm_meaning(name, call, expected):
    assert _run(call) == expected
