"""``calibrate(annotated, config, dataset)``: choose every simQ's scale from data.

Design note. The simQ calls of ``main`` are *sites*, numbered in post order (a
deterministic order). A site whose data is a constant weight takes its max-abs range
(power-of-two under ``weight_scale="power2"``); every other site (inputs, activations, a
weight that is not a constant) takes a range from the calibrator ``config.calibrate``:

* ``global_scale`` — the paper's overflow-aware sweep (SysML §4.2): one power-of-two range
  for every site, starting at ``config.global_scale`` and doubling until, on every dataset
  element, the *simulated* program clips at no site and no value realize computes in the
  accumulator type (conv, dense, add, bias_add, multiply) leaves ``nbit_activation`` bits
  (the integer is the simulated value divided by the scale realize gives it, which is
  exactly what the realized program computes). Each candidate costs one evaluation per
  dataset element. Without a dataset the range is ``config.global_scale`` itself (TVM's
  fixed scale).
* ``mse`` and ``kl`` — per-site ranges from the values each site receives in the *float*
  program (every simQ removed): :func:`passes.quantize.calibrators.mse_range` and
  :func:`~passes.quantize.calibrators.kl_range`. The statistics are collected in **one
  evaluation per dataset element** of a probe program whose result is the tuple of every
  site's input (TVM's stats collector), not one evaluation per layer.

Probes are built with one :class:`semantics.rewrite.ScopedMutator` walk each and run on the
oracle (:func:`interpreter.evaluate`); a probe needs every site's input to be computable
from ``main``'s parameters and the variables of ``main``'s top-level ``let`` chain (the
probe keeps that chain and returns the tuple in place of its tail: a program in A-normal
form calibrates as its dataflow form does). Sites inside nested functions, branches or
inner ``let`` s are rejected with :class:`QuantizeError`. Scales propagate through such a
``let`` variable as through its value.

Limits: the sweep guarantees no overflow on the dataset, not on other inputs; values after
a global average pool (whose scale is divided by the window) are not checked. Pure and
deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from interpreter import evaluate
from passes.quantize.annotate import weight_range
from passes.quantize.calibrators import kl_range, mse_range
from passes.quantize.config import QConfig, QuantizeError
from passes.quantize.simq import (
    WEIGHT,
    SimQ,
    dom_scale_for,
    is_simq,
    read_simq,
    round_values,
    static_shape,
    with_dom_scale,
)
from semantics.analysis import free_vars
from semantics.expr import Call, Constant, Expr, Function, Let, Op, Tuple, Var
from semantics.module import IRModule
from semantics.rewrite import ScopedMutator
from semantics.types import TensorType
from semantics.visitor import post_order

__all__ = ["calibrate", "collect_site_inputs", "operand_site", "simq_sites"]

_MAX_DOUBLINGS = 64
_ACCUMULATING = ("nn.conv2d", "nn.dense", "add", "nn.bias_add", "multiply")
# Operators that keep their argument's integers and scale (realize's [R-Forward]).
_FORWARDING = frozenset(("nn.relu", "nn.max_pool2d", "reshape", "nn.batch_flatten",
                         "transpose", "squeeze", "expand_dims", "strided_slice"))


def operand_site(expr: Expr) -> Call | None:
    """The simQ whose integers ``expr`` carries (through forwarding operators), or None."""
    while type(expr) is Call:
        if is_simq(expr):
            return expr
        op = expr.op
        if type(op) is not Op or op.name not in _FORWARDING:
            return None
        expr = expr.args[0]
    return None


def _let_values(fn: Function) -> dict[int, Expr]:
    """The values of the variables bound by ``fn``'s top-level ``let`` chain, by variable."""
    out: dict[int, Expr] = {}
    body = fn.body
    while type(body) is Let:
        out[id(body.var)] = body.value
        body = body.body
    return out


def _through(expr: Expr, lets: Mapping[int, Expr]) -> Expr:
    """``expr`` with top-level ``let`` variables replaced by their values (repeatedly)."""
    while type(expr) is Var and id(expr) in lets:
        expr = lets[id(expr)]
    return expr


def _with_tail(body: Expr, tail: Expr) -> tuple[Expr, set[int]]:
    """``body``'s top-level ``let`` chain ending in ``tail`` instead, and its variables."""
    spine = []
    while type(body) is Let:
        spine.append(body)
        body = body.body
    out = tail
    for let in reversed(spine):
        out = Let(let.var, let.value, out, span=let.span)
    return out, {id(let.var) for let in spine}


