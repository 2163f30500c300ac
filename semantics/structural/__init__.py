"""Internals of structural equality and hashing; the entry point is :mod:`semantics.alpha`.

One concept per module (what is compared is in :mod:`semantics.alpha`'s
design note): :mod:`~semantics.structural.leaves` (attribute values,
constants, names: the comparisons and hash keys both sides share),
:mod:`~semantics.structural.types` (dims and type equality),
:mod:`~semantics.structural.exprs` (alpha-equality of expressions, patterns,
clauses and modules) and :mod:`~semantics.structural.hashing` (the hash
consistent with it). Public names are re-exported by :mod:`semantics.alpha`,
so this package re-exports nothing.
"""

from __future__ import annotations

__all__: list[str] = []
