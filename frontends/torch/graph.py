"""The walk over an FX graph (and the subgraphs of its higher-order operators).

:class:`GraphConverter` converts the nodes of a graph in order with the tables of
:mod:`frontends.torch.registry`. It never stops at the first problem: a node whose target
has no converter, or whose converter raises ``Unsupported``, is recorded with its name, its
target and its source location (the user's frame of ``node.meta["stack_trace"]`` and the
innermost module of ``node.meta["nn_module_stack"]``); the nodes that depend on it are
skipped silently; :meth:`GraphConverter.raise_errors` reports every recorded node in one
``ImporterError``. Every subgraph is scanned for unsupported targets before anything is
converted, so a node inside a branch or a loop body is named even when its enclosing
operator cannot be converted.
"""

from __future__ import annotations

import re
from typing import Any

from frontends.onnx.builder import ImporterError, Unsupported, Value, call, const
from frontends.torch.registry import (
    ATEN,
    HIGHER_ORDER,
    NO_OPS,
    SymValue,
    Unavailable,
    dim_of,
    dtype_name,
    is_supported,
    target_name,
)
from frontends.torch.symbolic import same_dim
from semantics.errors import RelayError
from semantics.shapes import ANY

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


class Failed:
    """The value of a node that could not be converted (its users are skipped)."""


FAILED = Failed()


class SubgraphFailed(Unsupported):
    """A subgraph of a higher-order operator has a node that failed (and is recorded)."""


def location(node: Any) -> str:
    """Where ``node`` comes from in the user's code: ``file:line in function`` of the last
    frame of its stack trace that is a real file, and its innermost ``nn.Module``; empty
    when the graph records neither."""
    parts: list[str] = []
    frames = _FRAME.findall(node.meta.get("stack_trace") or "")
    real = [f for f in frames if not f[0].startswith("<")]
    # the user's own code rather than torch.nn's modules, when the trace has both
    real = [f for f in real if not _in_torch(f[0])] or real
    if real:
        path, line, fn = real[-1]
        parts.append(f"{path}:{line} in {fn}")
    stack = node.meta.get("nn_module_stack") or {}
    if stack:
        path, kind = list(stack.values())[-1]
        kind = getattr(kind, "__name__", None) or str(kind).rsplit(".", 1)[-1]
        if path:
            parts.append(f"module {path} ({kind})")
    return ", ".join(parts)


def _in_torch(path: str) -> bool:
    import os

    import torch

    return path.startswith(os.path.dirname(torch.__file__) + os.sep)


