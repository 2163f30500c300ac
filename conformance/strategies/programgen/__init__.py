"""Internals of the type-directed program generator, one concept per module.

The entry point is :mod:`conformance.strategies.programs` (``well_typed_exprs``,
``well_typed_modules`` and the names it re-exports); this package exports nothing itself.

* :mod:`.config` — ``ProgramConfig``, ``Program``, ``TypingContext``, ``FEATURES``;
* :mod:`.scope` — typing contexts (``_Ctx``), recursion permits, module state, helpers;
* :mod:`.base` — the mixins' shared base: draws, fresh names, random types, sharing pool;
* :mod:`.exprs` — ``gen(t, ctx, depth)``, literals, ``let``/``if``/projections/calls;
* :mod:`.operators` — elementwise operator calls and registered valid calls;
* :mod:`.effects` — reference reads, writes and sequencing;
* :mod:`.adts` — ADT definitions, constructor values, matches, patterns;
* :mod:`.recursion` — structural recursion and counter loops;
* :mod:`.assembly` — globals and ``main``; ``_Gen``, the generator built from the mixins.
"""
