"""The conversion state of an ONNX (sub)graph and the loop that converts its nodes.

:class:`Context` maps the value names in scope to :class:`~frontends.onnx.builder.Value`s;
:func:`convert_nodes` runs each node's converter from :mod:`frontends.onnx.registry`,
collecting every failure into one :class:`ImporterError`. The family modules (``ops_*``,
``control``) use both; :mod:`frontends.onnx.importer` (the entry point, which imports the
families so that they register) builds the main graph's context. Kept apart from the
importer so that the families do not import the module that imports them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from frontends.onnx.builder import RELAY_DTYPES, ImporterError, Unsupported, Value, const
from frontends.onnx.registry import CONVERTERS
from frontends.onnx.shape_values import propagate
from semantics.errors import RelayError
from semantics.expr import Constant, Expr, Function, Var
from semantics.shapes import ANY
from semantics.types import TensorType

__all__ = ["Context", "convert_nodes", "ident", "node_attrs", "node_label", "onnx_dtype"]


def onnx_dtype(elem_type: int) -> str:
    """The Relay dtype of an ONNX tensor element type."""
    from onnx import helper
    try:
        np_dtype = helper.tensor_dtype_to_np_dtype(elem_type)
    except Exception:  # noqa: BLE001 - onnx raises KeyError/ValueError variously
        raise Unsupported(f"unsupported element type {elem_type}") from None
    name = np.dtype(np_dtype).name
    if name not in RELAY_DTYPES:
        raise Unsupported(f"unsupported element type {name}")
    return name


def ident(name: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return out if out and not out[0].isdigit() else "v_" + out


@dataclass
class Context:
    """Conversion state of one (sub)graph: value names in scope and the opset."""

    opset: int
    env: dict[str, Value] = field(default_factory=dict)
    parent: Context | None = None
    initializers: dict[str, np.ndarray] = field(default_factory=dict)
    used_params: dict[str, Var] = field(default_factory=dict)
    #: symbolic dim → a value of this scope with that dim, and the axis (see ``like_tensor``)
    dim_sources: dict[Any, tuple[Value, int]] = field(default_factory=dict)
    #: outputs of nodes that failed to convert (see ``_convert_nodes``)
    poisoned: set[str] = field(default_factory=set)
    #: the main graph's ``let`` bindings in node order (None in subgraphs, kept as trees)
    bindings: list[tuple[Var, Expr]] | None = None

    def bind(self, name: str, v: Value) -> None:
        """Bind a node output computed at run time to a ``let`` variable named after it, so
        that the imported program reads one node a line."""
        if self.bindings is None or v.const is not None or v.expr_ is None \
                or isinstance(v.expr_, (Var, Constant, Function)):
            return
        var = Var(ident(name))
        self.bindings.append((var, v.expr_))
        v.expr_ = var

    def note_dims(self, v: Value) -> None:
        """Remember ``v`` as a source of each of its symbolic dims not yet known."""
        if not isinstance(v.type, TensorType):
            return
        for axis, d in enumerate(v.type.shape):
            if not isinstance(d, int) and d is not ANY and self.dim_source(d) is None:
                self.dim_sources[d] = (v, axis)

    def dim_source(self, d: Any) -> tuple[Value, int] | None:
        """A value in scope having the symbolic dim ``d``, and its axis."""
        ctx: Context | None = self
        while ctx is not None:
            if d in ctx.dim_sources:
                return ctx.dim_sources[d]
            ctx = ctx.parent
        return None

    def lookup(self, name: str) -> Value:
        ctx: Context | None = self
        while ctx is not None:
            if name in ctx.env:
                return ctx.env[name]
            if name in ctx.poisoned:
                raise _Poisoned(name)
            ctx = ctx.parent
        raise Unsupported(f"value {name!r} is not defined")

    def root(self) -> Context:
        ctx = self
        while ctx.parent is not None:
            ctx = ctx.parent
        return ctx

    def convert_graph(self, graph: Any, inputs: list[Value]) -> list[Value]:
        """Convert a subgraph (``If`` branches, ``Loop`` bodies) whose formal inputs are bound
        to ``inputs``; returns its outputs."""
        sub = Context(self.opset, parent=self)
        for vi, v in zip(graph.input, inputs):
            sub.env[vi.name] = v
        for init in graph.initializer:
            from onnx import numpy_helper
            sub.env[init.name] = const(numpy_helper.to_array(init))
        convert_nodes(sub, graph.node)
        return [sub.lookup(o.name) for o in graph.output]


def node_attrs(node: Any) -> dict[str, Any]:
    from onnx import helper
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def node_label(node: Any, i: int) -> str:
    """How errors name a node: operator, index in its graph, name when it has one, outputs."""
    name = f" {node.name!r}" if node.name else ""
    return f"{node.op_type} node {i}{name} (outputs {list(node.output)})"


class _Poisoned(Unsupported):
    """An input of a node is the output of a node that failed (reported there)."""


def convert_nodes(ctx: Context, nodes: Any) -> None:
    """Convert ``nodes`` in order. A node that fails is recorded and its outputs poisoned
    (the nodes using them are skipped, their failure being a consequence); every failure is
    reported together in one :class:`ImporterError` at the end."""
    problems: list[str] = []
    for i, node in enumerate(nodes):
        entry = CONVERTERS[node.op_type]
        try:
            ins: list[Value | None] = [ctx.lookup(n) if n else None for n in node.input]
            attrs = node_attrs(node)
            outs = propagate(node.op_type, attrs, ins, entry.fn(ctx, node, ins, attrs))
        except _Poisoned:
            ctx.poisoned.update(n for n in node.output if n)
            continue
        except (Unsupported, ImporterError) as err:
            text = err.message if isinstance(err, ImporterError) else str(err)
            problems.append(f"{node_label(node, i)}: {text}")
            ctx.poisoned.update(n for n in node.output if n)
            continue
        except RelayError as err:
            # A type error inside a converter (shapes that do not fit the operator): the
            # node is named with the checker's message.
            problems.append(f"{node_label(node, i)}: {type(err).__name__}: {err.message}")
            ctx.poisoned.update(n for n in node.output if n)
            continue
        except (KeyError, IndexError, ValueError, TypeError, AttributeError,
                ArithmeticError) as err:
            # A node missing a required attribute or input, or with values of the wrong
            # kind: the model is malformed.
            problems.append(f"malformed {node_label(node, i)}: {type(err).__name__}: {err}")
            ctx.poisoned.update(n for n in node.output if n)
            continue
        for name, v in zip(node.output, outs):
            if name:
                ctx.bind(name, v)
                ctx.env[name] = v
    if len(problems) == 1:
        raise ImporterError(f"cannot import: {problems[0]}")
    if problems:
        raise ImporterError(f"cannot import: {len(problems)} nodes failed:\n  "
                            + "\n  ".join(problems))


