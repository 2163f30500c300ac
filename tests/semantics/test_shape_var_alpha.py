"""Shape variables are bound at their definition (docs/architecture.md#text, issue 9 §4).

``alpha_equal`` compares the shape variables a definition binds up to one
consistent renaming per definition; free ones (and all of them in
``types_equal``) compare by name. Examples, then properties over random
modules: renaming every shape variable of each definition consistently keeps
the module alpha-equal (and its hash); merging two of them does not.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from conformance.strategies.ast import ast_modules
from semantics.alpha import alpha_equal, structural_hash, types_equal
from semantics.parser import parse, parse_expr, parse_type
from semantics.printer import pretty

T = "float32"


def defs(sig_a: str, sig_b: str, body_a: str = "%x", body_b: str = "%x") -> tuple[str, str]:
    return f"def @f({sig_a}) {{ {body_a} }}", f"def @f({sig_b}) {{ {body_b} }}"


MODULE_CASES = [
    # (module a, module b, alpha-equal?)
    (*defs(f"%x: Tensor[(n, 3), {T}]", f"%x: Tensor[(k, 3), {T}]"), True),
    (*defs(f"%x: Tensor[(n, n), {T}]", f"%x: Tensor[(n, k), {T}]"), False),
    (*defs(f"%x: Tensor[(n, k), {T}]", f"%x: Tensor[(n, n), {T}]"), False),
    (*defs(f"%x: Tensor[(n, m), {T}]", f"%x: Tensor[(m, n), {T}]"), True),
    (*defs(f"%x: Tensor[(n + n, m), {T}], %y: Tensor[(m), {T}]",
           f"%x: Tensor[(2 * k, j), {T}], %y: Tensor[(j), {T}]"), True),
    (*defs(f"%x: Tensor[(n * m, m), {T}]", f"%x: Tensor[(j * k, j), {T}]"), True),
    (*defs(f"%x: Tensor[(n * m, m), {T}]", f"%x: Tensor[(j * k, k), {T}]"), True),
    (*defs(f"%x: Tensor[(n * m, m + 1), {T}]", f"%x: Tensor[(j * k, j), {T}]"), False),
    (*defs(f"%x: Tensor[(n + 1), {T}]", f"%x: Tensor[(k + 2), {T}]"), False),
    # the body's annotations belong to the definition too
    (*defs(f"%x: Tensor[(n), {T}]", f"%x: Tensor[(k), {T}]",
           f"let %y: Tensor[(n), {T}] = %x; %y", f"let %y: Tensor[(k), {T}] = %x; %y"), True),
    (*defs(f"%x: Tensor[(n), {T}]", f"%x: Tensor[(k), {T}]",
           f"let %y: Tensor[(k), {T}] = %x; %y", f"let %y: Tensor[(k), {T}] = %x; %y"), False),
    (*defs(f"%x: Tensor[(n), {T}]", f"%x: Tensor[(k), {T}]",
           f"let %y: Tensor[(q), {T}] = %x; %y", f"let %y: Tensor[(p), {T}] = %x; %y"), True),
    (*defs(f"%x: Tensor[(n), {T}]", f"%x: Tensor[(k), {T}]",
           f"let %y: Tensor[(q), {T}] = %x; %y", f"let %y: Tensor[(k), {T}] = %x; %y"), False),
    # nested functions use the enclosing definition's variables
    (*defs(f"%x: Tensor[(n), {T}]", f"%x: Tensor[(a), {T}]",
           f"fn (%y: Tensor[(n, m), {T}]) {{ %y }}", f"fn (%y: Tensor[(a, b), {T}]) {{ %y }}"),
     True),
    (*defs(f"%x: Tensor[(n), {T}]", f"%x: Tensor[(a), {T}]",
           f"fn (%y: Tensor[(n, m), {T}]) {{ %y }}", f"fn (%y: Tensor[(b, a), {T}]) {{ %y }}"),
     False),
    # each definition has its own renaming
    (f"def @f(%x: Tensor[(n), {T}]) {{ %x }}\ndef @g(%x: Tensor[(n, m), {T}]) {{ %x }}",
     f"def @f(%x: Tensor[(a), {T}]) {{ %x }}\ndef @g(%x: Tensor[(m, b), {T}]) {{ %x }}", True),
    (f"def @f(%x: Tensor[(n), {T}]) {{ %x }}\ndef @g(%x: Tensor[(n, m), {T}]) {{ %x }}",
     f"def @f(%x: Tensor[(a), {T}]) {{ %x }}\ndef @g(%x: Tensor[(b, b), {T}]) {{ %x }}", False),
    # shape-kinded type parameters pair with the dims of the same name
    (f"def @f[n: Shape](%x: Tensor[(n), {T}]) {{ %x }}",
     f"def @f[k: Shape](%x: Tensor[(k), {T}]) {{ %x }}", True),
    (f"def @f[n: Shape](%x: Tensor[(n), {T}]) {{ %x }}",
     f"def @f[k: Shape](%x: Tensor[(j), {T}]) {{ %x }}", False),
    # symbolic arithmetic is compared after renaming
    (*defs(f"%x: Tensor[(n * (m + 1)), {T}], %y: Tensor[(m), {T}]",
           f"%x: Tensor[(k * m + k), {T}], %y: Tensor[(m), {T}]"), True),
    # products are ambiguous alone: decided by a later dim (deferred), or by search
    (*defs(f"%x: Tensor[(n * m), {T}], %y: Tensor[(n), {T}]",
           f"%x: Tensor[(j * k), {T}], %y: Tensor[(k), {T}]"), True),
    (*defs(f"%x: Tensor[(n * m), {T}], %y: Tensor[(n), {T}]",
           f"%x: Tensor[(j * k), {T}], %y: Tensor[(j * 2), {T}]"), False),
    (*defs(f"%x: Tensor[(n * m, n * m + n), {T}]", f"%x: Tensor[(j * k, j * k + k), {T}]"), True),
    (*defs(f"%x: Tensor[(n * m, n * m + n), {T}]", f"%x: Tensor[(j * k, j * k + j), {T}]"), True),
    (*defs(f"%x: Tensor[(n * m, n * m + n + 2 * m), {T}]",
           f"%x: Tensor[(j * k, j * k + j + k), {T}]"), False),
    (*defs(f"%x: Tensor[(?, n), {T}]", f"%x: Tensor[(?, k), {T}]"), True),
    (*defs(f"%x: Tensor[(?, n), {T}]", f"%x: Tensor[(k, k), {T}]"), False),
]


@pytest.mark.parametrize("text_a, text_b, expected", MODULE_CASES)
def test_shape_variables_of_definitions(text_a, text_b, expected):
    a, b = parse(text_a), parse(text_b)
    assert alpha_equal(a, b) is expected
    assert alpha_equal(b, a) is expected
    if expected:
        assert structural_hash(a) == structural_hash(b)


EXPR_CASES = [
    (f"fn (%x: Tensor[(n), {T}]) {{ %x }}", f"fn (%x: Tensor[(k), {T}]) {{ %x }}", True),
    # written outside every function: free, compared by name (also inside the function)
    (f"let %a: Tensor[(n), {T}] = 0f; fn (%x: Tensor[(n), {T}]) {{ %x }}",
     f"let %a: Tensor[(n), {T}] = 0f; fn (%x: Tensor[(n), {T}]) {{ %x }}", True),
    (f"let %a: Tensor[(n), {T}] = 0f; fn (%x: Tensor[(n), {T}]) {{ %x }}",
     f"let %a: Tensor[(n), {T}] = 0f; fn (%x: Tensor[(k), {T}]) {{ %x }}", False),
    (f"let %a: Tensor[(n), {T}] = 0f; %a", f"let %a: Tensor[(k), {T}] = 0f; %a", False),
    # two sibling functions of one expression are two definitions
    (f"(fn (%x: Tensor[(n), {T}]) {{ %x }}, fn (%x: Tensor[(n), {T}]) {{ %x }})",
     f"(fn (%x: Tensor[(a), {T}]) {{ %x }}, fn (%x: Tensor[(b), {T}]) {{ %x }})", True),
]


@pytest.mark.parametrize("text_a, text_b, expected", EXPR_CASES)
def test_shape_variables_of_expressions(text_a, text_b, expected):
    a, b = parse_expr(text_a), parse_expr(text_b)
    assert alpha_equal(a, b) is expected
    assert alpha_equal(b, a) is expected


def test_standalone_types_compare_shape_variables_by_name():
    n_type, k_type = parse_type(f"Tensor[(n, 3), {T}]"), parse_type(f"Tensor[(k, 3), {T}]")
    assert not types_equal(n_type, k_type)
    assert not alpha_equal(n_type, k_type)
    assert types_equal(parse_type(f"Tensor[(n + n), {T}]"), parse_type(f"Tensor[(2 * n), {T}]"))
    fn_n = parse_type(f"fn (Tensor[(n), {T}]) -> Tensor[(n), {T}]")
    fn_k = parse_type(f"fn (Tensor[(k), {T}]) -> Tensor[(k), {T}]")
    assert not types_equal(fn_n, fn_k)


# --- properties over random modules ------------------------------------------------------------

POOL = ("n", "m", "k", "batch", "p", "q", "r", "s")
_WORD = re.compile(r"[A-Za-z_]\w*")


def _dim_spans(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` of the dims inside every ``Tensor[(...)`` of ``text``."""
    spans = []
    for match in re.finditer(r"Tensor\[\(", text):
        start = end = match.end()
        depth = 1
        while depth:
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            end += 1
        spans.append((start, end - 1))
    return spans


