"""PyTorch → Relay: ``from_exported_program(ep) -> (IRModule, params)``.

The program is first lowered to the core ATen operator set (``ep.run_decompositions()``; an
``nn.LSTM`` becomes its unrolled cell arithmetic), then its FX graph is walked in order
(:class:`~frontends.torch.graph.GraphConverter`): user inputs become the first parameters of
``@main`` — a dimension exported as dynamic (``torch.export.Dim``) is the shape variable
PyTorch names it (``s0``) —, parameters, buffers and lifted constant tensors the following
ones (named after their fully qualified names, dots and other non-identifier characters
replaced by ``_``) and are returned in ``params``.

The converters live in :mod:`frontends.torch.ops_math` (element-wise, reductions, nn),
:mod:`frontends.torch.ops_shape` (shapes and data movement), :mod:`frontends.torch.symbolic`
(``sym_size`` and symbolic integer arithmetic) and :mod:`frontends.torch.control`
(``torch.cond``, ``while_loop``, ``scan``, ``map``). Every node that cannot be converted is
reported in one ``ImporterError`` with its target and source location.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import frontends.torch.control  # noqa: F401  (registers the higher-order converters)
import frontends.torch.ops_math  # noqa: F401  (registers the ATen converters)
import frontends.torch.ops_shape  # noqa: F401
from frontends.onnx.builder import ImporterError, Unsupported, Value
from frontends.torch.graph import GraphConverter, value_of
from frontends.torch.registry import dim_of, dtype_name, ident
from semantics.expr import Function, Tuple, Var
from semantics.module import IRModule
from semantics.types import TensorType


def from_exported_program(ep: Any, *, decompose: bool = True
                          ) -> tuple[IRModule, dict[str, np.ndarray]]:
    """Import a ``torch.export.ExportedProgram``.

    Args:
        ep: the exported program (its example inputs fix the static shapes; dims marked
            dynamic in the export become shape variables).
        decompose: lower to core ATen first (``ep.run_decompositions()``).

    Returns:
        ``(mod, params)``: ``mod["main"]`` takes the user inputs then the weights named in
        ``params`` (parameters, buffers and lifted constants, in the graph's order). A single
        output is returned as is, several as a tuple.

    Raises:
        ImporterError: not an exported program, or naming every node that cannot be
            converted (its target and source location).
    """
    from torch.export.graph_signature import OutputKind

    ep = _checked_program(ep, decompose)
    gm = ep.graph_module
    conv = GraphConverter()
    conv.scan_unsupported(gm)
    env, data_vars, weight_vars, params = _placeholders(ep)
    out = conv.run(gm, env)
    conv.raise_errors()
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    kinds = [s.kind for s in ep.graph_signature.output_specs]
    if len(kinds) == len(outs):
        # the values of in-place updates (x.add_(1)) come first: not results
        outs = [o for o, k in zip(outs, kinds) if k == OutputKind.USER_OUTPUT]
    outputs = [value_of(o, f"output {k}") for k, o in enumerate(outs)]
    if not outputs:
        raise ImporterError("cannot import: the model returns no tensor")
    body = outputs[0].expr if len(outputs) == 1 else Tuple(tuple(o.expr for o in outputs))
    main = Function(tuple(data_vars) + tuple(weight_vars), body)
    return IRModule({"main": main}), params


def _placeholders(ep: Any) -> tuple[dict[str, Any], list[Var], list[Var],
                                    dict[str, np.ndarray]]:
    """The parameters of ``@main`` for the graph's placeholders: the user inputs (typed from
    their fake tensors) and the weights (with their arrays)."""
    from torch.export.graph_signature import InputKind

    specs = {s.arg.name: s for s in ep.graph_signature.input_specs if hasattr(s.arg, "name")}
    env: dict[str, Any] = {}
    data_vars: list[Var] = []
    weight_vars: list[Var] = []
    params: dict[str, np.ndarray] = {}
    for node in ep.graph_module.graph.nodes:
        if node.op != "placeholder":
            continue
        spec = specs.get(node.name)
        if spec is not None and spec.kind != InputKind.USER_INPUT:
            target = spec.target
            tensor = ep.state_dict[target] if target in ep.state_dict else ep.constants[target]
            arr = tensor.detach().cpu().numpy()
            name = ident(target)
            var = Var(name, TensorType(tuple(int(d) for d in arr.shape), arr.dtype.name))
            weight_vars.append(var)
            params[name] = arr
        else:
            var = _data_input(node.name, node.meta.get("val"))
            data_vars.append(var)
        env[node.name] = Value(var.type_annotation, var)  # type: ignore[arg-type]
    return env, data_vars, weight_vars, params


def _checked_program(ep: Any, decompose: bool) -> Any:
    """``from_exported_program``'s argument checked to be an ``ExportedProgram`` (decomposed
    to core ATen when asked)."""
    import torch

    if not isinstance(ep, torch.export.ExportedProgram):
        hint = (": export the module first, torch.export.export(model, example_args)"
                if isinstance(ep, torch.nn.Module) else "")
        raise ImporterError(f"cannot import: expected a torch.export.ExportedProgram, got "
                            f"{type(ep).__name__}{hint}")
    return ep.run_decompositions() if decompose else ep


def _data_input(name: str, meta: Any) -> Var:
    """The Relay parameter of the user input ``name`` from its fake tensor ``meta``: dims the
    export marked dynamic (``SymInt``) become shape variables."""
    import torch

    if not isinstance(meta, torch.Tensor):
        raise ImporterError(f"cannot import: input {name} is not a tensor")
    try:
        dims = tuple(dim_of(d) for d in meta.shape)
        dtype = dtype_name(meta.dtype)
    except Unsupported as err:  # a dtype or size Relay cannot type
        raise ImporterError(f"cannot import: input {name}: {err}") from None
    return Var(ident(name), TensorType(dims, dtype))
