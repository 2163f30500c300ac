"""PartialEvaluate (``partial_evaluate``): partial evaluation as a pass (docs/architecture.md#api).

``partial_evaluate(p, dce=True)`` partially evaluates every global function of
``p`` (an ``IRModule`` or an expression; the same kind comes back) with
:class:`pe.evaluator.PartialEvaluator` — each global's parameters dynamic,
calls of globals unfolded from their original definitions — and then, with
``dce``, removes the dead code that leaves behind (:func:`pe.cleanup.clean`:
unused pure bindings, references that never escape, unreachable globals, and
single-use pure bindings folded back into their use).

Registered as the pass ``PartialEvaluate`` (not part of any ``-O`` level:
unfolding can grow a program; run it with ``relay pe FILE`` or ``relay opt
--pass PartialEvaluate``). The input is never mutated.
"""

from __future__ import annotations

from typing import TypeVar

from passes.common import typed_or_same
from passes.manager import Pass, register_pass
from pe.cleanup import clean
from pe.evaluator import DEFAULT_FUEL, PartialEvaluator
from semantics.expr import Expr
from semantics.module import IRModule

__all__ = ["partial_evaluate", "partial_evaluate_module"]

P = TypeVar("P", IRModule, Expr)


def partial_evaluate_module(mod: IRModule, dce: bool = True, fuel: int = DEFAULT_FUEL
                            ) -> IRModule:
    """Partially evaluate every global of ``mod`` (then clean up with ``dce``).

    Args:
        mod: the program (not modified).
        dce: remove the dead code the partial evaluator leaves (see :mod:`pe.cleanup`).
        fuel: compound-node visits with unfolding allowed (the termination backstop).
    Returns:
        An equivalent module with the same globals (minus unreachable ones with ``dce``).
    """
    typed = typed_or_same(mod)  # types instantiate the annotations of unfolded code
    functions = {}
    for name, fn in typed.functions.items():
        functions[name] = PartialEvaluator(typed, fuel).residualize(fn)
    out = typed.with_functions(functions)
    return clean(out) if dce else out


@register_pass("PartialEvaluate", "partial_evaluate")
def _partial_evaluate_pass(mod: IRModule) -> IRModule:
    """Partially evaluate static computations away, then eliminate dead code and references."""
    return partial_evaluate_module(mod, True)


def partial_evaluate(p: P, dce: bool = True, *, fuel: int = DEFAULT_FUEL) -> P:
    """An equivalent program with its static parts evaluated away (docs/architecture.md#api).

    Args:
        p: an ``IRModule`` or an expression (a closed expression; a non-function one is
            treated as the body of a nullary ``main``).
        dce: afterwards remove dead code, including references that never escape.
        fuel: the termination backstop (compound-node visits with unfolding allowed).
    Returns:
        A program of the same kind as ``p``.
    Raises:
        TypeError: ``p`` is neither a module nor an expression.
    """
    if dce and fuel == DEFAULT_FUEL:
        return _partial_evaluate_pass(p)
    run = Pass("PartialEvaluate", "partial_evaluate",
               lambda m: partial_evaluate_module(m, dce, fuel))
    return run(p)
