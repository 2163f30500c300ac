"""The random-AST strategies (conformance.strategies.ast): well scoped, valid names, whole grammar.

Also the syntax round trip on random ASTs: ``parse(pretty(m))`` is alpha-equal to ``m``.
"""

from __future__ import annotations

from hypothesis import find, given, settings

from conformance.strategies.ast import AstConfig, ast_exprs, ast_modules, ast_patterns, ast_types
from conformance.strategies.names import is_valid_name
from semantics.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    Let,
    Match,
    Op,
    PatternConstructor,
    Var,
    children,
    pattern_vars,
)
from semantics.module import IRModule
from semantics.types import FuncType, RefType, TensorType, TupleType, TypeCall


def scope_errors(root: Expr, module: IRModule | None = None) -> list[str]:
    """Uses of variables not bound in scope (free ``fv_*`` variables allowed), iteratively."""
    errors: list[str] = []
    stack: list[tuple[Expr, frozenset[int]]] = [(root, frozenset())]
    seen: set[tuple[int, frozenset[int]]] = set()
    while stack:
        node, scope = stack.pop()
        key = (id(node), scope)
        if key in seen:
            continue
        seen.add(key)
        if isinstance(node, Var):
            if id(node) not in scope and not node.name_hint.startswith("fv_"):
                errors.append(f"unbound %{node.name_hint}")
            continue
        if isinstance(node, Let):
            inner = scope | {id(node.var)}
            stack.append((node.value, inner if isinstance(node.value, Function) else scope))
            stack.append((node.body, inner))
            continue
        if isinstance(node, Function):
            stack.append((node.body, scope | {id(p) for p in node.params}))
            continue
        if isinstance(node, Match):
            stack.append((node.data, scope))
            for c in node.clauses:
                names = [v.name_hint for v in pattern_vars(c.lhs)]
                if len(names) != len(set(names)):
                    errors.append(f"duplicate pattern variables {names}")
                stack.append((c.rhs, scope | {id(v) for v in pattern_vars(c.lhs)}))
            continue
        if isinstance(node, GlobalVar) and module is not None and node.name_hint not in module:
            errors.append(f"undefined @{node.name_hint}")
        stack.extend((k, scope) for k in children(node))
    return errors


def names_of(root: Expr) -> list[str]:
    from semantics.visitor import post_order

    out = []
    for node in post_order(root):
        if isinstance(node, Var):
            out.append(node.name_hint)
        elif isinstance(node, Function):
            out.extend(p.name_hint for p in node.params)
        elif isinstance(node, Let):
            out.append(node.var.name_hint)
    return [n for n in out if n != "_"]


@settings(max_examples=200)
@given(ast_modules())
def test_modules_are_well_scoped_with_valid_names(mod: IRModule) -> None:
    for name, fn in mod.functions.items():
        assert is_valid_name(name) or name == "main"
        assert scope_errors(fn, mod) == []
        assert all(is_valid_name(n) for n in names_of(fn))
    uppers = [td.header.name for td in mod.types.values()] + \
        [c.name for td in mod.types.values() for c in td.constructors] + \
        [tv.name for td in mod.types.values() for tv in td.type_vars]
    assert len(uppers) == len(set(uppers))


@settings(max_examples=200)
@given(ast_exprs())
def test_exprs_are_well_scoped(e: Expr) -> None:
    assert scope_errors(e) == []


def _grammar_features(mod: IRModule) -> tuple[set[str], set[str]]:
    """The node kinds and notable grammar features occurring in ``mod``."""
    from semantics.visitor import post_order

    kinds: set[str] = set()
    features: set[str] = set()
    if any(len(td.type_vars) for td in mod.types.values()):
        features.add("polymorphic ADT")
    for fn in mod.functions.values():
        for node in post_order(fn):
            kinds.add(type(node).__name__)
            if isinstance(node, Function) and node.type_params:
                features.add("type params")
            if isinstance(node, Function) and "Primitive" in node.attrs:
                features.add("Primitive=1")
            if isinstance(node, Match):
                features.add("match" if node.complete else "match?")
                if any(isinstance(c.lhs, PatternConstructor) and any(
                        isinstance(p, PatternConstructor) for p in c.lhs.patterns)
                       for c in node.clauses):
                    features.add("nested pattern")
            if isinstance(node, Call) and isinstance(node.op, Op) and node.attrs:
                features.add("op attrs")
            if isinstance(node, Let) and node.var.name_hint == "_":
                features.add("sequence")
            if isinstance(node, Constant) and node.data.ndim > 0:
                features.add("tensor constant")
    return kinds, features


