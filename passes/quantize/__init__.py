"""Generic quantization (the paper's §4.5; docs/architecture.md#toolchain): annotate, calibrate,
realize, and ``quantize`` composing them; ``docs/quantization.md`` is the user guide.

Importing this package fills ``semantics.ops.tables.QUANT_ANNOTATIONS`` with the default
rules (:mod:`passes.quantize.rules`) and declares every other operator float, with a reason.
"""

from __future__ import annotations

from passes.quantize.annotate import AnnotateContext, annotate
from passes.quantize.calibrate import calibrate
from passes.quantize.config import QConfig, QConfigError, QuantizeError
from passes.quantize.pipeline import quantize
from passes.quantize.realize import realize
from passes.quantize.rules import declare_float_operators
from passes.quantize.simq import ACTIVATION, INPUT, WEIGHT
from semantics.ops.tables import QUANT_ANNOTATIONS

__all__ = [
    "ACTIVATION", "INPUT", "WEIGHT", "AnnotateContext", "QConfig", "QConfigError",
    "QuantizeError", "annotate", "calibrate", "quantize", "realize",
    "register_quant_annotation",
]

declare_float_operators()


def register_quant_annotation(op_name: str, rule: object) -> object | None:
    """Make ``rule`` the annotation rule of ``op_name``, replacing the current one.

    A rule is ``rule(call, kinds, ctx) -> (expr, kind) | None``: ``call`` is the call with
    its arguments already annotated, ``kinds`` their kinds (None, ``INPUT``, ``WEIGHT``,
    ``ACTIVATION``), ``ctx`` an :class:`AnnotateContext` (``ctx.quantize(expr, kind, sign=,
    rounding=)``, ``ctx.is_constant``, ``ctx.conv_skipped(call)``, ``ctx.config``). Return
    None to leave the call float.

    Args:
        op_name: a registered operator name.
        rule: the rule (a callable), or None to declare the operator float again.
    Returns:
        The previous rule (None if there was none), so a caller can restore it.
    Raises:
        QuantizeError: an unknown operator or a rule that is not callable.
    """
    from semantics.ops.registry import exists

    if not isinstance(op_name, str) or not exists(op_name):
        raise QuantizeError(f"register_quant_annotation: unknown operator {op_name!r}")
    if rule is not None and not callable(rule):
        raise QuantizeError("register_quant_annotation: the rule must be callable")
    previous = QUANT_ANNOTATIONS.lookup(op_name) if QUANT_ANNOTATIONS.has(op_name) else None
    QUANT_ANNOTATIONS.unregister(op_name)
    if rule is None:
        QUANT_ANNOTATIONS.declare_none(op_name, "declared float by register_quant_annotation")
    else:
        QUANT_ANNOTATIONS.add(op_name, rule)
    return previous
