"""PyTorch → Relay: ``from_exported_program(ep) -> (IRModule, params)``.

The program is first lowered to the core ATen operator set (``ep.run_decompositions()``; an
``nn.LSTM`` becomes its unrolled cell arithmetic), then its FX graph is walked in order:
user inputs become the first parameters of ``@main``, parameters, buffers and lifted constant
tensors the following ones (named after their fully qualified names, dots and other
non-identifier characters replaced by ``_``) and are returned in ``params``. Each ATen call is
converted by a function in :data:`ATEN` with the typed builder of ``frontends.onnx.builder``.
Operators missing from the table are reported together in one ``ImporterError``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from frontends.onnx.builder import (
    ImporterError,
    Unsupported,
    Value,
    call,
    call_tuple,
    const,
    project,
)
from frontends.onnx.ops_nn import matmul
from semantics.expr import Function, Tuple, Var
from semantics.module import IRModule
from semantics.shapes import shape_var
from semantics.types import TensorType

Arg = Any
AtenFn = Callable[..., "Value | list[Value]"]
ATEN: dict[str, AtenFn] = {}


_F = TypeVar("_F", bound=Callable[..., Any])


def aten(*names: str) -> Callable[[_F], _F]:
    """Register a converter for the ATen overloads ``names`` (e.g. ``"aten.relu.default"``)."""
    def deco(fn: _F) -> _F:
        for n in names:
            ATEN[n] = fn
        return fn
    return deco


def _ident(name: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return out if out and not out[0].isdigit() else "p_" + out


def _dtype(torch_dtype: Any) -> str:
    import torch
    name = str(torch_dtype).replace("torch.", "")
    if name not in ("bool", "int8", "int16", "int32", "int64", "uint8", "float16", "float32",
                    "float64"):
        raise Unsupported(f"unsupported dtype {torch_dtype}")
    del torch
    return name


def _like(x: Value, v: Any) -> Value:
    """``v`` (a Python number or a Value) as a Value of ``x``'s dtype when it is a number."""
    if isinstance(v, Value):
        return v
    return const(np.asarray(v, dtype=x.dtype))


def _ints(v: Any) -> tuple[int, ...]:
    if isinstance(v, (list, tuple)):
        return tuple(int(x) for x in v)
    return (int(v),)


def _pair(v: Any) -> tuple[int, int]:
    t = _ints(v)
    return (t[0], t[0]) if len(t) == 1 else (t[0], t[1])


# --- elementwise ---------------------------------------------------------------------------

_UNARY = {"aten.relu.default": "nn.relu", "aten.sigmoid.default": "sigmoid",
          "aten.tanh.default": "tanh", "aten.exp.default": "exp", "aten.log.default": "log",
          "aten.sqrt.default": "sqrt", "aten.rsqrt.default": "rsqrt",
          "aten.neg.default": "negative",
          "aten.abs.default": "abs", "aten.erf.default": "erf", "aten.sin.default": "sin",
          "aten.cos.default": "cos", "aten.floor.default": "floor", "aten.ceil.default": "ceil"}
for _n, _r in _UNARY.items():
    ATEN[_n] = (lambda r: lambda x: call(r, [x]))(_r)


@aten("aten.add.Tensor", "aten.add.Scalar")
def _add(a: Value, b: Any, alpha: Any = 1) -> Value:
    b = _like(a, b)
    if alpha != 1:
        b = call("multiply", [b, _like(b, alpha)])
    return call("add", [a, b])


@aten("aten.sub.Tensor", "aten.sub.Scalar")
def _sub(a: Value, b: Any, alpha: Any = 1) -> Value:
    b = _like(a, b)
    if alpha != 1:
        b = call("multiply", [b, _like(b, alpha)])
    return call("subtract", [a, b])


@aten("aten.rsub.Scalar")
def _rsub(a: Value, b: Any, alpha: Any = 1) -> Value:
    return _sub(_like(a, b), a, alpha)


@aten("aten.mul.Tensor", "aten.mul.Scalar")
def _mul(a: Value, b: Any) -> Value:
    return call("multiply", [a, _like(a, b)])


