"""passes.quantize -> backends.vta.build on a small residual CNN: the int8 convolutions run
on VTA (the first, float, stays on the CPU) and the result equals the oracle's bit for bit."""

from __future__ import annotations

import numpy as np

from backends.vta import build
from interpreter import evaluate
from semantics.parser import parse

SOURCE = """
def @main(%data: Tensor[(1, 3, 16, 16), float32], %w0: Tensor[(16, 3, 3, 3), float32],
          %w1: Tensor[(32, 16, 3, 3), float32], %b1: Tensor[(32), float32],
          %w2: Tensor[(32, 32, 3, 3), float32], %b2: Tensor[(32), float32]) {
  %0 = nn.relu(nn.conv2d(%data, %w0, padding=[1, 1]));
  %1 = nn.relu(nn.bias_add(nn.conv2d(%0, %w1, padding=[1, 1]), %b1));
  %2 = nn.bias_add(nn.conv2d(%1, %w2, padding=[1, 1]), %b2);
  %3 = nn.relu(add(%2, %1));
  nn.global_avg_pool2d(%3)
}
"""


def test_quantized_residual_cnn_on_vta():
    from passes.quantize import QConfig, quantize

    rng = np.random.default_rng(0)
    params = {"w0": rng.standard_normal((16, 3, 3, 3)).astype("float32") * 0.3,
              "w1": rng.standard_normal((32, 16, 3, 3)).astype("float32") * 0.1,
              "b1": rng.standard_normal((32,)).astype("float32") * 0.1,
              "w2": rng.standard_normal((32, 32, 3, 3)).astype("float32") * 0.1,
              "b2": rng.standard_normal((32,)).astype("float32") * 0.1}
    x = rng.standard_normal((1, 3, 16, 16)).astype("float32")
    qmod = quantize(parse(SOURCE), params, QConfig(), dataset=[x])
    exe = build(qmod)
    assert len(exe.offloaded) == 2
    assert exe.cpu_ops.get("nn.conv2d") == 1          # the first layer (skip_conv_layers)
    assert np.array_equal(exe(x), evaluate(qmod, x))
    assert exe.stats["gemm_counter"] == (32 * 16 + 32 * 32) * 9 * 16 * 16 // 256
    assert len(exe.instructions) == 2
