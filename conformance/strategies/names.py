"""Identifier strategies shared by the AST and program generators.

Every name drawn here is a valid identifier of the text format (docs/architecture.md#text)
and never a reserved word, a dtype, a literal spelling (``inf``, ``nan``,
``True``) or a name of the prelude, so that ``parse(pretty(m))`` can resolve it
to the same binder. Pools are small on purpose: drawing from a handful of
names makes shadowing and name collisions (which the printer must survive)
common; an occasional random identifier exercises the lexer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from hypothesis import strategies as st

from semantics.dtypes import is_dtype

T = TypeVar("T")

RESERVED = frozenset({
    "fn", "let", "if", "else", "match", "ref", "ref_read", "ref_write", "grad", "type", "def",
    "meta", "in", "free_var", "where", "version", "Tensor", "Ref", "True", "False", "None",
    "Any", "_", "relay", "Constant", "Type", "Shape", "BaseType", "Relation", "ADT",
})

# The prelude's names (TVM's prelude): user programs generated here never redefine them.
PRELUDE_NAMES = frozenset({
    "List", "Option", "Tree", "Cons", "Nil", "Some", "None", "Rose", "map", "foldl", "foldr",
    "sum", "length", "nth", "concat", "filter", "zip", "rev", "iterate", "hd", "tl", "id",
    "compose", "update", "size", "foldr1", "foldl1", "unfoldr", "unfoldl", "tmap", "tree_map",
    "tree_size", "any", "all", "tensor_array", "range", "zipWith", "head", "tail",
})

LOCAL_POOL = ("x", "y", "z", "a", "b", "f", "g", "acc", "x1", "y_2", "tmp", "n")
GLOBAL_POOL = ("f", "g", "h", "helper", "go", "loop", "aux", "f2")
TYPE_VAR_POOL = ("A", "B", "C", "T", "U", "V")
ADT_POOL = ("Box", "Pair", "Stream", "Shape2", "Expr1", "Wrap", "Nat", "Bag")
CTOR_POOL = ("Leaf", "Node", "Zero", "Succ", "Mk", "Empty", "Cell", "Lit", "Add", "Neg",
             "One", "Two", "Pack", "Unit")
ATTR_POOL = ("axis", "keepdims", "dtype", "padding", "strides", "layout", "units", "alpha",
             "exclude", "mode", "shape", "epsilon", "name", "flag")
SHAPE_VAR_POOL = ("n", "m", "k", "batch")


_INDEX: dict[int, st.SearchStrategy[int]] = {}


def index(n: int) -> st.SearchStrategy[int]:
    """``integers(0, n - 1)``, built once per ``n`` (building strategies per draw is slow)."""
    s = _INDEX.get(n)
    if s is None:
        s = _INDEX[n] = st.integers(0, n - 1)
    return s


def pick(draw: st.DrawFn, options: Sequence[T]) -> T:
    """One of ``options`` (shrinks towards the first)."""
    if len(options) == 1:
        return options[0]
    return options[draw(index(len(options)))]


def unique_name(name: str, taken: set[str]) -> str:
    """``name``, or ``name`` with a numeric suffix, not in ``taken`` (which it joins)."""
    out, i = name, 1
    while out in taken:
        out, i = f"{name}{i}", i + 1
    taken.add(out)
    return out


def is_valid_name(name: str) -> bool:
    """True for an identifier that may be used as any kind of name in generated text."""
    return (name.isidentifier() and name.isascii() and name not in RESERVED
            and name not in PRELUDE_NAMES and not is_dtype(name)
            and not name.lower().startswith(("inf", "nan")))


def _random(pattern: str) -> st.SearchStrategy[str]:
    return st.from_regex(pattern, fullmatch=True).filter(
        lambda s: is_valid_name(s) and not s.startswith("fv_"))


def _names(pool: Sequence[str], pattern: str) -> st.SearchStrategy[str]:
    # Mostly the pool (collisions and shadowing), sometimes a random identifier.
    return st.one_of(st.sampled_from(tuple(pool)), st.sampled_from(tuple(pool)),
                     st.sampled_from(tuple(pool)), _random(pattern))


_LOCAL = _names(LOCAL_POOL, r"[a-z][a-z0-9_]{0,6}")
_GLOBAL = _names(GLOBAL_POOL, r"[a-z][a-z0-9_]{0,6}")
_ATTR = _names(ATTR_POOL, r"[a-z][a-z0-9_]{0,6}")
_TYPE_VAR = _names(TYPE_VAR_POOL, r"[A-Z][0-9]{0,2}")
_ADT = _names(ADT_POOL, r"[A-Z][a-z]{2,5}[0-9]?")
_CTOR = _names(CTOR_POOL, r"[A-Z][a-z]{1,5}[0-9]?")


def local_names() -> st.SearchStrategy[str]:
    """Names for ``%x`` variables (pool first, so shrinking prefers ``x``; never ``fv_*``)."""
    return _LOCAL


def global_names() -> st.SearchStrategy[str]:
    return _GLOBAL


def attr_names() -> st.SearchStrategy[str]:
    return _ATTR


def type_var_names() -> st.SearchStrategy[str]:
    """Type-variable names: one capital letter and digits (disjoint from ADT/constructor names)."""
    return _TYPE_VAR


def adt_names() -> st.SearchStrategy[str]:
    return _ADT


def ctor_names() -> st.SearchStrategy[str]:
    return _CTOR