@aten("aten.div.Tensor", "aten.div.Scalar")
def _div(a: Value, b: Any) -> Value:
    """True division, as PyTorch's ``/``: integer (and bool) operands give the default float
    dtype (float32), never a truncated integer."""
    if not a.dtype.startswith("float"):
        a = call("cast", [a], dtype="float32")
        if isinstance(b, Value) and not b.dtype.startswith("float"):
            b = call("cast", [b], dtype="float32")
    return call("divide", [a, _like(a, b)])


@aten("aten.hardtanh.default")
def _hardtanh(x: Value, lo: float = -1.0, hi: float = 1.0) -> Value:
    return call("clip", [x], a_min=float(lo), a_max=float(hi))


@aten("aten.clamp.default")
def _clamp(x: Value, lo: Any = None, hi: Any = None) -> Value:
    if lo is not None:
        x = call("maximum", [x, _like(x, lo)])
    if hi is not None:
        x = call("minimum", [x, _like(x, hi)])
    return x


@aten("aten._softmax.default", "aten.softmax.int")
def _softmax(x: Value, dim: int, *rest: Any) -> Value:
    return call("nn.softmax", [x], axis=int(dim))


@aten("aten._log_softmax.default", "aten.log_softmax.int")
def _log_softmax(x: Value, dim: int, *rest: Any) -> Value:
    return call("nn.log_softmax", [x], axis=int(dim))


# --- shapes --------------------------------------------------------------------------------

@aten("aten.view.default", "aten.reshape.default", "aten._unsafe_view.default")
def _view(x: Value, shape: Any) -> Value:
    return call("reshape", [x], newshape=_ints(shape))


@aten("aten.permute.default")
def _permute(x: Value, dims: Any) -> Value:
    return call("transpose", [x], axes=tuple(d % x.ndim for d in _ints(dims)))


@aten("aten.t.default")
def _t(x: Value) -> Value:
    return call("transpose", [x], axes=(1, 0)) if x.ndim == 2 else x


@aten("aten.transpose.int")
def _transpose(x: Value, a: int, b: int) -> Value:
    perm = list(range(x.ndim))
    perm[a % x.ndim], perm[b % x.ndim] = perm[b % x.ndim], perm[a % x.ndim]
    return call("transpose", [x], axes=tuple(perm))


@aten("aten.flatten.using_ints")
def _flatten(x: Value, start: int = 0, end: int = -1) -> Value:
    shape = x.static_shape()
    s, e = start % x.ndim, end % x.ndim
    new = shape[:s] + (int(np.prod(shape[s:e + 1])),) + shape[e + 1:]
    return call("reshape", [x], newshape=new)


@aten("aten.squeeze.dims", "aten.squeeze.dim", "aten.squeeze.default")
def _squeeze(x: Value, dims: Any = None) -> Value:
    axes = [d % x.ndim for d in _ints(dims)] if dims is not None else \
        [i for i, d in enumerate(x.shape) if d == 1]
    axes = [a for a in axes if x.shape[a] == 1]
    return call("squeeze", [x], axis=tuple(axes)) if axes else x


@aten("aten.unsqueeze.default")
def _unsqueeze(x: Value, dim: int) -> Value:
    return call("expand_dims", [x], axis=dim % (x.ndim + 1))


@aten("aten.slice.Tensor")
def _slice(x: Value, dim: int = 0, start: Any = None, end: Any = None, step: int = 1) -> Value:
    shape = x.static_shape()
    d = dim % x.ndim
    n = shape[d]
    s = 0 if start is None else int(start)
    e = n if end is None else int(end)
    s = min(max(s + n if s < 0 else s, 0), n)
    e = min(max(e + n if e < 0 else e, 0), n)
    e = max(e, s)
    if (s, e, step) == (0, n, 1):
        return x
    begin, stop, strides = [0] * x.ndim, list(shape), [1] * x.ndim
    begin[d], stop[d], strides[d] = s, e, int(step)
    return call("strided_slice", [x], begin=tuple(begin), end=tuple(stop), strides=tuple(strides))


@aten("aten.select.int")
def _select(x: Value, dim: int, index: int) -> Value:
    d = dim % x.ndim
    i = int(index) % x.static_shape()[d]
    return call("squeeze", [_slice(x, d, i, i + 1)], axis=(d,))


