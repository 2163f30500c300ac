"""The pieces of the Relay text-format parser; the entry point is :mod:`semantics.parser`.

The parser is one class assembled from layers, one concept per module, each a
subclass of the one it builds on (so every method it calls is declared below it):

* :mod:`~semantics.parsing.base` -- the parser state, errors, scopes and name resolution;
* :mod:`~semantics.parsing.metadata` -- ``meta[relay.Constant][i]`` and the
  ``#[metadata]`` section (our JSON and TVM's serialized NDArrays);
* :mod:`~semantics.parsing.literals` -- numeric literals and attribute values;
* :mod:`~semantics.parsing.types` -- types, shapes and type parameters;
* :mod:`~semantics.parsing.patterns` -- the patterns of ``match`` clauses;
* :mod:`~semantics.parsing.expressions` -- infix, prefix and postfix expressions and atoms;
* :mod:`~semantics.parsing.blocks` -- blocks of statements (the let spine) and functions;
* :mod:`~semantics.parsing.items` -- whole texts: modules, ``type`` definitions, one
  expression or one type.

This package exports nothing itself: use :func:`semantics.parser.parse` and its siblings.
"""

__all__: list[str] = []
