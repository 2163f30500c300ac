"""``annotate(mod, params, config)``: bind the weights, simplify, insert simQ (the paper §4.5).

Design note (TVM's ``prerequisite_optimize`` followed by its ``QuantizeAnnotate``):

1. **Prepare.** :func:`passes.bind_params` turns ``params`` into constants, then
   SimplifyInference (batch norm into multiply/add), FoldConstant, FoldScaleAxis (the batch
   norm scale into the convolution's weights), CanonicalizeOps (``bias_add`` into ``add``)
   and FoldConstant again: a convolution now reads a constant weight and is followed by an
   ``add`` of a constant bias.
2. **Annotate.** One bottom-up walk (:class:`semantics.rewrite.ScopedMutator`, no Python
   recursion) keeps, for every rewritten expression, its *kind*: ``None`` (a float value),
   ``INPUT``, ``WEIGHT`` or ``ACTIVATION`` (:mod:`passes.quantize.simq`). At each call of an
   operator with a rule in ``semantics.ops.tables.QUANT_ANNOTATIONS`` the rule receives the
   rewritten call, its arguments' kinds and an :class:`AnnotateContext`, and returns the new
   expression with its kind, or None to leave the call alone (:mod:`passes.quantize.rules`
   has the default rules; :func:`passes.quantize.register_quant_annotation` overrides one).
   An operator without a rule computes in float on whatever its arguments are.

The simQ calls inserted here carry constant scales already, so the annotated program runs:
activations and inputs get ``config.global_scale`` as their range, constant weights their
power-of-two (or max) max-abs — :func:`passes.quantize.calibrate` replaces the former.
Quantizing the same expression twice with the same kind, sign and rounding gives one shared
simQ (TVM's dedup), so a value read by two convolutions is quantized once.

``skip_conv_layers`` counts convolutions in the walk's order, which is evaluation order
(arguments before the call, left to right); the context's counter gives each ``nn.conv2d``
its index once even when a rule is consulted for it.

A variable bound by ``let`` has the kind of its (annotated) value, so a program in
A-normal form is annotated as its dataflow form: a rule sees ``%x`` as the ACTIVATION its
value is and quantizes the variable where it needs an INPUT (once, shared by every use),
and realize carries the integers through the ``let``. Pure: the input module is not
mutated.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from passes.bind_params import bind_params
from passes.canonicalize_ops import canonicalize_ops
from passes.fold_constant import fold_constant
from passes.fold_scale_axis import fold_scale_axis
from passes.quantize.config import QConfig, QuantizeError
from passes.quantize.simq import (
    WEIGHT,
    clip_bounds,
    dom_scale_for,
    make_simq,
    power2_range,
)
from passes.simplify_inference import simplify_inference
from semantics.expr import Call, Constant, Expr, Function, Let, Op, Var
from semantics.module import IRModule
from semantics.ops.tables import QUANT_ANNOTATIONS
from semantics.rewrite import ScopedMutator, map_functions

__all__ = ["AnnotateContext", "Rule", "annotate", "prepare"]

Kind = int | None
Rule = Callable[[Call, Sequence[Kind], "AnnotateContext"], "tuple[Expr, Kind] | None"]


def prepare(mod: IRModule, params: Mapping[str, Any] | None) -> IRModule:
    """TVM's ``prerequisite_optimize``: bind ``params``, fold batch norm and constants."""
    if not isinstance(mod, IRModule):
        raise QuantizeError("quantize: expected an IRModule, got "
                            f"{type(mod).__name__}")
    if "main" not in mod.functions:
        raise QuantizeError("quantize: the module has no @main")
    out = bind_params(mod, params) if params else mod
    assert isinstance(out, IRModule)
    for step in (simplify_inference, fold_constant, fold_scale_axis, canonicalize_ops,
                 fold_constant):
        out = step(out)
    return out