@aten("aten.split_with_sizes.default", "aten.split.Tensor")
def _split(x: Value, sizes: Any, dim: int = 0) -> list[Value]:
    d = dim % x.ndim
    n = x.static_shape()[d]
    if isinstance(sizes, int):
        sizes = [min(sizes, n - i) for i in range(0, n, sizes)]
    idx = tuple(int(i) for i in np.cumsum(sizes)[:-1])
    t = call("split", [x], indices_or_sections=idx, axis=d)
    return [project(t, i) for i in range(len(sizes))]


@aten("aten.cat.default")
def _cat(xs: list[Value], dim: int = 0) -> Value:
    return call_tuple("concatenate", xs, axis=int(dim))


@aten("aten.expand.default")
def _expand(x: Value, shape: Any) -> Value:
    target = list(_ints(shape))
    lead = len(target) - x.ndim
    for i, d in enumerate(x.shape):
        if target[lead + i] == -1:
            target[lead + i] = int(d)
    return call("broadcast_to", [x], shape=tuple(target))


@aten("aten.clone.default", "aten.alias.default", "aten.contiguous.default",
      "aten.detach.default", "aten.dropout.default", "aten.lift_fresh_copy.default")
def _identity(x: Value, *rest: Any, **kw: Any) -> Value:
    return x


@aten("aten._to_copy.default")
def _to_copy(x: Value, dtype: Any = None, **kw: Any) -> Value:
    return call("cast", [x], dtype=_dtype(dtype)) if dtype is not None else x


@aten("aten.full.default")
def _full(size: Any, value: Any, dtype: Any = None, **kw: Any) -> Value:
    dt = _dtype(dtype) if dtype is not None else "float32"
    return const(np.full(_ints(size), value, dtype=dt))


@aten("aten.zeros.default")
def _zeros(size: Any, dtype: Any = None, **kw: Any) -> Value:
    return _full(size, 0, dtype)


# --- nn ------------------------------------------------------------------------------------

@aten("aten.convolution.default")
def _convolution(x: Value, w: Value, b: Value | None, stride: Any, padding: Any,
                 dilation: Any, transposed: bool, output_padding: Any, groups: int) -> Value:
    if transposed:
        raise Unsupported("transposed convolution is not supported")
    if x.ndim != 4:
        raise Unsupported("only 2-D convolution is supported")
    ph, pw = _pair(padding)
    ws = w.static_shape()
    y = call("nn.conv2d", [x, w], strides=_pair(stride), padding=(ph, pw, ph, pw),
             dilation=_pair(dilation), groups=int(groups), channels=ws[0],
             kernel_size=tuple(ws[2:]))
    return call("nn.bias_add", [y, b], axis=1) if b is not None else y


@aten("aten.conv2d.default")
def _conv2d(x: Value, w: Value, b: Value | None = None, stride: Any = 1, padding: Any = 0,
            dilation: Any = 1, groups: int = 1) -> Value:
    return _convolution(x, w, b, stride, padding, dilation, False, 0, groups)


@aten("aten._native_batch_norm_legit_no_training.default")
def _bn_no_training(x: Value, w: Value | None, b: Value | None, mean: Value, var: Value,
                    momentum: float, eps: float) -> list[Value]:
    c = x.static_shape()[1]
    ones = const(np.ones(c, x.dtype))
    zeros = const(np.zeros(c, x.dtype))
    t = call("nn.batch_norm", [x, w or ones, b or zeros, mean, var], axis=1, epsilon=float(eps))
    return [project(t, 0), mean, var]


@aten("aten.batch_norm.default")
def _batch_norm(x: Value, w: Value | None, b: Value | None, mean: Value, var: Value,
                training: bool, momentum: float, eps: float, *rest: Any) -> Value:
    if training:
        raise Unsupported("training-mode batch_norm is not supported")
    return _bn_no_training(x, w, b, mean, var, momentum, eps)[0]


