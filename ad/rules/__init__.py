"""Per-operator differentiation rules, one module per operator family.

Importing this package imports every module beside it (``tensor``, ``reduce``, ``transform``,
``creation``, ``nn``, ...), and each registers its rules into the two tables of
:mod:`semantics.ops.tables`:

* ``GRADIENTS`` (reverse mode, ``@register_gradient(op)``)::

      def rule(call: Call, out: Expr, grad: Expr) -> list[Expr | None]

  ``call`` is the original call: its arguments are *atoms* (``Var`` or ``Constant``) carrying
  ``checked_type``, and ``call.checked_type`` is set. ``out`` is an atom bound to the call's
  value (use it instead of ``call`` so nothing is recomputed) and ``grad`` an atom holding the
  adjoint of the output (same type as ``out``; a tuple for tuple-valued operators). The rule
  returns one entry per argument: a Relay expression of exactly that argument's type (a
  ``Tuple`` expression for a tuple-typed argument; broadcast operands are summed back with
  ``collapse_sum_like``), or ``None`` when no gradient flows into that argument (integer
  tensors, indices, shapes). Rules are written in Relay, so they can be differentiated again.

* ``TANGENTS`` (forward mode, ``@register_tangent(op)``)::

      def rule(call: Call, out: Expr, tangents: list[Expr | None]) -> Expr | None

  ``tangents[i]`` is an atom holding the tangent of argument ``i`` (``None``: zero, e.g. an
  integer argument). The rule returns the output's tangent (same type as ``out``), or ``None``
  when the output carries none (an integer result).

Operators that deliberately have no rule are declared with ``declare_no_gradient`` /
``declare_no_tangent`` and a reason; ``missing(GRADIENTS)`` and ``missing(TANGENTS)`` must be
empty (``tests/ad/test_rule_completeness.py``). :mod:`ad.rules._build` has the small helpers the
rules use to build calls.
"""

from __future__ import annotations

import importlib
import pkgutil


def _load_families() -> list[str]:
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
    for name in names:
        importlib.import_module(f"{__name__}.{name}")
    return names


FAMILIES: list[str] = _load_families()

__all__ = ["FAMILIES"]
