"""IRModule: a program — global function definitions and ADT definitions.

An ``IRModule`` maps global names (without ``@``) to :class:`Function`
definitions and ADT names to :class:`TypeData`. It is immutable: the
``with_*`` methods return a new module. ``mod["main"]`` is the function bound
to ``@main``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType

from semantics.errors import RelayTypeError, undefined_global
from semantics.expr import Constructor, Expr, Function, GlobalVar
from semantics.types import GlobalTypeVar, TypeData


class IRModule:
    """Global functions and ADT definitions.

    Invariants: every constructor name is unique across ``types``; function
    and type names are unique. ``source`` is the text the module was parsed
    from, if any (used for spans in later errors).
    """

    __slots__ = ("_functions", "_types", "_constructors", "source_name")

    def __init__(self, functions: Mapping[str, Function] | None = None,
                 types: Mapping[str, TypeData] | None = None, *, source_name: str | None = None):
        self._functions: dict[str, Function] = dict(functions or {})
        self._types: dict[str, TypeData] = dict(types or {})
        ctors: dict[str, Constructor] = {}
        for td in self._types.values():
            for c in td.constructors:
                ctors[c.name] = c
        self._constructors = ctors
        self.source_name = source_name

    # --- lookup ---------------------------------------------------------------------------
    @property
    def functions(self) -> Mapping[str, Function]:
        return MappingProxyType(self._functions)

    @property
    def types(self) -> Mapping[str, TypeData]:
        return MappingProxyType(self._types)

    @property
    def constructors(self) -> Mapping[str, Constructor]:
        return MappingProxyType(self._constructors)

    def __getitem__(self, name: str | GlobalVar) -> Function:
        key = name.name_hint if isinstance(name, GlobalVar) else name
        if key.startswith("@"):
            key = key[1:]
        try:
            return self._functions[key]
        except KeyError:
            raise KeyError(f"module has no global @{key}") from None

    def __contains__(self, name: object) -> bool:
        key = name.name_hint if isinstance(name, GlobalVar) else name
        return isinstance(key, str) and key.lstrip("@") in self._functions

    def __iter__(self) -> Iterator[str]:
        return iter(self._functions)

    def __len__(self) -> int:
        return len(self._functions)

    def lookup(self, gv: GlobalVar) -> Function:
        """The definition of ``gv``, or ``RelayTypeError`` "undefined global" with its span."""
        fn = self._functions.get(gv.name_hint)
        if fn is None:
            raise RelayTypeError(undefined_global("@" + gv.name_hint), gv.span)
        return fn

    def get_global_var(self, name: str) -> GlobalVar:
        if name not in self._functions:
            raise KeyError(f"module has no global @{name}")
        return GlobalVar(name)

    def get_type(self, name: str | GlobalTypeVar) -> TypeData:
        key = name.name if isinstance(name, GlobalTypeVar) else name
        return self._types[key]

    # --- functional update ----------------------------------------------------------------
    def with_function(self, name: str, fn: Function) -> IRModule:
        funcs = dict(self._functions)
        funcs[name] = fn
        return IRModule(funcs, self._types, source_name=self.source_name)

    def with_functions(self, functions: Mapping[str, Function]) -> IRModule:
        """A module with the same types and exactly ``functions``."""
        return IRModule(functions, self._types, source_name=self.source_name)

    def with_type(self, td: TypeData) -> IRModule:
        types = dict(self._types)
        types[td.header.name] = td
        return IRModule(self._functions, types, source_name=self.source_name)

    def merged(self, other: IRModule) -> IRModule:
        """Definitions of both; ``self`` wins on a name defined in both."""
        funcs = dict(other._functions)
        funcs.update(self._functions)
        types = dict(other._types)
        types.update(self._types)
        return IRModule(funcs, types, source_name=self.source_name)

    @staticmethod
    def from_expr(expr: Expr, functions: Mapping[str, Function] | None = None,
                  types: Mapping[str, TypeData] | None = None) -> IRModule:
        """A module whose ``main`` is ``expr`` (wrapped in a nullary function unless it is one)."""
        main = expr if isinstance(expr, Function) else Function((), expr, span=expr.span)
        funcs = dict(functions or {})
        funcs["main"] = main
        return IRModule(funcs, types)

    def __repr__(self) -> str:
        return f"<IRModule globals={sorted(self._functions)} types={sorted(self._types)}>"
