"""The Relay prelude and the rule that merges it into parsed programs (docs/architecture.md#api).

:file:`prelude.relay` defines, in Relay text, the ADTs ``List[A] { Cons,
Nil }``, ``Option[A] { Some, None }``, ``Tree[A] { Rose }`` and the functions
``id compose flip hd tl nth update length map foldl foldr foldr1 sum concat
filter zip rev map_accuml map_accumr unfoldr unfoldl tmap size iterate``,
named as in TVM's prelude, each with explicit type parameters and types.

* :func:`prelude_module` parses it once (without prelude fallback, of
  course) and caches the module. Its constructor objects are *the*
  constructors: the parser resolves ``Cons`` in user text to this module's
  ``Constructor`` object, so values and patterns built from parsed text and
  from the prelude agree by identity.
* :func:`needed_definitions` is the merge rule the parser applies: when a
  text uses a global, ADT or constructor name it does not define and the
  prelude defines it, the prelude's definition is added together with its
  transitive dependencies — and nothing else. A user definition with the
  same name shadows the prelude's (also for the prelude's own references:
  if a program defines ``@foldl`` and uses the prelude's ``@sum``, ``@sum``
  calls the program's ``@foldl``). Dependencies are computed once from the
  prelude's AST (iteratively, by :func:`semantics.visitor.post_order`).

Invariant: the prelude's definitions are shared, not copied, between all
modules that include them (AST nodes are immutable).
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Mapping
from pathlib import Path

from semantics.errors import ParseError
from semantics.expr import (
    Constructor,
    Function,
    GlobalVar,
    Let,
    Match,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    Var,
)
from semantics.module import IRModule
from semantics.parsing import prelude_link
from semantics.span import Span
from semantics.types import TypeCall, TypeData, type_children
from semantics.visitor import post_order

PRELUDE_PATH = Path(__file__).with_name("prelude.relay")

_MODULE: IRModule | None = None
_DEPS: dict[str, tuple[frozenset[str], frozenset[str]]] | None = None
_TYPE_DEPS: dict[str, frozenset[str]] | None = None


def prelude_text() -> str:
    """The source text of the prelude."""
    return PRELUDE_PATH.read_text(encoding="utf-8")


def prelude_module() -> IRModule:
    """The parsed prelude (parsed on first use, then cached).

    Returns:
        An :class:`IRModule` with the prelude's functions and ADTs.
    Raises:
        ParseError: only if ``prelude.relay`` itself is broken.
    """
    global _MODULE
    if _MODULE is None:
        from semantics.parser import parse

        _MODULE = parse(prelude_text(), source_name=str(PRELUDE_PATH), prelude=False)
    return _MODULE


def needed_definitions(global_refs: Mapping[str, Span | None],
                       type_refs: Mapping[str, Span | None],
                       defined_functions: Collection[str] = (),
                       defined_types: Collection[str] = (),
                       defined_constructors: Collection[str] = (),
                       ) -> tuple[dict[str, Function], dict[str, TypeData]]:
    """The prelude definitions a program needs.

    Args:
        global_refs: names of the globals the program references (``@map`` -> ``"map"``),
            with the span of a use (for errors).
        type_refs: names of prelude ADTs the program uses (through a type or a constructor).
        defined_functions / defined_types / defined_constructors: the program's own
            definitions, which shadow the prelude's.
    Returns:
        ``(functions, types)``: prelude functions and ADTs to add, closed under dependencies,
        in prelude order.
    Raises:
        ParseError: a needed prelude ADT has a constructor whose name the program already
            uses for its own constructor.
    """
    mod = prelude_module()
    deps, type_deps = _dependencies()
    funcs: set[str] = set()
    types: set[str] = set()
    work_f = [g for g in global_refs if g in mod.functions and g not in defined_functions]
    work_t = [t for t in type_refs if t in mod.types and t not in defined_types]
    while work_f or work_t:
        if work_f:
            g = work_f.pop()
            if g in funcs:
                continue
            funcs.add(g)
            g_globals, g_types = deps[g]
            work_f.extend(x for x in g_globals if x not in defined_functions)
            work_t.extend(t for t in g_types if t not in defined_types)
        else:
            t = work_t.pop()
            if t in types:
                continue
            types.add(t)
            work_t.extend(x for x in type_deps[t] if x not in defined_types)
    for t in types:
        for ctor in mod.types[t].constructors:
            if ctor.name in defined_constructors:
                span = type_refs.get(t) if t in type_refs else None
                raise ParseError(
                    f"the prelude type {t} is needed here, but its constructor {ctor.name} "
                    "clashes with a constructor this program defines", span)
    return ({name: fn for name, fn in mod.functions.items() if name in funcs},
            {name: td for name, td in mod.types.items() if name in types})


def _dependencies() -> tuple[dict[str, tuple[frozenset[str], frozenset[str]]],
                             dict[str, frozenset[str]]]:
    """Per prelude function: (globals, ADT names) it references; per ADT: ADTs it mentions."""
    global _DEPS, _TYPE_DEPS
    if _DEPS is None or _TYPE_DEPS is None:
        mod = prelude_module()
        _DEPS = {name: _function_refs(fn) for name, fn in mod.functions.items()}
        _TYPE_DEPS = {
            name: frozenset(n for c in td.constructors for t in c.inputs for n in _adt_names(t))
            - {name}
            for name, td in mod.types.items()}
    return _DEPS, _TYPE_DEPS


def _function_refs(fn: Function) -> tuple[frozenset[str], frozenset[str]]:
    globals_: set[str] = set()
    adts: set[str] = set()
    types: list = []
    for node in post_order(fn):
        if isinstance(node, GlobalVar):
            globals_.add(node.name_hint)
        elif isinstance(node, Constructor):
            adts.add(node.belong_to.name)
        elif isinstance(node, Var) and node.type_annotation is not None:
            types.append(node.type_annotation)
        elif isinstance(node, Function):
            types.extend(p.type_annotation for p in node.params if p.type_annotation is not None)
            if node.ret_type is not None:
                types.append(node.ret_type)
        elif isinstance(node, Let) and node.var.type_annotation is not None:
            types.append(node.var.type_annotation)
        elif isinstance(node, Match):
            patterns: list[Pattern] = [c.lhs for c in node.clauses]
            while patterns:
                p = patterns.pop()
                if isinstance(p, PatternConstructor):
                    adts.add(p.constructor.belong_to.name)
                    patterns.extend(p.patterns)
                elif isinstance(p, PatternTuple):
                    patterns.extend(p.patterns)
                elif isinstance(p, PatternVar) and p.var.type_annotation is not None:
                    types.append(p.var.type_annotation)
    for t in types:
        adts.update(_adt_names(t))
    return frozenset(globals_), frozenset(adts)


def _adt_names(t) -> set[str]:
    out: set[str] = set()
    stack = [t]
    while stack:
        u = stack.pop()
        if isinstance(u, TypeCall):
            out.add(u.func.name)
        stack.extend(type_children(u))
    return out


prelude_link.register(sys.modules[__name__])