def simq_sites(fn: Function) -> list[Call]:
    """The simQ calls of ``fn`` in post order (the sites' numbering)."""
    return [node for node in post_order(fn) if is_simq(node)]  # type: ignore[misc]


def _read(site: Call) -> SimQ:
    info = read_simq(site)
    if info is None:
        raise QuantizeError("calibrate: a simulated_quantize whose dom_scale, clip_min or "
                            "clip_max is not a constant", site.span)
    return info


def _is_fixed_weight(info: SimQ) -> bool:
    return info.kind == WEIGHT and type(info.data) is Constant


class _Probe(ScopedMutator):
    """Rewrites sites (removed, or given new steps) and remembers the values to return."""

    def __init__(self, steps: Mapping[int, float] | None,
                 clips: Mapping[int, tuple[float, float]] | None = None) -> None:
        self.steps = steps
        self.clips = clips or {}
        self.inputs: dict[int, Expr] = {}
        self.results: dict[int, Expr] = {}

    def visit_call(self, new: Expr, old: Expr) -> Expr:
        assert isinstance(new, Call) and isinstance(old, Call)
        if is_simq(old):
            self.inputs[id(old)] = new.args[0]
            if self.steps is None:
                return new.args[0]
            step = self.steps.get(id(old))
            if step is None:
                return new
            return with_dom_scale(new, step, self.clips.get(id(old)))
        if type(old.op) is Op and old.op.name in _ACCUMULATING:
            self.results[id(old)] = new
        return new


def _run_probe(mod: IRModule, fn: Function, outputs: list[Expr],
               dataset: Sequence[np.ndarray]) -> list[list[np.ndarray]]:
    """Evaluate ``fn`` (a rewritten ``main``) returning ``outputs`` instead of its result,
    after its top-level ``let`` chain, on every dataset element (one run each)."""
    if not outputs:
        return [[] for _ in dataset]
    body, bound = _with_tail(fn.body, Tuple(tuple(outputs)))
    allowed = {id(p) for p in fn.params} | bound
    for out in outputs:
        if any(id(v) not in allowed for v in free_vars(out)):
            raise QuantizeError("calibrate: a simulated_quantize under an inner let, a "
                                "branch or a nested function cannot be calibrated (its "
                                "input is not computable from main's parameters and "
                                "top-level lets)", out.span)
    probe = Function(fn.params, body, None, fn.type_params, fn.attrs)
    pmod = mod.with_function("main", probe)
    rows = []
    for x in dataset:
        values = evaluate(pmod, x)
        rows.append([np.asarray(v) for v in values])
    return rows


def collect_site_inputs(mod: IRModule, dataset: Sequence[np.ndarray]
                        ) -> dict[int, list[np.ndarray]]:
    """Every site's float input (all simQs removed), by site index, one array per element.

    One evaluation of a probe program per dataset element.
    """
    fn = mod["main"]
    sites = simq_sites(fn)
    probe = _Probe(None)
    removed = probe.mutate(fn)
    assert isinstance(removed, Function)
    wanted = [i for i, s in enumerate(sites) if not _is_fixed_weight(_read(s))]
    rows = _run_probe(mod, removed, [probe.inputs[id(sites[i])] for i in wanted], dataset)
    return {i: [row[j] for row in rows] for j, i in enumerate(wanted)}


def _check_dataset(fn: Function, dataset: Any) -> list[np.ndarray]:
    if len(fn.params) != 1:
        raise QuantizeError(f"calibrate: main takes {len(fn.params)} parameters; the dataset "
                            "feeds exactly one (bind the weights through params)")
    if isinstance(dataset, np.ndarray) or not isinstance(dataset, Sequence):
        raise QuantizeError("calibrate: the dataset must be a list of arrays, each a whole "
                            "value for main's first parameter")
    if len(dataset) == 0:
        raise QuantizeError("calibrate: the dataset is empty")
    param = fn.params[0]
    ty = param.type_annotation
    shape = static_shape(ty)
    out = []
    for k, item in enumerate(dataset):
        arr = np.asarray(item)
        if isinstance(ty, TensorType):
            if shape is not None and arr.shape != shape:
                raise QuantizeError(f"calibrate: dataset element {k} has shape {arr.shape}, "
                                    f"but %{param.name_hint} takes {shape}")
            if arr.dtype.kind not in "fiu":
                raise QuantizeError(f"calibrate: dataset element {k} is not numeric "
                                    f"({arr.dtype})")
            arr = arr.astype(ty.dtype)
        out.append(arr)
    return out


