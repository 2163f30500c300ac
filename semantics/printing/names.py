"""Printer names: per-call state, name allocation, and the scopes of binders.

Part of the printer (:mod:`semantics.printer`, "Names"). :class:`PrintContext`
holds what one ``pretty`` call shares between its units (metadata constants,
free-variable names, reserved graph numbers, ADT names); :class:`Scopes`
binds and unbinds variables and type parameters while a unit prints, so a
binder never shadows a name in scope and takes the first free ``name1``,
``name2``, ... instead.
"""

from __future__ import annotations

import base64
import functools
import json
import re
from typing import Any

import numpy as np

from semantics import dtypes
from semantics.expr import Constant, Expr, Var
from semantics.types import Kind, TypeVar

# The lexer's LOCAL name shape (semantics/lexer.py): `/` joins word runs, as in TVM's `%base/x`.
_LOCAL_NAME = re.compile(r"[A-Za-z0-9_]\w*(?:/\w+)*(?:\.[A-Za-z_]\w*(?:/\w+)*)*\Z", re.ASCII)
_TYPE_NAME = re.compile(r"[A-Za-z_]\w*\Z", re.ASCII)
_KEYWORDS = frozenset({
    "def", "fn", "let", "if", "else", "match", "type", "free_var", "ref", "ref_read",
    "ref_write", "grad", "extern", "meta", "True", "False", "Tensor", "Ref", "_", "nullptr",
})
_PRELUDE_ADTS = frozenset({"List", "Option", "Tree"})
_KIND_SUFFIX = {Kind.Type: "", Kind.ShapeVar: ": Shape", Kind.BaseType: ": BaseType",
                Kind.Constraint: ": Constraint", Kind.AdtHandle: ": AdtHandle"}


# --- state shared by the units of one pretty() call -----------------------------------------

class PrintContext:
    """Metadata constants, free-variable names and reserved names of one ``pretty`` call."""

    def __init__(self) -> None:
        self.meta: list[np.ndarray] = []
        self.meta_index: dict[int, int] = {}
        self.meta_keep: list[Constant] = []
        self.free_names: dict[int, str] = {}
        self.free_taken: set[str] = set()
        self.free_keep: list[Var] = []
        self.free_by_root: dict[int, list[Var]] = {}
        self.declared: set[int] = set()
        self.numeric_names: set[int] = set()
        self.adt_names: set[str] = set(_PRELUDE_ADTS)

    def name_free_vars(self, roots: list[Expr]) -> None:
        """Name every free variable of ``roots`` (distinct objects get distinct names)."""
        from semantics.analysis import free_vars

        for root in roots:
            found = free_vars(root)
            self.free_by_root[id(root)] = found
            for v in found:
                if id(v) in self.free_names:
                    continue
                base = _local_base(v.name_hint)
                name = _first_free(base, lambda s: s in self.free_taken)
                self.free_taken.add(name)
                self.free_names[id(v)] = name
                self.free_keep.append(v)
                self.note_name(name)

    def note_name(self, name: str) -> None:
        if name.isdigit() and len(name) < 12:
            self.numeric_names.add(int(name))

    def constant_ref(self, c: Constant) -> str:
        index = self.meta_index.get(id(c))
        if index is None:
            index = len(self.meta)
            self.meta.append(c.data)
            self.meta_keep.append(c)
            self.meta_index[id(c)] = index
        return f"meta[relay.Constant][{index}]"

    def metadata_section(self) -> str:
        if not self.meta:
            return ""
        entries = []
        for arr in self.meta:
            data = np.ascontiguousarray(arr)
            if data.dtype != np.bool_:
                data = data.astype(data.dtype.newbyteorder("<"), copy=False)
            entries.append(json.dumps({
                "dtype": arr.dtype.name, "shape": [int(d) for d in arr.shape],
                "data": base64.b64encode(data.tobytes()).decode("ascii")}))
        return "\n#[metadata]\n{\"relay.Constant\": [\n  " + ",\n  ".join(entries) + "\n]}\n"


