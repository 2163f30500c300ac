"""Checking whole programs: globals by strongly connected components, then expressions.

A module's globals are inferred together (RULES.md, Type-Function-Definition
and "Generalization"):

1. ADT definitions are kind-checked (Kind-ADT).
2. A global whose parameters and result are all annotated has a *declared*
   type: its scheme is known before any body is checked (its ``type_params``
   and the shape variables of its signature are quantified), so every use —
   including recursive and mutually recursive ones — instantiates it.
3. The other globals are grouped into strongly connected components of the
   call graph (iterative Tarjan; edges to declared globals are omitted, they
   need no inference first) and inferred callees first. Within a component
   uses are monomorphic; after its bodies are inferred and the solver has
   settled, each member's type is generalized: remaining type variables
   become ``TypeVar`` parameters, and remaining dimension holes become named
   shape variables (``n``, ``m``, ...), which the scheme quantifies
   implicitly like written ones.
4. At the end the solver runs to its fixpoint; what is still unsolved is
   ``underconstrained``; complete matches are checked for exhaustiveness;
   every node's type must be fully resolved.

An expression is checked as the body of an anonymous definition against the
(cached) schemes of its module's globals; a function literal at the top is
generalized like a definition.

Results of checking a module are cached per module object (modules are
immutable), so checking expressions against the prelude repeatedly costs the
prelude once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import sympy

from semantics.errors import RelayTypeError
from semantics.expr import Expr, Function, GlobalVar, Var
from semantics.graphs import strongly_connected_components
from semantics.module import IRModule
from semantics.rules import Rule
from semantics.shapes import shape_var
from semantics.types import FuncType, Type, TypeData
from semantics.visitor import post_order
from typechecker import messages
from typechecker.annotate import Annotator
from typechecker.infer import GlobalInfo, Inferencer
from typechecker.kinding import Kinder, shape_vars_of
from typechecker.patterns import missing_case


@dataclass
class ModuleTyping:
    """The outcome of checking a module: one closed scheme per global."""

    module: IRModule
    kinder: Kinder
    schemes: dict[str, Type]
    shape_params: dict[int, tuple[FuncType, tuple[sympy.Symbol, ...]]]
    inferencer: Inferencer
    annotated: IRModule | None = None


_CACHE: OrderedDict[int, ModuleTyping] = OrderedDict()
_CACHE_SIZE = 8


def module_typing(mod: IRModule) -> ModuleTyping:
    """Check ``mod`` (cached per module object); RelayTypeError if it is ill-typed."""
    hit = _CACHE.get(id(mod))
    if hit is not None and hit.module is mod:
        _CACHE.move_to_end(id(mod))
        return hit
    result = _check_module(mod)
    _CACHE[id(mod)] = result
    if len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return result


def _register_scheme(inf: Inferencer, scheme: Type) -> None:
    if type(scheme) is FuncType:
        names = shape_vars_of(scheme)
        if names:
            inf.shape_params[id(scheme)] = (scheme, tuple(shape_var(n) for n in sorted(names)))


def _check_module(mod: IRModule) -> ModuleTyping:
    kinder = Kinder(mod.types)
    kinder.check_adts()
    inf = Inferencer(kinder)
    functions = mod.functions
    for name, fn in functions.items():
        if not isinstance(fn, Function):
            raise RelayTypeError(f"malformed program: @{name} is not a function",
                                 getattr(fn, "span", None), code=Rule.TYPE_FUNCTION_DEFINITION)
        inf.default_span = fn.span
        declared = inf.declared_type(fn)
        if declared is not None:
            inf.globals[name] = GlobalInfo(name, fn, declared, True, True)
            _register_scheme(inf, declared)
        else:
            inf.globals[name] = GlobalInfo(name, fn, declared, False)  # type: ignore[arg-type]
    for component in _components(functions, inf.globals):
        _infer_component(inf, component)
    solver = inf.solver
    inf.store.current_level = 0
    solver.settle(-1)
    solver.fail_if_pending()
    _check_matches(inf)
    Annotator(inf).verify()
    schemes = {}
    for name, info in inf.globals.items():
        schemes[name] = inf.store.resolve(info.type)
    return ModuleTyping(mod, kinder, schemes, inf.shape_params, inf)


def _infer_component(inf: Inferencer, names: list[str]) -> None:
    # [Type-Function-Definition]  Δ, V.. ; Γ, @f : fn(T1..Tn) -> O, %ai : Ti ⊢ body : O
    #                             ⟹   ⊢ def @f[V..](%a1: T1, ..., %an: Tn) -> O { body } : Gen(...)
    store = inf.store
    store.current_level = 1
    infos = [inf.globals[n] for n in names]
    inf.def_roots = [info.fn for info in infos if info.fn is not None]
    inf.generated_shape_names = set()
    for info in infos:
        if not info.declared:
            info.type = _monomorphic_type(inf, info.fn)  # type: ignore[arg-type]
    for info in infos:
        _infer_body(inf, info)
    inf.solver.solve()
    inf.solver.settle(0)
    store.current_level = 0
    group: dict = {}
    for info in infos:
        fn = info.fn
        assert fn is not None
        if not info.declared:
            inf.default_span = fn.span
            scheme = inf.generalize(info.type, 0, fn.type_params, group)
            info.type = scheme
            info.generalized = True
            _register_scheme(inf, scheme)
        inf.memo[id(fn)] = info.type


def _monomorphic_type(inf: Inferencer, fn: Function) -> FuncType:
    span = fn.span
    params = inf.push_type_params(fn.type_params, span)
    try:
        if not isinstance(fn.params, tuple) or not all(isinstance(p, Var) for p in fn.params):
            raise RelayTypeError("malformed program: function parameters must be Vars", span,
                                 code=Rule.TYPE_FUNCTION_DEFINITION)
        args = tuple(inf.annotation(p.type_annotation, p.span or span)
                     if p.type_annotation is not None else inf.store.fresh() for p in fn.params)
        ret = inf.annotation(fn.ret_type, span) if fn.ret_type is not None else inf.store.fresh()
    finally:
        inf.pop_type_params(params)
    return FuncType(args, ret)


def _infer_body(inf: Inferencer, info: GlobalInfo) -> None:
    fn = info.fn
    assert fn is not None
    inf.default_span = fn.span
    ft = info.type
    assert isinstance(ft, FuncType)
    params = inf.push_type_params(fn.type_params, fn.span)
    if not isinstance(fn.params, tuple) or not all(isinstance(p, Var) for p in fn.params):
        raise RelayTypeError("malformed program: function parameters must be Vars", fn.span,
                             code=Rule.TYPE_FUNCTION_DEFINITION)
    saved = [inf.bind(p, t) for p, t in zip(fn.params, ft.arg_types, strict=False)]
    raw = inf.run(fn.body)
    body = inf.result_type(fn.body, raw, info.declared or fn.ret_type is not None)
    site = fn.body.span if not isinstance(fn.body, Var) and fn.body.span else (
        getattr(fn.ret_type, "span", None) or fn.span)
    inf.unify(ft.ret_type, body, Rule.TYPE_FUNCTION_DEFINITION, f"result of @{info.name}", site)
    inf.restore(saved)
    inf.pop_type_params(params)


def _components(functions: Mapping[str, Function],
                infos: Mapping[str, GlobalInfo]) -> list[list[str]]:
    """Strongly connected components of the call graph, callees first (iterative Tarjan)."""
    edges: dict[str, list[str]] = {name: [] for name in functions}
    if len(functions) <= 1:
        return [[name] for name in functions]
    for name, fn in functions.items():
        refs: list[str] = []
        seen: set[str] = set()
        for node in post_order(fn.body) if isinstance(fn.body, Expr) else ():
            if type(node) is GlobalVar:
                target = node.name_hint
                if target in infos and not infos[target].declared and target not in seen:
                    seen.add(target)
                    refs.append(target)
        edges[name] = refs
    return strongly_connected_components(functions, edges)


def _check_matches(inf: Inferencer) -> None:
    # [Type-ADT-Match]  a complete match must cover every value of the scrutinee's type
    for match, data in inf.matches:
        missing = missing_case(inf, match.clauses, data)
        if missing is not None:
            raise RelayTypeError(messages.non_exhaustive(missing), match.span or inf.default_span,
                                 code=Rule.TYPE_ADT_MATCH)


# --- expressions ----------------------------------------------------------------------------

def expression_inferencer(expr: Expr, typing: ModuleTyping | None,
                          fallback: Callable[[], IRModule | None] | None = None
                          ) -> tuple[Inferencer, Type]:
    """Infer ``expr`` against the globals of ``typing``; returns the inferencer and its type.

    ``fallback`` (used when there is no module) supplies a module — the prelude — loaded
    the first time the expression mentions a global, constructor or ADT name.
    """
    def lazy_types() -> Mapping[str, TypeData]:
        mod = fallback() if fallback is not None else None
        return mod.types if mod is not None else {}

    if typing is not None:
        kinder = typing.kinder
    else:
        kinder = Kinder({}, lazy_types if fallback is not None else None)
    inf = Inferencer(kinder)
    if typing is not None:
        _load_globals(inf, typing)
    elif fallback is not None:
        def load(target: Inferencer) -> None:
            mod = fallback()
            if mod is not None:
                _load_globals(target, module_typing(mod))
        inf.load_fallback = load
    inf.default_span = expr.span
    inf.def_roots = [expr]
    store = inf.store
    store.current_level = 1
    raw = inf.run(expr)
    if id(store.find(raw)) in inf._nullary:
        raw = inf.use(expr, raw)
    if isinstance(expr, Function):
        inf.solver.solve()
        inf.solver.settle(0)
        store.current_level = 0
        raw = inf.generalize(raw, 0, expr.type_params)
        inf.memo[id(expr)] = raw
    store.current_level = 0
    inf.solver.settle(-1)
    inf.solver.fail_if_pending()
    _check_matches(inf)
    return inf, raw


def _load_globals(inf: Inferencer, typing: ModuleTyping) -> None:
    for name, scheme in typing.schemes.items():
        inf.globals.setdefault(name, GlobalInfo(name, None, scheme, True, True))
    inf.shape_params.update(typing.shape_params)


def annotate_module(typing: ModuleTyping) -> IRModule:
    """The annotated copy of a checked module (cached on ``typing``)."""
    if typing.annotated is not None:
        return typing.annotated
    mod = typing.module
    ann = Annotator(typing.inferencer)
    types = {name: ann.type_data(td) for name, td in mod.types.items()}
    functions = {name: ann.expr(fn) for name, fn in mod.functions.items()}
    typing.annotated = IRModule(functions, types, source_name=mod.source_name)  # type: ignore
    return typing.annotated


def scheme_of(typing: ModuleTyping, name: str) -> Any:
    return typing.schemes[name]
