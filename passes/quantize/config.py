"""``QConfig``: what a quantization means (bits, rounding, calibrator, skipped layers).

Design note. The fields of docs/architecture.md#toolchain with TVM's names where TVM has the concept
(``python/tvm/relay/quantize/quantize.py``), and one deliberate difference:

* **"m/n" is a real accumulator width.** ``nbit_input = nbit_weight = m`` are the bits of
  the quantized inputs and weights of a convolution or dense layer; ``nbit_activation = n``
  is the width of its integer accumulator — the ``out_dtype`` of the realized ``nn.conv2d``
  / ``nn.dense`` is ``int<n>``. So 8/16 really accumulates in int16 (and may overflow, which
  the ``global_scale`` calibrator's sweep guards against). In TVM the accumulator type was a
  separate ``dtype_activation`` field and ``nbit_activation`` only changed clipping.
* ``calibrate`` names the calibrator (``global_scale`` — the paper's overflow-aware sweep of
  one power-of-two scale —, ``mse``, ``kl``); ``global_scale`` is where the sweep starts (and
  the scale itself when no data is given).
* ``skip_conv_layers`` counts ``nn.conv2d`` calls in visit order (arguments before the call,
  left to right): the default ``(0,)`` keeps the first convolution in float, as TVM does.
* Extra fields whose defaults keep the meaning above: ``skip_dense_layer=False`` (TVM's
  default is True; ours quantizes dense layers), ``weight_scale="power2"`` (a weight's range
  is its max-abs rounded up to a power of two; ``"max"`` keeps the max-abs),
  ``round_for_shift=True`` (a requantizing right shift rounds as the simQ it realizes; False
  truncates toward minus infinity).

Invariants: a ``QConfig`` is immutable and valid — every invalid value raises
:class:`QConfigError` (a ``ValueError`` and a ``RelayError``) naming the field.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from semantics.errors import RelayError

__all__ = ["CALIBRATORS", "ROUNDINGS", "QConfig", "QConfigError", "QuantizeError"]

ROUNDINGS = ("round", "floor", "ceil", "stochastic")
CALIBRATORS = ("global_scale", "mse", "kl")
WEIGHT_SCALES = ("power2", "max")
ACCUMULATOR_BITS = (16, 32)


class QuantizeError(RelayError):
    """A quantization request that cannot be carried out (bad dataset, unsupported program)."""


class QConfigError(QuantizeError, ValueError):
    """An invalid ``QConfig`` field: both a ``ValueError`` (the contract) and a ``RelayError``
    (so the command line reports it as a user error)."""


def _require(ok: bool, name: str, value: Any, expected: str) -> None:
    if not ok:
        raise QConfigError(f"QConfig.{name}: invalid value {value!r} (expected {expected})")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class QConfig:
    """How to quantize (see the module docstring for each field's meaning).

    Raises:
        QConfigError: a field has an invalid value; the message names the field.
    """

    nbit_input: int = 8
    nbit_weight: int = 8
    nbit_activation: int = 32
    rounding: str = "round"
    calibrate: str = "global_scale"
    global_scale: float = 8.0
    skip_conv_layers: tuple[int, ...] | None = field(default=(0,))
    skip_dense_layer: bool = False
    weight_scale: str = "power2"
    round_for_shift: bool = True

    def __post_init__(self) -> None:
        for name in ("nbit_input", "nbit_weight"):
            value = getattr(self, name)
            _require(_is_int(value) and 2 <= value <= 16, name, value,
                     "an integer from 2 to 16")
        _require(_is_int(self.nbit_activation) and self.nbit_activation in ACCUMULATOR_BITS,
                 "nbit_activation", self.nbit_activation,
                 "the accumulator width, 16 or 32")
        _require(max(self.nbit_input, self.nbit_weight) < self.nbit_activation,
                 "nbit_activation", self.nbit_activation,
                 "more bits than nbit_input and nbit_weight")
        _require(self.rounding in ROUNDINGS, "rounding", self.rounding,
                 " | ".join(ROUNDINGS))
        _require(self.calibrate in CALIBRATORS, "calibrate", self.calibrate,
                 " | ".join(CALIBRATORS))
        scale = self.global_scale
        _require(isinstance(scale, (int, float)) and not isinstance(scale, bool)
                 and math.isfinite(scale) and scale > 0, "global_scale", scale,
                 "a positive finite number")
        object.__setattr__(self, "global_scale", float(scale))
        object.__setattr__(self, "skip_conv_layers", _layers(self.skip_conv_layers))
        _require(isinstance(self.skip_dense_layer, bool), "skip_dense_layer",
                 self.skip_dense_layer, "True or False")
        _require(self.weight_scale in WEIGHT_SCALES, "weight_scale", self.weight_scale,
                 " | ".join(WEIGHT_SCALES))
        _require(isinstance(self.round_for_shift, bool), "round_for_shift",
                 self.round_for_shift, "True or False")

    @property
    def accumulator_dtype(self) -> str:
        """The realized ``out_dtype`` of conv2d / dense: ``int<nbit_activation>``."""
        return f"int{self.nbit_activation}"

    @property
    def bits(self) -> str:
        """The scheme as the paper writes it, e.g. ``"8/32"``."""
        m = self.nbit_input if self.nbit_input == self.nbit_weight else \
            f"{self.nbit_input},{self.nbit_weight}"
        return f"{m}/{self.nbit_activation}"


def _layers(value: Any) -> tuple[int, ...]:
    if value is None:
        return ()
    ok = isinstance(value, Iterable) and not isinstance(value, (str, bytes))
    items = tuple(value) if ok else ()
    _require(ok and all(_is_int(i) and i >= 0 for i in items), "skip_conv_layers", value,
             "a sequence of non-negative convolution indices")
    return tuple(sorted(set(items)))