@functools.lru_cache(maxsize=65536)
def _local_base(hint: str) -> str:
    """A valid ``%name`` (without ``%``) close to ``hint``."""
    if _LOCAL_NAME.match(hint):
        return hint
    cleaned = re.sub(r"[^A-Za-z0-9_.]", "_", hint)
    if not _LOCAL_NAME.match(cleaned):
        cleaned = cleaned.replace(".", "_")
    return cleaned or "v"


def type_base(hint: str) -> str:
    """A valid type-parameter name close to ``hint``."""
    if _TYPE_NAME.match(hint):
        return hint
    cleaned = re.sub(r"\W", "_", hint, flags=re.ASCII)
    if not cleaned or cleaned[0].isdigit():
        cleaned = "T" + cleaned
    return cleaned


def _first_free(base: str, taken: Any) -> str:
    """``base`` if not ``taken(base)``, else the first of ``base1, base2, ...`` (``base_1``...
    when ``base`` ends in a digit) that is not taken."""
    if not taken(base):
        return base
    sep = "_" if base[-1].isdigit() else ""
    k = 1
    while True:
        name = f"{base}{sep}{k}"
        if not taken(name):
            return name
        k += 1


# --- the binders in scope while one unit prints ---------------------------------------------

class Scopes:
    """Names of the variables and type parameters in scope while a unit prints.

    ``var_names`` maps each variable in scope to a stack of names (innermost
    last) and ``scope_names`` counts the binders in scope per name;
    ``tv_names`` and ``tv_scope`` do the same for type parameters.
    """

    def __init__(self, ctx: PrintContext):
        self.ctx = ctx
        self.var_names: dict[int, list[str]] = {}
        self.scope_names: dict[str, int] = {}
        self.tv_names: dict[int, list[str]] = {}
        self.tv_scope: dict[str, int] = {}

    def bind_var(self, v: Var) -> str:
        base = _local_base(v.name_hint)
        free = self.ctx.free_taken
        scope = self.scope_names
        if base in scope or base in free:
            name = _first_free(base, lambda s: s in scope or s in free)
        else:
            name = base
        scope[name] = scope.get(name, 0) + 1
        names = self.var_names.get(id(v))
        if names is None:
            self.var_names[id(v)] = [name]
        else:
            names.append(name)
        if name[0].isdigit():
            self.ctx.note_name(name)
        return name

    def unbind_var(self, v: Var) -> None:
        names = self.var_names[id(v)]
        name = names.pop()
        if not names:
            del self.var_names[id(v)]
        left = self.scope_names[name] - 1
        if left:
            self.scope_names[name] = left
        else:
            del self.scope_names[name]

    def var_text(self, v: Var) -> str:
        names = self.var_names.get(id(v))
        if names:
            return "%" + names[-1]
        name = self.ctx.free_names.get(id(v))
        if name is None:  # reachable only through an ill-scoped shared node
            self.ctx.name_free_vars([v])
            name = self.ctx.free_names[id(v)]
        return "%" + name

    def bind_type_var(self, tv: TypeVar) -> str:
        base = type_base(tv.name)
        scope, adts = self.tv_scope, self.ctx.adt_names
        name = _first_free(base, lambda s: s in scope or s in adts or s in _KEYWORDS
                           or dtypes.is_dtype(s))
        scope[name] = scope.get(name, 0) + 1
        self.tv_names.setdefault(id(tv), []).append(name)
        return name

    def unbind_type_var(self, tv: TypeVar) -> None:
        names = self.tv_names[id(tv)]
        name = names.pop()
        if not names:
            del self.tv_names[id(tv)]
        left = self.tv_scope[name] - 1
        if left:
            self.tv_scope[name] = left
        else:
            del self.tv_scope[name]

    def type_params_text(self, tvs: tuple[TypeVar, ...]) -> str:
        """Bind ``tvs`` and return ``[A, B: Shape]`` ('' when empty)."""
        if not tvs:
            return ""
        return "[" + ", ".join(self.bind_type_var(tv) + _KIND_SUFFIX.get(tv.kind, "")
                               for tv in tvs) + "]"
