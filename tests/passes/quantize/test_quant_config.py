"""QConfig: defaults (docs/architecture.md#toolchain), validation naming the field."""

from __future__ import annotations

import pytest

from passes.quantize import QConfig, QConfigError
from semantics.errors import RelayError


def test_defaults_are_the_contract() -> None:
    c = QConfig()
    assert (c.nbit_input, c.nbit_weight, c.nbit_activation) == (8, 8, 32)
    assert (c.rounding, c.calibrate, c.global_scale) == ("round", "global_scale", 8.0)
    assert c.skip_conv_layers == (0,)
    assert (c.skip_dense_layer, c.weight_scale, c.round_for_shift) == (False, "power2", True)
    assert c.accumulator_dtype == "int32" and c.bits == "8/32"
    assert QConfig(nbit_activation=16).accumulator_dtype == "int16"


@pytest.mark.parametrize(("field", "value"), [
    ("nbit_input", 1), ("nbit_input", 17), ("nbit_input", 8.0), ("nbit_input", True),
    ("nbit_weight", 0), ("nbit_activation", 24), ("nbit_activation", 8),
    ("rounding", "nearest"), ("calibrate", "percentile"), ("global_scale", 0.0),
    ("global_scale", float("inf")), ("global_scale", "8"), ("skip_conv_layers", (-1,)),
    ("skip_conv_layers", "0"), ("skip_dense_layer", 1), ("weight_scale", "pow2"),
    ("round_for_shift", "yes"),
])
def test_invalid_value_names_the_field(field: str, value: object) -> None:
    with pytest.raises(QConfigError) as info:
        QConfig(**{field: value})
    err = info.value
    assert isinstance(err, ValueError) and isinstance(err, RelayError)
    assert f"QConfig.{field}" in str(err)


def test_accumulator_wider_than_operands() -> None:
    with pytest.raises(ValueError, match="nbit_activation"):
        QConfig(nbit_input=16, nbit_weight=16, nbit_activation=16)
    assert QConfig(nbit_input=16, nbit_weight=16).bits == "16/32"


def test_skip_conv_layers_normalised() -> None:
    assert QConfig(skip_conv_layers=[2, 0, 2]).skip_conv_layers == (0, 2)
    assert QConfig(skip_conv_layers=None).skip_conv_layers == ()
    assert QConfig(global_scale=4).global_scale == 4.0