class GraphConverter:
    """Converts FX graphs to typed Relay values, collecting every failing node."""

    def __init__(self) -> None:
        self.errors: dict[str, str] = {}
        self.where: list[str] = []
        #: the qualified names of subgraphs (``true_graph_0``, ``body_graph_0.cond_graph_0``)
        self.scopes: dict[int, str] = {}

    # --- errors ---------------------------------------------------------------------------

    def record(self, node: Any, message: str) -> None:
        loc = location(node) or (self.where[-1] if self.where else "")
        at = f" at {loc}" if loc else ""
        scope = self.scopes.get(id(node.graph), "")
        name = f"{scope}.{node.name}" if scope else node.name
        self.errors.setdefault(str(id(node)), f"node {name} ({target_name(node.target)})"
                                              f"{at}: {message}")

    def scan_unsupported(self, gm: Any, scope: str = "") -> None:
        """Record every node of ``gm`` and of its subgraphs whose target has no converter."""
        for node in gm.graph.nodes:
            if node.op == "call_function" and not is_supported(target_name(node.target)):
                self.record(node, "no converter for this operator")
            elif node.op == "get_attr":
                sub = getattr(gm, node.target, None)
                if sub is not None and hasattr(sub, "graph"):
                    inner = f"{scope}.{node.target}" if scope else str(node.target)
                    self.scopes[id(sub.graph)] = inner
                    self.where.append(location(node))
                    self.scan_unsupported(sub, inner)
                    self.where.pop()

    def raise_errors(self) -> None:
        if self.errors:
            lines = "\n  ".join(self.errors.values())
            raise ImporterError(f"cannot import: {len(self.errors)} node(s) cannot be "
                                f"converted:\n  {lines}")

    # --- the walk -------------------------------------------------------------------------

    def run(self, gm: Any, env: dict[str, Any]) -> Any:
        """Convert the non-placeholder nodes of ``gm`` with ``env`` holding its placeholders;
        returns the output node's argument with every node replaced by its value."""
        for node in gm.graph.nodes:
            if node.op == "get_attr":
                env[node.name] = getattr(gm, node.target)
            elif node.op == "call_function":
                env[node.name] = self._node(node, env)
            elif node.op == "output":
                return _substitute(node.args[0], env)
        return None

    def subgraph(self, gm: Any, inputs: list[Any], owner: Any) -> list[Any]:
        """The outputs of subgraph ``gm`` with its placeholders bound to ``inputs``;
        ``Unsupported`` when one of its nodes failed (that node is recorded)."""
        places = [n for n in gm.graph.nodes if n.op == "placeholder"]
        if len(places) != len(inputs):
            raise Unsupported(f"subgraph {getattr(gm, '_get_name', lambda: 'graph')()} takes "
                              f"{len(places)} inputs, given {len(inputs)}")
        env = {p.name: v for p, v in zip(places, inputs)}
        self.where.append(location(owner))
        try:
            out = self.run(gm, env)
        finally:
            self.where.pop()
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        if any(_contains_failed(o) for o in outs):
            raise SubgraphFailed("a node of its subgraph cannot be converted")
        return outs

    def _node(self, node: Any, env: dict[str, Any]) -> Any:
        name = target_name(node.target)
        if not is_supported(name):
            return FAILED        # recorded by scan_unsupported
        args = _substitute(node.args, env)
        kwargs = {k: _substitute(v, env) for k, v in node.kwargs.items()
                  if k not in ("layout", "device", "pin_memory", "memory_format")}
        if _contains_failed(args) or _contains_failed(list(kwargs.values())):
            return FAILED
        try:
            if name == "operator.getitem":
                return args[0][args[1]]
            _check_available(args)
            if name in NO_OPS:
                return None
            if name in HIGHER_ORDER:
                return HIGHER_ORDER[name](self, node, *args, **kwargs)
            out = ATEN[name](*args, **kwargs)
            return _checked(node, out)
        except SubgraphFailed:
            pass                 # the failing node inside is recorded
        except Unsupported as err:
            self.record(node, str(err))
        except RelayError as err:
            self.record(node, err.message)
        except (KeyError, IndexError, ValueError, TypeError, AttributeError) as err:
            self.record(node, f"unexpected arguments ({type(err).__name__}: {err})")
        return FAILED


def _substitute(a: Any, env: dict[str, Any]) -> Any:
    import torch.fx

    if isinstance(a, torch.fx.Node):
        return env[a.name]
    if isinstance(a, (list, tuple)):
        return type(a)(_substitute(x, env) for x in a)
    return a


def _contains_failed(a: Any) -> bool:
    if a is FAILED:
        return True
    if isinstance(a, (list, tuple)):
        return any(_contains_failed(x) for x in a)
    return False


def _check_available(a: Any) -> None:
    if isinstance(a, Unavailable):
        raise Unsupported(f"uses the {a.what}, which is not supported")
    if isinstance(a, (list, tuple)):
        for x in a:
            _check_available(x)


def _checked(node: Any, out: Any) -> Any:
    """``out`` checked against PyTorch's value of the node (``node.meta["val"]``): a shape
    that differs is a converter's mistake, reported at the node that made it; a dtype that
    differs (``sum`` of int32 is int64 in PyTorch) is cast to PyTorch's."""
    import torch

    meta = node.meta.get("val")
    if not isinstance(out, Value) or not isinstance(meta, torch.Tensor):
        return out
    ours = out.shape
    theirs = [dim_of(d) for d in meta.shape]
    if len(ours) != len(theirs) or not all(
            a is ANY or same_dim(a, b) for a, b in zip(ours, theirs)):
        raise Unsupported(f"the converted shape {tuple(ours)} differs from PyTorch's "
                          f"{tuple(theirs)}")
    dtype = dtype_name(meta.dtype)
    return out if out.dtype == dtype else call("cast", [out], dtype=dtype)


def value_of(v: Any, what: str) -> Value:
    """An output or operand as a Value (a symbolic integer's run-time scalar, a number as
    a constant)."""
    if isinstance(v, Value):
        return v
    if isinstance(v, SymValue):
        return v.runtime
    if isinstance(v, (bool, int, float)):
        return const(v)
    raise ImporterError(f"cannot import: {what} is not a tensor ({type(v).__name__})")