def shape_names(text: str) -> set[str]:
    return {w for a, b in _dim_spans(text) for w in _WORD.findall(text[a:b])
            if w not in ("floor", "ceil")}


def rename(text: str, mapping: dict[str, str]) -> str:
    out, last = [], 0
    for a, b in _dim_spans(text):
        out.append(text[last:a])
        out.append(_WORD.sub(lambda w: mapping.get(w.group(), w.group()), text[a:b]))
        last = b
    out.append(text[last:])
    return "".join(out)


def items(text: str) -> list[str]:
    """The top-level items of a printed module (each starts at a line ``def``/``type``)."""
    starts = [m.start() for m in re.finditer(r"^(?:def @|type )", text, re.M)]
    bounds = [0, *starts, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:]) if a != b]


@given(ast_modules(), st.data())
def test_consistent_renaming_per_definition_keeps_alpha_equality(mod, data):
    text = pretty(mod)
    renamed = []
    for item in items(text):
        names = sorted(shape_names(item))
        if item.startswith("def @") and names:
            targets = data.draw(st.permutations(POOL))[:len(names)]
            item = rename(item, dict(zip(names, targets)))
        renamed.append(item)
    other = parse("".join(renamed))
    assert alpha_equal(mod, other)
    assert alpha_equal(other, mod)
    assert structural_hash(mod) == structural_hash(other)


@given(ast_modules(), st.data())
def test_merging_two_shape_variables_breaks_alpha_equality(mod, data):
    text = pretty(mod)
    parts = items(text)
    candidates = [i for i, item in enumerate(parts)
                  if item.startswith("def @") and len(shape_names(item)) >= 2]
    assume(candidates)
    index = data.draw(st.sampled_from(candidates))
    names = sorted(shape_names(parts[index]))
    keep, merged = data.draw(st.permutations(names))[:2]
    parts[index] = rename(parts[index], {merged: keep})
    other = parse("".join(parts))
    assert not alpha_equal(mod, other)
    assert not alpha_equal(other, mod)