def calibrate(annotated: IRModule, config: QConfig, dataset: Sequence[Any] | None
              ) -> IRModule:
    """Set the step of every simQ of ``annotated``'s ``main`` by ``config.calibrate``.

    Args:
        annotated: the output of :func:`passes.quantize.annotate`.
        config: the :class:`QConfig` (its calibrator, bits and ``global_scale``).
        dataset: a list of arrays, each a whole value for ``main``'s first parameter; None
            only with ``calibrate="global_scale"`` (the fixed scale).
    Returns:
        The module with every simQ's ``dom_scale`` set.
    Raises:
        QuantizeError: a bad dataset, a missing dataset for ``mse``/``kl``, a site that
            cannot be calibrated, or a sweep that finds no scale.
    """
    if not isinstance(config, QConfig):
        raise QuantizeError(f"calibrate: expected a QConfig, got {type(config).__name__}")
    if not isinstance(annotated, IRModule) or "main" not in annotated.functions:
        raise QuantizeError("calibrate: expected an IRModule with a @main")
    fn = annotated["main"]
    sites = simq_sites(fn)
    infos = [_read(s) for s in sites]
    steps: dict[int, float] = {}
    bits = {1: config.nbit_input, 2: config.nbit_weight, 3: config.nbit_activation}
    for site, info in zip(sites, infos):
        if _is_fixed_weight(info):
            data = info.data.data  # type: ignore[attr-defined]
            steps[id(site)] = dom_scale_for(weight_range(data, config), bits[info.kind],
                                            info.sign)
    free = [(s, i) for s, i in zip(sites, infos) if not _is_fixed_weight(i)]
    if config.calibrate == "global_scale":
        if dataset is None:
            _set_global(free, steps, config.global_scale, bits)
        else:
            _sweep(annotated, fn, free, steps, bits, config, _check_dataset(fn, dataset))
    else:
        if dataset is None:
            raise QuantizeError(f"calibrate: calibrate={config.calibrate!r} needs a dataset")
        data = _check_dataset(fn, dataset)
        stats = collect_site_inputs(annotated, data)
        index = {id(s): k for k, s in enumerate(sites)}
        for site, info in free:
            values = np.concatenate([a.ravel() for a in stats[index[id(site)]]])
            b = bits[info.kind]
            if config.calibrate == "kl" and b <= 8:
                rng = kl_range(values, sign=info.sign, num_quantized_bins=2 ** b - 1)
            elif config.calibrate == "kl":
                # More levels than histogram bins: the entropy search cannot resolve them,
                # and at 9+ bits the max-abs range loses almost nothing.
                rng = float(np.max(np.abs(values))) if values.size else 1.0
            else:
                rng = mse_range(values, bits=b, sign=info.sign)
            steps[id(site)] = dom_scale_for(rng, b, info.sign)
    clips = _align_biases(fn, steps, config)
    return annotated.with_function("main", _apply(fn, steps, clips))


def _set_global(free: list[tuple[Call, SimQ]], steps: dict[int, float], scale: float,
                bits: Mapping[int, int]) -> None:
    for site, info in free:
        steps[id(site)] = dom_scale_for(scale, bits[info.kind], info.sign)


def _apply(fn: Function, steps: Mapping[int, float],
           clips: Mapping[int, tuple[float, float]]) -> Function:
    probe = _Probe(steps, clips)
    out = probe.mutate(fn)
    assert isinstance(out, Function)
    return out


def _sweep(mod: IRModule, fn: Function, free: list[tuple[Call, SimQ]],
           steps: dict[int, float], bits: Mapping[int, int], config: QConfig,
           data: list[np.ndarray]) -> None:
    """The overflow-aware sweep of one power-of-two range (see the module docstring)."""
    acc_top = 2.0 ** (config.nbit_activation - 1) - 1
    scale = config.global_scale
    for _ in range(_MAX_DOUBLINGS):
        _set_global(free, steps, scale, bits)
        clips = _align_biases(fn, steps, config)
        probe = _Probe(steps, clips)
        stepped = probe.mutate(fn)
        assert isinstance(stepped, Function)
        site_outputs = [probe.inputs[id(s)] for s, _ in free]
        accs = [(probe.results[i], scale) for i, scale in _accumulator_scales(fn, steps)]
        rows = _run_probe(mod, stepped, site_outputs + [e for e, _ in accs], data)
        if not any(_overflows(row, free, steps, accs, acc_top) for row in rows):
            return
        scale *= 2.0
    raise QuantizeError(f"calibrate: no power-of-two global scale from {config.global_scale} "
                        f"up to {scale} avoids clipping and {config.bits} overflow")


