"""The partial evaluator (paper §4.3 and appendix; docs/architecture.md#api).

``partial_evaluate(p, dce=True)`` evaluates the static parts of a program away
— constant operator calls, static branches, known closures and globals,
references whose contents are known — and keeps a residual program in
A-normal form, then removes dead code (references that never escape
included). Importing this package registers the pass ``PartialEvaluate``.
See ``docs/pe.md`` and the design note of :mod:`pe.evaluator`.
"""

from __future__ import annotations

from pe.partial_eval import partial_evaluate

__all__ = ["partial_evaluate"]
