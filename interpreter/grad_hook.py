"""The hook that gives ``grad(e)`` its meaning (Semantics-Grad), and the plugins that fill it.

``grad(e)`` is a macro: the interpreter (and the VM) evaluate the expression that the
registered *expander* returns for the node. The interpreter sits below ``ad``
(docs/architecture.md#layers), so it never imports it: ``ad.register`` installs the
reverse-mode expander with :func:`register_grad_expander`, and when no expander is
registered, :func:`grad_expander` first runs the installed plugins of the entry-point group
``relay.grad_expanders`` (pyproject.toml declares ``ad = "ad:register"``).
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable

from semantics.expr import Expr, Grad
from semantics.module import IRModule

__all__ = ["GRAD_PLUGINS", "GradExpander", "grad_expander", "register_grad_expander"]

GradExpander = Callable[[Grad, IRModule, tuple[Expr, ...]], Expr]
_GRAD_EXPANDER: list[GradExpander] = []


def register_grad_expander(fn: GradExpander | None) -> GradExpander | None:
    """Install the expansion of the ``grad(e)`` macro (Semantics-Grad).

    Args:
        fn: called as ``fn(grad_node, module, roots)``; returns the expression that
            ``grad_node`` stands for (evaluated in ``grad_node``'s environment). ``roots``
            are the program's code outside the module's globals (the expression passed to
            ``evaluate``), where a ``let``-bound function that ``grad`` names may be defined.
            The ``ad`` package registers its reverse-mode expander on import.
            ``None`` removes the current expander.
    Returns:
        The expander this one replaces (None if there was none), so a caller that installs
        one temporarily can put the previous one back.
    """
    previous = _GRAD_EXPANDER[0] if _GRAD_EXPANDER else None
    _GRAD_EXPANDER.clear()
    if fn is not None:
        _GRAD_EXPANDER.append(fn)
    return previous


GRAD_PLUGINS = "relay.grad_expanders"


def grad_expander() -> GradExpander | None:
    """The expander of ``grad(e)`` nodes, or None when there is none.

    When none is registered, the plugins of the entry-point group ``relay.grad_expanders``
    are loaded first, in name order, until one has registered an expander: each entry
    point names a function of no arguments that calls :func:`register_grad_expander`
    (the ``ad`` package declares ``ad:register``). A plugin that is declared but cannot be
    imported is passed over, as if it were not installed.
    """
    if not _GRAD_EXPANDER:
        plugins = importlib.metadata.entry_points(group=GRAD_PLUGINS)
        for plugin in sorted(plugins, key=lambda ep: ep.name):
            try:
                register = plugin.load()
            except ImportError:
                continue
            register()
            if _GRAD_EXPANDER:
                break
    return _GRAD_EXPANDER[0] if _GRAD_EXPANDER else None