@aten("aten.max_pool2d_with_indices.default", "aten.max_pool2d.default")
def _max_pool(x: Value, kernel: Any, stride: Any = (), padding: Any = 0, dilation: Any = 1,
              ceil_mode: bool = False) -> list[Value]:
    k = _pair(kernel)
    s = _pair(stride) if stride not in ((), [], None) else k
    ph, pw = _pair(padding)
    y = call("nn.max_pool2d", [x], pool_size=k, strides=s, padding=(ph, pw, ph, pw),
             dilation=_pair(dilation), ceil_mode=bool(ceil_mode))
    return [y, _Unavailable("max-pool indices")]  # type: ignore[list-item]


@aten("aten.avg_pool2d.default")
def _avg_pool(x: Value, kernel: Any, stride: Any = (), padding: Any = 0,
              ceil_mode: bool = False, count_include_pad: bool = True,
              divisor_override: Any = None) -> Value:
    if divisor_override is not None:
        raise Unsupported("avg_pool2d divisor_override is not supported")
    k = _pair(kernel)
    s = _pair(stride) if stride not in ((), [], None) else k
    ph, pw = _pair(padding)
    return call("nn.avg_pool2d", [x], pool_size=k, strides=s, padding=(ph, pw, ph, pw),
                ceil_mode=bool(ceil_mode), count_include_pad=bool(count_include_pad))


@aten("aten.adaptive_avg_pool2d.default", "aten._adaptive_avg_pool2d.default")
def _adaptive_avg(x: Value, size: Any) -> Value:
    if _ints(size) not in ((1, 1), (1,)):
        raise Unsupported("adaptive_avg_pool2d only to 1x1")
    return call("nn.global_avg_pool2d", [x])


@aten("aten.mean.dim")
def _mean(x: Value, dims: Any, keepdim: bool = False, dtype: Any = None) -> Value:
    return call("mean", [x], axis=tuple(d % x.ndim for d in _ints(dims)), keepdims=bool(keepdim))


@aten("aten.sum.dim_IntList")
def _sum(x: Value, dims: Any, keepdim: bool = False, dtype: Any = None) -> Value:
    return call("sum", [x], axis=tuple(d % x.ndim for d in _ints(dims)), keepdims=bool(keepdim))


@aten("aten.addmm.default")
def _addmm(bias: Value, a: Value, b: Value, beta: Any = 1, alpha: Any = 1) -> Value:
    y = matmul(a, b)
    if alpha != 1:
        y = call("multiply", [y, _like(y, alpha)])
    if beta != 1:
        bias = call("multiply", [bias, _like(bias, beta)])
    return call("add", [y, bias])


@aten("aten.mm.default", "aten.bmm.default", "aten.matmul.default")
def _mm(a: Value, b: Value) -> Value:
    return matmul(a, b)


@aten("aten.linear.default")
def _linear(x: Value, w: Value, b: Value | None = None) -> Value:
    y = matmul(x, call("transpose", [w], axes=(1, 0)))
    return call("add", [y, b]) if b is not None else y


class _Unavailable:
    """A multi-output node's output the importer does not produce (e.g. max-pool indices)."""

    def __init__(self, what: str):
        self.what = what


