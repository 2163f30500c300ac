"""Second-order checks of the nn and grad_ops rules: each rule's output differentiated again by
the rules (reverse over reverse, and reverse over forward), against central differences.

Uses the test-only reverse mode over rule outputs of ``tests/ad/rules/second_order.py`` (written
with the tensor/reduce/transform rules, whose operators the nn rules emit). Calls and inputs are
those of :mod:`test_nn_rules` (every stride/padding/dilation/group/layout form; inputs away from
kinks and ties).
"""

from __future__ import annotations

import numpy as np
import pytest
import second_order
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_nn_rules import ALL_OPS, INFERENCE_ONLY, float64_calls, inputs


@pytest.mark.parametrize("name", [n for n in ALL_OPS if n not in INFERENCE_ONLY])
@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.filter_too_much])
@given(data=st.data())
def test_rules_differentiate_again(name: str, data: st.DataObject) -> None:
    arg_types, attrs = data.draw(float64_calls(name), label="call")
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    args = inputs(name, arg_types, np.random.default_rng(seed))
    second_order.check_second_order(name, arg_types, attrs, args, seed)