def test_whole_grammar_is_generated() -> None:
    config = AstConfig(free_vars=False, ops=("add", "sum"))
    kinds: set[str] = set()
    features: set[str] = set()

    @settings(max_examples=150, database=None)
    @given(ast_modules(config))
    def collect(mod: IRModule) -> None:
        k, f = _grammar_features(mod)
        kinds.update(k)
        features.update(f)

    collect()
    wanted_kinds = ("Var", "GlobalVar", "Constant", "Op", "Constructor", "Call", "Let",
                    "Function", "Tuple", "TupleGetItem", "If", "Match", "RefCreate", "RefRead",
                    "RefWrite", "Grad")
    wanted_features = ("type params", "Primitive=1", "match", "match?", "nested pattern",
                       "op attrs", "sequence", "tensor constant", "polymorphic ADT")
    # What a random sample missed must still be *reachable*: search for it directly (a rare
    # feature in one sample is fine; one the generator can never produce is a failure).
    search = settings(max_examples=3000, database=None)
    for kind in wanted_kinds:
        if kind not in kinds:
            find(ast_modules(config), lambda m, k=kind: k in _grammar_features(m)[0],
                 settings=search)
    for feature in wanted_features:
        if feature not in features:
            find(ast_modules(config), lambda m, f=feature: f in _grammar_features(m)[1],
                 settings=search)


def test_graph_sharing_is_generated() -> None:
    from semantics.visitor import count_uses

    shared = []

    @settings(max_examples=200, database=None)
    @given(ast_exprs(max_depth=4, free_vars=True))
    def collect(e: Expr) -> None:
        uses = count_uses(e)
        if any(n > 1 for n in uses.values()):
            shared.append(e)

    collect()
    assert shared


def test_types_of_every_form() -> None:
    import sympy

    from semantics.shapes import ANY

    seen: set[str] = set()

    @settings(max_examples=300, database=None)
    @given(ast_types())
    def collect(t) -> None:  # type: ignore[no-untyped-def]
        stack = [t]
        while stack:
            x = stack.pop()
            seen.add(type(x).__name__)
            if isinstance(x, TensorType):
                for d in x.shape:
                    seen.add("ANY" if d is ANY else "int" if isinstance(d, int) else "sym")
                    if isinstance(d, sympy.Basic) and not d.is_Symbol:
                        seen.add("sym-expr")
                if "x" in x.dtype:
                    seen.add("lanes")
            if isinstance(x, FuncType) and x.type_params:
                seen.add("poly fn")
            if isinstance(x, TupleType):
                stack.extend(x.fields)
            elif isinstance(x, FuncType):
                stack.extend(x.arg_types)
                stack.append(x.ret_type)
            elif isinstance(x, RefType):
                stack.append(x.value)
            elif isinstance(x, TypeCall):
                stack.extend(x.args)

    collect()
    for form in ("TensorType", "TupleType", "FuncType", "RefType", "TypeCall", "TypeVar", "ANY",
                 "int", "sym", "sym-expr", "lanes", "poly fn"):
        assert form in seen, form


@settings(max_examples=50)
@given(ast_patterns())
def test_patterns_bind_distinct_names(p) -> None:  # type: ignore[no-untyped-def]
    names = [v.name_hint for v in pattern_vars(p)]
    assert len(names) == len(set(names))


@settings(max_examples=100)
@given(ast_modules())
def test_random_modules_round_trip_through_text(mod: IRModule) -> None:
    from semantics import alpha_equal, parse, pretty

    text = pretty(mod)
    back = parse(text)
    for name, fn in mod.functions.items():
        assert alpha_equal(fn, back[name]), text


@settings(max_examples=100)
@given(ast_exprs())
def test_random_exprs_round_trip_through_text(e: Expr) -> None:
    from semantics import alpha_equal, parse_expr, pretty

    text = pretty(e)
    assert alpha_equal(e, parse_expr(text)), text
