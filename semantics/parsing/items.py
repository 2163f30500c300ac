"""Whole texts: modules and their items, one expression, one type (docs/architecture.md#text).

:class:`ModuleParser` is the complete parser and holds the entry points
:mod:`semantics.parser` calls. Modules are order-independent: a first pass
skims the top-level items (using the lexer's bracket table) and registers
the ADT names, then every ``type`` definition is parsed, then every ``def``.
Prelude definitions the text uses but does not define are merged in by the
prelude's ``needed_definitions``, reached through :mod:`semantics.parsing.prelude_link`
(the prelude itself is parsed by this parser, so it registers itself there).
"""

from __future__ import annotations

from semantics.expr import Constructor, Expr, Function
from semantics.lexer import version_of
from semantics.module import IRModule
from semantics.parsing.blocks import BlockParser
from semantics.parsing.prelude_link import prelude
from semantics.types import GlobalTypeVar, Type, TypeData
from semantics.visitor import run_recursive

__all__ = ["ModuleParser"]

_SUPPORTED_VERSION = "0.0.5"


class ModuleParser(BlockParser):
    """The complete parser: the entry points for a module, an expression or a type."""

    # --- entry points -----------------------------------------------------------------------
    def skip_version(self) -> None:
        if self.K[self.i] == "VERSION":
            version = version_of(self.V[self.i])
            if version != _SUPPORTED_VERSION:
                raise self.error(f"unsupported text format version \"{version}\": this parser "
                                 f"reads version \"{_SUPPORTED_VERSION}\" (as TVM does); write "
                                 f"`#[version = \"{_SUPPORTED_VERSION}\"]` or omit the header")
            self.i += 1

    def parse_expression(self) -> tuple[Expr, IRModule]:
        self.skip_version()
        self.check_metadata()
        if self.K[self.i] == "EOF":
            raise self.error("expected an expression, found end of input")
        expr = run_recursive(self.block())
        if self.K[self.i] != "EOF":
            raise self.error(f"expected end of input after the expression, "
                             f"found {self.toks.describe(self.i)}")
        funcs, types = prelude().needed_definitions(self.global_refs, self.prelude_types_used,
                                                    (), (), ())
        return expr, IRModule(funcs, types, source_name=self.toks.source.name)

    def parse_type_text(self) -> Type:
        if self.K[self.i] == "EOF":
            raise self.error("expected a type, found end of input")
        t = self.type_()
        if self.K[self.i] != "EOF":
            raise self.error(f"expected end of input after the type, "
                             f"found {self.toks.describe(self.i)}")
        return t

    def parse_module(self) -> IRModule:
        self.skip_version()
        self.check_metadata()
        type_items, def_items = self.skim_items()
        for start in type_items:
            self.i = start
            td = self.type_definition()
            self.types[td.header.name] = td
        functions: dict[str, Function] = {}
        for start in def_items:
            self.i = start + 1
            name_i = self.expect("GLOBAL", "after `def`")
            name = self.V[name_i][1:]
            if name in functions:
                raise self.error(f"duplicate definition of global @{name}", name_i)
            functions[name] = run_recursive(self.function(start))
        if self.prelude is None:
            return IRModule(functions, self.types, source_name=self.toks.source.name)
        extra_funcs, extra_types = prelude().needed_definitions(
            self.global_refs, self.prelude_types_used, functions, self.types, self.ctors)
        functions.update((k, v) for k, v in extra_funcs.items() if k not in functions)
        all_types = dict(self.types)
        all_types.update((k, v) for k, v in extra_types.items() if k not in all_types)
        return IRModule(functions, all_types, source_name=self.toks.source.name)

    def skim_items(self) -> tuple[list[int], list[int]]:
        """Start indices of the top-level ``type`` and ``def`` items; registers ADT names."""
        K, M = self.K, self.toks.match
        types: list[int] = []
        defs: list[int] = []
        j = self.i
        while K[j] != "EOF":
            k = K[j]
            if k == "def":
                defs.append(j)
                b = j + 1
                while K[b] not in ("{", "EOF", "def", "type", "}"):
                    b += 1
                if K[b] != "{":
                    return types, defs   # malformed: the full parse reports it
                j = M[b] + 1
            elif k == "type" or (k == "extern" and K[j + 1] == "type"):
                types.append(j)
                n = j + 1 if k == "type" else j + 2
                if K[n] == "IDENT":
                    name = self.V[n]
                    if name in self.type_names:
                        raise self.error(f"duplicate definition of type {name}", n)
                    self.type_names[name] = n
                b = n + 1
                if K[b] == "[":
                    b = M[b] + 1
                j = M[b] + 1 if K[b] == "{" else b
            elif k == "VERSION":
                raise self.error("the `#[version = ...]` header must come first", j)
            else:
                raise self.error(f"expected `def` or `type` at the top level, "
                                 f"found {self.toks.describe(j)}", j)
        return types, defs

    # --- ADT definitions --------------------------------------------------------------------
    def type_definition(self) -> TypeData:
        start = self.i
        if self.K[self.i] == "extern":
            self.i += 1
        self.expect("type", "to start a type definition")
        name_i = self.i
        name = self.check_name(name_i, "a type name")
        self.i += 1
        header = GlobalTypeVar(name, span=self.span(name_i))
        tmark = len(self.tundo)
        type_vars = self.type_params() if self.K[self.i] == "[" else ()
        ctors: list[Constructor] = []
        if self.K[self.i] == "{":
            self.i += 1
            while self.K[self.i] != "}":
                c_i = self.i
                cname = self.check_name(c_i, "a constructor name")
                self.i += 1
                if cname in self.ctors:
                    raise self.error(f"duplicate constructor {cname}", c_i)
                inputs: list[Type] = []
                if self.K[self.i] == "(":
                    self.i += 1
                    while self.K[self.i] != ")":
                        inputs.append(self.type_())
                        self.comma_or(")", "in the fields of a constructor")
                    self.i += 1
                ctor = Constructor(cname, tuple(inputs), header, len(ctors),
                                   span=self.span(c_i, self.i - 1))
                self.ctors[cname] = ctor
                ctors.append(ctor)
                self.comma_or("}", "after a constructor")
            self.i += 1
        self.restore_types(tmark)
        return TypeData(header, tuple(type_vars), tuple(ctors), span=self.span(start, self.i - 1))