# --- the walk ------------------------------------------------------------------------------

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
        ImporterError: naming every unsupported ATen operator, or the first node whose
            conversion fails.
    """
    from torch.export.graph_signature import InputKind, OutputKind

    ep, graph = _checked_program(ep, decompose)
    specs = {s.arg.name: s for s in ep.graph_signature.input_specs if hasattr(s.arg, "name")}
    env: dict[str, Any] = {}
    data_vars: list[Var] = []
    weight_vars: list[Var] = []
    params: dict[str, np.ndarray] = {}
    for node in graph.nodes:
        if node.op != "placeholder":
            continue
        spec = specs.get(node.name)
        meta = node.meta.get("val")
        if spec is not None and spec.kind != InputKind.USER_INPUT:
            target = spec.target
            tensor = ep.state_dict[target] if target in ep.state_dict else ep.constants[target]
            arr = tensor.detach().cpu().numpy()
            name = _ident(target)
            var = Var(name, TensorType(tuple(int(d) for d in arr.shape), arr.dtype.name))
            weight_vars.append(var)
            params[name] = arr
            env[node.name] = Value(var.type_annotation, var)  # type: ignore[arg-type]
            continue
        var = _data_input(node.name, meta)
        data_vars.append(var)
        env[node.name] = Value(var.type_annotation, var)  # type: ignore[arg-type]
    outputs: list[Value] = []
    for node in graph.nodes:
        if node.op == "call_function":
            try:
                env[node.name] = _convert(node, env)
            except Unsupported as err:
                raise ImporterError(f"cannot import: node {node.name} ({node.target}): {err}") \
                    from None
            except (KeyError, IndexError, ValueError, TypeError) as err:
                raise ImporterError(f"cannot import: node {node.name} ({node.target}): "
                                    f"unexpected arguments ({type(err).__name__}: {err})") \
                    from None
        elif node.op == "output":
            outs = node.args[0]
            outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
            kinds = [s.kind for s in ep.graph_signature.output_specs]
            if len(kinds) == len(outs):
                # the values of in-place updates (x.add_(1)) come first: not results
                outs = [o for o, k in zip(outs, kinds) if k == OutputKind.USER_OUTPUT]
            for o in outs:
                v = env.get(o.name) if hasattr(o, "name") else None
                if not isinstance(v, Value):
                    raise ImporterError(f"cannot import: output {o} is not a tensor")
                outputs.append(v)
    if not outputs:
        raise ImporterError("cannot import: the model returns no tensor")
    body = outputs[0].expr if len(outputs) == 1 else Tuple(tuple(o.expr for o in outputs))
    main = Function(tuple(data_vars) + tuple(weight_vars), body)
    return IRModule({"main": main}), params


def _checked_program(ep: Any, decompose: bool) -> tuple[Any, Any]:
    """``from_exported_program``'s argument checked to be an ``ExportedProgram`` (decomposed
    to core ATen when asked) whose every ATen operator has a converter, and its FX graph;
    anything else is an :class:`ImporterError` naming every unsupported operator."""
    import torch

    if not isinstance(ep, torch.export.ExportedProgram):
        hint = (": export the module first, torch.export.export(model, example_args)"
                if isinstance(ep, torch.nn.Module) else "")
        raise ImporterError(f"cannot import: expected a torch.export.ExportedProgram, got "
                            f"{type(ep).__name__}{hint}")
    if decompose:
        ep = ep.run_decompositions()
    graph = ep.graph_module.graph
    missing = sorted({str(n.target) for n in graph.nodes
                      if n.op == "call_function" and str(n.target) not in ATEN
                      and n.target is not _getitem()})
    if missing:
        raise ImporterError(f"cannot import: {len(missing)} unsupported ATen operator(s): "
                            + ", ".join(missing))
    return ep, graph


def _data_input(name: str, meta: Any) -> Var:
    """The Relay parameter of the user input ``name`` from its fake tensor ``meta``: dims the
    export marked dynamic (``SymInt``) become shape variables."""
    import torch

    if not isinstance(meta, torch.Tensor):
        raise ImporterError(f"cannot import: input {name} is not a tensor")
    dims: list[Any] = []
    for d in meta.shape:
        if isinstance(d, torch.SymInt):
            dims.append(shape_var(_ident(str(d))))
        else:
            dims.append(int(d))
    return Var(_ident(name), TensorType(tuple(dims), _dtype(meta.dtype)))


def _getitem() -> Any:
    import operator
    return operator.getitem


def _convert(node: Any, env: dict[str, Any]) -> Any:
    import torch
    import torch.fx

    def arg(a: Any) -> Any:
        if isinstance(a, torch.SymInt):
            raise Unsupported(f"the symbolic size {a} is used as a static attribute")
        if isinstance(a, torch.fx.Node):
            v = env[a.name]
            if isinstance(v, _Unavailable):
                raise Unsupported(f"uses the {v.what}, which is not supported")
            return v
        if isinstance(a, (list, tuple)):
            return type(a)(arg(x) for x in a)
        return a

    if node.target is _getitem():
        seq = env[node.args[0].name]
        return seq[node.args[1]]
    args = [arg(a) for a in node.args]
    kwargs = {k: arg(v) for k, v in node.kwargs.items()
              if k not in ("layout", "device", "pin_memory", "memory_format")}
    return ATEN[str(node.target)](*args, **kwargs)

