"""Structural equality up to renaming of bound variables, and a hash consistent with it.

:func:`alpha_equal` decides whether two programs (expressions, types,
patterns, clauses or modules) are the same up to the names of bound
variables (docs/architecture.md#api); :func:`types_equal` compares types with
symbolic dims; :func:`structural_hash` is a hash with
``alpha_equal(a, b) ⇒ structural_hash(a) == structural_hash(b)``.

What is compared, node by node:

* **Variables.** Binding sites (``let``, parameters, pattern variables) map
  the two variables to each other for the binder's *scope* (the scoping of
  :mod:`semantics.analysis`: a ``let`` variable is in scope in its value only
  when the value is a function literal). A use compares through the innermost
  mapping in scope. Variables used outside any binder's scope are *free* and
  are mapped bijectively on first encounter (TVM's ``map_free_vars=True``), so
  ``parse(pretty(e))`` is alpha-equal to ``e`` even when ``e`` has free
  variables; ``map_free_vars=False`` requires free variables to be identical.
* **Annotations** (variable types, return types, call type arguments) are
  compared when present; a type on one side only makes the programs
  different, as in TVM's structural equality.
* **Leaves.** ``GlobalVar``, ``Op`` and ``Constructor`` by name; ``Constant``
  by dtype, shape and exact bytes (a NaN equals a NaN with the same bits,
  ``0.0`` differs from ``-0.0``); attributes by value (numbers numerically,
  so ``1`` equals ``1.0``; ``NaN`` equals ``NaN``; bools, strings, ``None``
  and lists exactly).
* **Sharing.** Graph bindings denote sharing and sharing is observable once
  references exist (RULES.md: a shared node is evaluated once per evaluation
  of its scope, so its effects happen once). The non-leaf nodes of the two
  DAGs must therefore correspond *one to one*: a node shared in ``a`` must be
  shared identically in ``b``; a DAG is not equal to its tree unfolding.
  Leaves (variables, globals, operators, constructors, constants) are values
  and their sharing is not compared.
* **Types.** Type parameters (``fn [A]``, ``fn [A](A) -> A``, ``type T[A]``)
  are bound like variables (kinds must agree); free type variables are
  mapped bijectively by :func:`alpha_equal` and compared by identity by
  :func:`types_equal` (the type checker's view: two distinct parameters are
  different types). ADTs (``GlobalTypeVar``) compare by name, and a bare
  ``GlobalTypeVar`` ``Name`` equals the argument-less type call ``Name[]``
  (both denote a parameterless ADT; the parser builds the latter). Dims compare
  symbolically (:func:`dims_equal`): ``n + n`` equals ``2*n``, ``?`` only
  equals ``?``. ``IncompleteType`` holes are
  mapped like free type variables (bijectively by :func:`alpha_equal`, by
  identity by :func:`types_equal`).
* **Shape variables** are "implicitly bound at the enclosing definition"
  (docs/architecture.md#text): a global function — in a bare expression, an
  outermost function literal — binds every shape variable written in it, and
  :func:`alpha_equal` compares them up to one consistent renaming per
  definition (``def @f(%x: Tensor[(n, 3), float32])`` equals the same with
  ``k``; ``(n, n)`` never equals ``(n, k)``). Shape variables written outside
  every function — and all of them in :func:`types_equal` and in
  ``alpha_equal`` of two types — are free and compare by name. Details and
  limits in :mod:`semantics.structural.types`.
* **Modules** are equal when they define the same global and type names and
  the definitions are pairwise equal.

Algorithm: an explicit worklist of node pairs with bind/unbind actions
(HOUSE_STYLE habit 4), memoized on the pair of identities (the sharing
bijection doubles as the memo), so comparing two DAGs is linear in their
size even when the tree unfolding is exponential. Types are compared by the
same kind of worklist (any depth; a type is compared as the tree it denotes,
types are not memoized). :func:`structural_hash` walks the same order: bound
variables hash by binding position (a counter, De Bruijn-like), free ones by
first-encounter index; every node's hash is memoized by identity. Hashes are
built from integers only (names via CRC-32), so they are stable across
processes.

Limits: results are exact for *well-formed* programs — each variable object
is bound at most once per scope chain and a node shared between scopes only
refers to variables bound in all of them (TVM's well-formedness). Symbolic
dims the SymPy-based :class:`~semantics.shapes.DimSolver` cannot decide count
as different.

This module is the entry point; the implementation lives in
:mod:`semantics.structural`, one concept per module: ``leaves`` (attribute
values, constants, names), ``types`` (:func:`dims_equal`,
:func:`types_equal`), ``exprs`` (:func:`alpha_equal`) and ``hashing``
(:func:`structural_hash`).
"""

from __future__ import annotations

from semantics.structural.exprs import alpha_equal
from semantics.structural.hashing import structural_hash
from semantics.structural.types import dims_equal, types_equal

__all__ = ["alpha_equal", "dims_equal", "structural_hash", "types_equal"]
