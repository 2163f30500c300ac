"""The big-step interpreter, the project's oracle (docs/architecture.md#api, RULES.md "Evaluation").

``evaluate(p, *args, ...)`` runs a module's entry function, an expression or
program text; results are numpy arrays, tuples, :class:`ConstructorValue`,
:class:`Closure` and :class:`RefValue`. ``register_grad_expander`` is the
hook through which the ``ad`` package gives ``grad(e)`` its meaning; ``grad_expander``
returns the registered one (loading the ``relay.grad_expanders`` plugins if none is).
"""

from __future__ import annotations

from interpreter.entry import evaluate, evaluate_recorded
from interpreter.grad_hook import grad_expander, register_grad_expander
from interpreter.values import Closure, ConstructorValue, RefValue

__all__ = ["Closure", "ConstructorValue", "RefValue", "evaluate", "evaluate_recorded",
           "grad_expander", "register_grad_expander"]
