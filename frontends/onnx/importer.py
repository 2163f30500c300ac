"""ONNX → Relay: ``from_onnx(model_or_path) -> (IRModule, params)``.

The graph is walked in its (topological) node order. Each ONNX value name maps to a
:class:`~frontends.onnx.builder.Value`; converters (one module per operator family, registered
in :data:`CONVERTERS`) turn a node into Relay calls whose types come from the registry's
relations. Graph inputs that are not initializers become the first parameters of ``@main``
(symbolic dims become shape variables named after their ``dim_param``); initializers used as
data become the following parameters, returned in ``params`` under their graph names;
initializers and ``Constant`` outputs read as static values (shapes, axes, pads) are used at
import time only.

Before converting, every node (subgraphs included) is checked against the converter table:
unknown operators and unknown attributes are reported together in one :class:`ImporterError`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from frontends.onnx.builder import RELAY_DTYPES, ImporterError, Unsupported, Value, const
from frontends.onnx.context import Context, convert_nodes, ident, node_label, onnx_dtype
from frontends.onnx.registry import CONVERTERS, Converter, OpEntry, converter  # noqa: F401 - re-exported
from semantics.expr import Expr, Function, Let, Tuple, Var
from semantics.module import IRModule
from semantics.shapes import shape_var
from semantics.types import TensorType, Type


def _value_type(vi: Any, shapes: Mapping[str, Any] | None = None) -> Type:
    """The Relay type of an ONNX ValueInfo (sequences and optionals: ``ops_seq``)."""
    t = vi.type
    if t.WhichOneof("value") != "tensor_type":
        from frontends.onnx.ops_seq import input_type
        return input_type(t, vi.name, shapes)
    tt = t.tensor_type
    if not tt.HasField("shape"):
        raise Unsupported(f"input {vi.name!r} has no shape (an unknown rank): give it one")
    dims: list[Any] = []
    for i, d in enumerate(tt.shape.dim):
        if d.HasField("dim_value"):
            dims.append(int(d.dim_value))
        else:
            label = d.dim_param or f"{ident(vi.name)}_d{i}"
            dims.append(shape_var(ident(label)))
    return TensorType(tuple(dims), onnx_dtype(tt.elem_type))


def _check_supported(graph: Any, problems: list[str], where: str = "") -> None:
    """Collect every unknown operator or attribute in ``graph`` and its subgraphs."""
    for i, node in enumerate(graph.node):
        label = where + node_label(node, i)
        if node.domain not in ("", "ai.onnx"):
            problems.append(f"{label}: operator domain {node.domain!r} is not supported")
            continue
        entry = CONVERTERS.get(node.op_type)
        if entry is None:
            problems.append(f"{label}: operator {node.op_type} is not supported")
            continue
        extra = sorted(a.name for a in node.attribute if a.name not in entry.attrs)
        if extra:
            problems.append(f"{label}: attribute(s) {', '.join(extra)} not supported")
        for a in node.attribute:
            if a.g is not None and a.HasField("g"):
                _check_supported(a.g, problems, f"{where}{node.op_type} node {i} "
                                                f"{a.name}: ")


def _initializer_array(init: Any, base_dir: str | None) -> np.ndarray:
    """An initializer's array, its stored size checked against its dims first.

    Raises:
        ImporterError: ``raw_data`` of another size than the dims say, external data that is
            missing (or outside the model's directory, or of the wrong size), or an element
            type numpy cannot hold.
    """
    from onnx import TensorProto, helper, numpy_helper

    name = init.name
    dims = [int(d) for d in init.dims]
    if any(d < 0 for d in dims):
        raise ImporterError(f"cannot import: initializer {name!r} has negative dims {dims}")
    count = int(np.prod(dims, dtype=np.int64)) if dims else 1
    try:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(init.data_type))
    except Exception:  # noqa: BLE001 - onnx raises KeyError/ValueError for unknown types
        raise ImporterError(f"cannot import: initializer {name!r}: unsupported element type "
                            f"{init.data_type}") from None
    if init.data_location == TensorProto.EXTERNAL:
        info = {e.key: e.value for e in init.external_data}
        if base_dir is None:
            raise ImporterError(f"cannot import: initializer {name!r} keeps its data in an "
                                f"external file ({info.get('location')!r}): import from the "
                                f"model's path, not from bytes or a ModelProto")
        location = info.get("location", "")
        path = os.path.normpath(os.path.join(base_dir, location))
        if not location or os.path.isabs(location) or not path.startswith(
                os.path.normpath(base_dir) + os.sep):
            raise ImporterError(f"cannot import: initializer {name!r}: external data location "
                                f"{location!r} is not a file beside the model")
        try:
            offset = int(info.get("offset", 0))
            length = int(info.get("length", count * dtype.itemsize))
            with open(path, "rb") as f:
                f.seek(offset)
                raw = f.read(length)
        except (OSError, ValueError) as exc:
            raise ImporterError(f"cannot import: initializer {name!r}: external data "
                                f"{location!r}: {exc}") from None
        if len(raw) != count * dtype.itemsize or length != len(raw):
            raise ImporterError(f"cannot import: initializer {name!r}: external data "
                                f"{location!r} has {len(raw)} bytes, its dims {dims} need "
                                f"{count * dtype.itemsize}")
        return np.frombuffer(raw, dtype.newbyteorder("<")).astype(dtype).reshape(dims)
    if init.HasField("raw_data") and dtype.kind != "U" and dtype != np.object_:
        if len(init.raw_data) != count * dtype.itemsize:
            raise ImporterError(f"cannot import: initializer {name!r}: raw_data has "
                                f"{len(init.raw_data)} bytes, its dims {dims} need "
                                f"{count * dtype.itemsize}")
    try:
        return np.asarray(numpy_helper.to_array(init))
    except Exception as exc:  # noqa: BLE001 - a malformed tensor proto
        raise ImporterError(f"cannot import: initializer {name!r}: {type(exc).__name__}: "
                            f"{exc}") from None


def _load_model(model_or_path: Any) -> tuple[Any, str | None]:
    """The ``onnx.ModelProto`` of ``from_onnx``'s argument (a model, a path or bytes) and the
    folder external data is read from (``None`` unless a path), checked to be a non-empty
    ONNX model: anything else is an :class:`ImporterError`, never a protobuf traceback."""
    import onnx

    try:
        if isinstance(model_or_path, (str, os.PathLike)):
            model = onnx.load(os.fspath(model_or_path), load_external_data=False)
            base_dir = os.path.dirname(os.fspath(model_or_path))
        elif isinstance(model_or_path, (bytes, bytearray)):
            model = onnx.load_from_string(bytes(model_or_path))
            base_dir = None
        elif isinstance(model_or_path, onnx.ModelProto):
            model = model_or_path
            base_dir = None
        else:
            raise ImporterError(f"cannot import: expected an onnx.ModelProto, a path or bytes, "
                                f"not {type(model_or_path).__name__}")
    except (OSError, ImporterError):
        raise
    except Exception as err:  # noqa: BLE001 - protobuf raises its own DecodeError
        raise ImporterError(f"cannot import: not an ONNX model ({type(err).__name__}: {err})") \
            from None
    if not model.graph.node and not model.graph.output:
        raise ImporterError("cannot import: an empty model (no graph: is the file empty or not "
                            "an ONNX model?)")
    return model, base_dir


def _bind_inputs(ctx: Context, graph: Any, inits: dict[str, np.ndarray],
                 const_inputs: dict[str, Any], shapes: Mapping[str, Any] | None = None
                 ) -> list[Var]:
    """Bind the graph inputs that are not initializers: the given constants, else new
    parameters of ``@main`` (returned) whose symbolic dims ``ctx`` notes."""
    data_vars: list[Var] = []
    for vi in graph.input:
        if vi.name in inits:
            continue
        if vi.name in const_inputs:
            try:
                ctx.env[vi.name] = const(np.asarray(const_inputs[vi.name]))
            except Unsupported as err:
                raise ImporterError(f"cannot import: input {vi.name!r}: {err}") from None
            continue
        try:
            ty = _value_type(vi, shapes)
        except Unsupported as err:
            raise ImporterError(f"cannot import: {err}") from None
        var = Var(ident(vi.name), ty)
        data_vars.append(var)
        ctx.env[vi.name] = Value(ty, var)
        ctx.note_dims(ctx.env[vi.name])
    return data_vars


def from_onnx(model_or_path: Any, *, const_inputs: Mapping[str, np.ndarray] | None = None,
              freeze_params: bool = False, shapes: Mapping[str, Any] | None = None,
              ) -> tuple[IRModule, dict[str, np.ndarray]]:
    """Import an ONNX model.

    Args:
        model_or_path: an ``onnx.ModelProto``, a path to a ``.onnx`` file or its bytes.
        const_inputs: graph inputs to treat as known constants (their values), e.g. the
            ``shape`` input of a ``Reshape`` that Relay needs statically.
        freeze_params: embed initializers as constants instead of parameters.
        shapes: for sequence and optional inputs, the shape of their elements where the
            model does not declare it (``None`` or -1 for a dimension that varies).

    Returns:
        ``(mod, params)``: ``mod["main"]`` takes the data inputs (graph inputs that are not
        initializers, in graph order) then the weights named in ``params`` (initializers used
        as data, named as in the graph). One graph output is returned as is; several as a
        tuple.

    Raises:
        ImporterError: (a ``RelayError``) naming every unsupported node or attribute, or the
            first node whose conversion fails (e.g. a value Relay needs statically is dynamic).
    """

    from frontends.onnx import (  # noqa: F401 - the families register their converters
        control,
        ops_extra,
        ops_gather,
        ops_math,
        ops_nn,
        ops_pool,
        ops_quant,
        ops_resize,
        ops_rnn,
        ops_scatter,
        ops_seq,
        ops_signal,
        ops_tensor,
    )

    model, base_dir = _load_model(model_or_path)
    graph = model.graph
    opset = 1
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            opset = imp.version
    problems: list[str] = []
    _check_supported(graph, problems)
    if problems:
        raise ImporterError(f"cannot import: {len(problems)} unsupported node(s):\n  "
                            + "\n  ".join(problems))
    inits = {i.name: _initializer_array(i, base_dir) for i in graph.initializer}
    const_inputs = dict(const_inputs or {})
    from frontends.onnx.seq_types import is_complete, unions_session
    with unions_session() as unions:
        ctx = Context(opset, bindings=[])
        data_vars = _bind_inputs(ctx, graph, inits, const_inputs, shapes)
        unions.undeclared.update(id(v) for v in data_vars if v.type_annotation is not None
                                 and not is_complete(v.type_annotation))
        main, params = _convert_main(ctx, graph, inits, data_vars, freeze_params)
        from frontends.onnx.ops_seq import module_definitions
        functions, types = module_definitions(main, unions)
    functions["main"] = main
    return IRModule(functions, types), params


def _convert_main(ctx: Context, graph: Any, inits: dict[str, np.ndarray], data_vars: list[Var],
                  freeze_params: bool) -> tuple[Function, dict[str, np.ndarray]]:
    """``@main``: the graph's nodes converted, the data inputs then the weights it uses."""
    weight_vars: dict[str, Var] = {}
    for name, arr in inits.items():
        if arr.dtype.name not in _RELAY_DTYPES:
            raise ImporterError(f"cannot import: initializer {name!r}: unsupported element type "
                                f"{arr.dtype.name}")
        if freeze_params:
            ctx.env[name] = const(arr)
            continue
        var = Var(ident(name), TensorType(tuple(int(d) for d in arr.shape), arr.dtype.name))
        weight_vars[name] = var
        ctx.env[name] = _ParamValue(var.type_annotation, var, arr)  # type: ignore[arg-type]
    convert_nodes(ctx, graph.node)
    try:
        outs = [ctx.lookup(o.name) for o in graph.output]
    except Unsupported as err:
        raise ImporterError(f"cannot import: {err}") from None
    body = outs[0].expr if len(outs) == 1 else Tuple(tuple(o.expr for o in outs))
    body = _let_chain(ctx.bindings or [], body)
    used = [n for n, v in weight_vars.items() if ctx.env[n].materialized]  # type: ignore[attr-defined]
    params = {ident(n): inits[n] for n in used}
    main = Function(tuple(data_vars) + tuple(weight_vars[n] for n in used), body)
    return main, params


def _let_chain(bindings: list[tuple[Var, Expr]], body: Expr) -> Expr:
    """``let``s of the bindings ``body`` uses (directly or through other bindings), in node
    order; the others (shape arithmetic only read at import time) are dropped."""
    from semantics.analysis import free_vars

    live = {id(v) for v in free_vars(body)}
    kept: list[tuple[Var, Expr]] = []
    for var, value in reversed(bindings):
        if id(var) in live:
            kept.append((var, value))
            live.update(id(v) for v in free_vars(value))
    for var, value in kept:
        body = Let(var, value, body)
    return body


_RELAY_DTYPES = RELAY_DTYPES


class _ParamValue(Value):
    """An initializer: known at import time, a parameter of ``@main`` once used as data."""

    def __init__(self, ty: Type, var: Var, arr: np.ndarray):
        super().__init__(ty, None, arr, True)
        self.var = var
        self.materialized = False

    @property
    def expr(self) -> Any:
        self.materialized = True
        return self.var