class AnnotateContext:
    """What a rule may ask while annotating: the config, quantizers, layer counters.

    Attributes:
        config: the :class:`QConfig` of this annotation.
    """

    def __init__(self, config: QConfig) -> None:
        self.config = config
        self._memo: dict[tuple[int, int, bool, str], Expr] = {}
        self._keep: list[Expr] = []
        self._conv_index: dict[int, int] = {}
        self._dense_seen = 0

    def bits(self, kind: int) -> int:
        """The bits of a kind under this config (input, weight, activation)."""
        c = self.config
        return {1: c.nbit_input, 2: c.nbit_weight, 3: c.nbit_activation}[kind]

    def quantize(self, expr: Expr, kind: int, *, sign: bool = True,
                 rounding: str | None = None) -> Expr:
        """``expr`` wrapped in a simQ of ``kind`` (shared when asked twice).

        The scale is the config's ``global_scale`` for inputs and activations and the
        max-abs range (``weight_scale``) for a constant weight; calibration revises them.
        """
        mode = self.config.rounding if rounding is None else rounding
        key = (id(expr), kind, sign, mode)
        done = self._memo.get(key)
        if done is not None:
            return done
        bits = self.bits(kind)
        if kind == WEIGHT and type(expr) is Constant:
            value_range = weight_range(expr.data, self.config)
        else:
            value_range = self.config.global_scale
        lo, hi = clip_bounds(bits, sign)
        out = make_simq(expr, dom_scale_for(value_range, bits, sign), lo, hi, kind=kind,
                        sign=sign, rounding=mode)
        self._memo[key] = out
        self._keep.append(expr)
        return out

    @staticmethod
    def is_constant(expr: Expr) -> bool:
        """Whether ``expr`` is a constant (a bound weight or bias)."""
        return type(expr) is Constant

    def conv_skipped(self, call: Call) -> bool:
        """Whether this ``nn.conv2d`` stays float (its index is in ``skip_conv_layers``)."""
        index = self._conv_index.get(id(call))
        if index is None:
            index = len(self._conv_index)
            self._conv_index[id(call)] = index
            self._keep.append(call)
        return index in (self.config.skip_conv_layers or ())

    def dense_skipped(self) -> bool:
        """Whether dense layers stay float (``skip_dense_layer``)."""
        return self.config.skip_dense_layer


def weight_range(data: np.ndarray, config: QConfig) -> float:
    """A weight's range: its max-abs, rounded up to a power of two under ``power2``."""
    max_abs = float(np.max(np.abs(data))) if data.size else 0.0
    if config.weight_scale == "power2":
        return power2_range(max_abs)
    return max_abs if max_abs > 0 else 1.0


class _Annotate(ScopedMutator):
    def __init__(self, ctx: AnnotateContext) -> None:
        self.ctx = ctx
        self.kinds: dict[int, int] = {}
        self.keep: list[Expr] = []
        self.rewritten: dict[int, Expr] = {}

    def bind(self, var: Var, site: object) -> Var:
        """A ``let`` variable takes its rewritten value's kind (the value is walked first)."""
        if type(site) is Let:
            value = self.rewritten.get(id(site.value))
            kind = None if value is None else self.kinds.get(id(value))
            if kind is not None:
                self.kinds[id(var)] = kind
        return var

    def visit_call(self, new: Expr, old: Expr) -> Expr:
        out = self._annotate_call(new)
        self.rewritten[id(old)] = out
        return out

    def _annotate_call(self, new: Expr) -> Expr:
        assert isinstance(new, Call)
        if type(new.op) is not Op or not QUANT_ANNOTATIONS.has(new.op.name):
            return new
        rule = QUANT_ANNOTATIONS.lookup(new.op.name)
        kinds = tuple(self.kinds.get(id(a)) for a in new.args)
        result = rule(new, kinds, self.ctx)
        if result is None:
            return new
        expr, kind = result
        if kind is not None:
            self.kinds[id(expr)] = kind
            self.keep.append(expr)
        return expr


def annotate(mod: IRModule, params: Mapping[str, Any] | None, config: QConfig) -> IRModule:
    """Prepare ``mod`` and insert simulated quantizers by the per-operator rules.

    Args:
        mod: the float program (``main`` takes the data first, then the weights).
        params: ``main``'s weights by parameter name (bound as constants), or None.
        config: the :class:`QConfig`.
    Returns:
        The annotated module; its ``main`` takes the parameters not in ``params``.
    Raises:
        QuantizeError: ``mod`` is not a module with a ``main``; RelayTypeError: ill-typed.
    """
    if not isinstance(config, QConfig):
        raise QuantizeError(f"annotate: expected a QConfig, got {type(config).__name__}")
    prepared = prepare(mod, params)

    def run(name: str, fn: Function) -> Function:
        out = _Annotate(AnnotateContext(config)).mutate(fn)
        assert isinstance(out, Function)
        return out

    return map_functions(prepared, run)