def _align_biases(fn: Function, steps: dict[int, float], config: QConfig
                  ) -> dict[int, tuple[float, float]]:
    """Give a constant bias added to an accumulator the accumulator's scale (in place).

    ``add(acc, simQ(bias))`` with ``acc`` of scale ``s`` (a conv/dense result): the bias's
    simQ gets step ``s`` and the accumulator's clip range, so realize adds its integers
    without rescaling — exactly as simulated (a bias at its own 8-bit scale would be
    rounded again to ``s``, a second rounding the simulation does not have). Returns the
    new clip bounds by site.
    """
    top = float(2 ** (config.nbit_activation - 1) - 1)
    if float(np.float32(top)) > top:     # int32's top is no float32: take the one below it
        top = float(np.nextafter(np.float32(top), np.float32(0)))
    clips: dict[int, tuple[float, float]] = {}

    def align(args: tuple[Expr, ...], scale: dict[int, float]) -> None:
        for bias, other in ((args[1], args[0]), (args[0], args[1])):
            info = read_simq(bias) if type(bias) is Call and is_simq(bias) else None
            if info is not None and _is_fixed_weight(info) and not is_simq(other) \
                    and id(other) in scale and id(bias) in steps:
                steps[id(bias)] = scale[id(bias)] = scale[id(other)]
                clips[id(bias)] = (-top, top)
                return

    list(_scale_flow(fn, steps, on_add=align))
    return clips


def _accumulator_scales(fn: Function, steps: Mapping[int, float]) -> list[tuple[int, float]]:
    """The calls computed in the accumulator type once realized, with their scales."""
    return [(id(node), s) for node, s in _scale_flow(fn, steps)]


def _scale_flow(fn: Function, steps: Mapping[int, float],
                on_add: Callable[[tuple[Expr, ...], dict[int, float]], None] | None = None
                ) -> Iterator[tuple[Call, float]]:
    """Propagate scales through ``fn`` as realize assigns them, yielding each call computed in
    the accumulator type with its scale.

    A simQ has its step, conv/dense/multiply the product of their operands' scales,
    add/bias_add the smaller one, forwarding operators their argument's. Values of unknown
    scale (float, or after an average pool) are skipped. ``on_add(args, scale)`` sees each
    binary ``add``/``nn.bias_add`` before its scale is computed (and may set its operands').
    """
    scale: dict[int, float] = {}
    lets = _let_values(fn)
    for node in post_order(fn):
        if type(node) is not Call or type(node.op) is not Op:
            continue
        name = node.op.name
        args = tuple(_through(a, lets) for a in node.args)
        if is_simq(node):
            if id(node) in steps:
                scale[id(node)] = steps[id(node)]
            continue
        if name in _FORWARDING:
            if id(args[0]) in scale:
                scale[id(node)] = scale[id(args[0])]
            continue
        if on_add is not None and name in ("add", "nn.bias_add") and len(args) == 2:
            on_add(args, scale)
        if name not in _ACCUMULATING or not all(id(a) in scale for a in args[:2]):
            continue
        a, b = scale[id(args[0])], scale[id(args[1])]
        s = min(a, b) if name in ("add", "nn.bias_add") else a * b
        scale[id(node)] = s
        yield node, s


def _overflows(row: list[np.ndarray], free: list[tuple[Call, SimQ]], steps: Mapping[int, float],
               accs: list[tuple[Expr, float]], acc_top: float) -> bool:
    for (site, info), values in zip(free, row):
        if values.size == 0:
            continue
        step = steps[id(site)]
        ends = round_values(np.array([values.min(), values.max()], np.float64) / step,
                            info.rounding)
        if ends[0] < info.clip_min or ends[1] > info.clip_max:
            return True
    for (_, step), values in zip(accs, row[len(free):]):
        if values.size and float(np.max(np.abs(values.astype(np.float64)))) / step > acc_top:
            return True
    return False
