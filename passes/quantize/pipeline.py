"""``quantize(mod, params, config, dataset)``: annotate, calibrate, realize, fold constants.

Design note. The whole flow of the paper's §4.5 in TVM's order (``quantize.py``): the
prepared program is annotated with simQs (:func:`passes.quantize.annotate`), their scales
are chosen on the dataset (:func:`passes.quantize.calibrate`), the simQs become integer
arithmetic (:func:`passes.quantize.realize`), and FoldConstant quantizes the weights at
compile time (the int8 weight tensors become constants). The result's ``main`` takes the
data input only (the weights are bound). Pure and deterministic: the same inputs give the
same program.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from passes.fold_constant import fold_constant
from passes.quantize.annotate import annotate
from passes.quantize.calibrate import calibrate
from passes.quantize.config import QConfig, QuantizeError
from passes.quantize.realize import realize
from semantics.module import IRModule

__all__ = ["quantize"]


def quantize(mod: IRModule, params: Mapping[str, Any] | None, config: QConfig | None = None,
             dataset: Sequence[Any] | None = None) -> IRModule:
    """The quantized (integer) program of ``mod``.

    Args:
        mod: the float program; ``main`` takes the data first, then the weights.
        params: ``main``'s weights by parameter name, or None when ``main`` has none.
        config: the :class:`QConfig` (default: ``QConfig()``, 8/32 with the sweep).
        dataset: calibration inputs, each a whole value for ``main``'s first parameter.
    Returns:
        The realized module with its constants folded.
    Raises:
        QConfigError, QuantizeError, RelayTypeError: see the stages.
    """
    if config is None:
        config = QConfig()
    if not isinstance(config, QConfig):
        raise QuantizeError(f"quantize: expected a QConfig, got {type(config).__name__}")
    annotated = annotate(mod, params, config)
    simulated = calibrate(annotated, config, dataset)
    out = fold_constant(realize(simulated, config))
    assert isinstance(out, IRModule)
    return out
