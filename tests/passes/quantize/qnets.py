"""Small float networks for the quantization tests (plain builders; Hypothesis draws their
parameters in the tests)."""

from __future__ import annotations

import numpy as np

from semantics import parse
from semantics.module import IRModule


def conv_net(channels: int = 3, size: int = 8, hidden: int = 4, classes: int = 5,
             seed: int = 0, residual: bool = True, pool: str = "max",
             weight_scale: float = 0.3) -> tuple[IRModule, dict[str, np.ndarray]]:
    """conv-relu, conv(+residual)-relu, a pool, dense+bias: a CNN with every realized rule."""
    c, s, h, k = channels, size, hidden, classes
    tail = {
        "max": "nn.batch_flatten(nn.max_pool2d(%1, pool_size=[2, 2], strides=[2, 2]))",
        "avg": "nn.batch_flatten(nn.global_avg_pool2d(%1))",
    }[pool]
    features = h * (s // 2) * (s // 2) if pool == "max" else h
    second = "add(add(nn.conv2d(%0, %w2, padding=[1, 1, 1, 1]), %b2), %0)" if residual \
        else "add(nn.conv2d(%0, %w2, padding=[1, 1, 1, 1]), %b2)"
    text = f"""
def @main(%x: Tensor[(1, {c}, {s}, {s}), float32], %w1: Tensor[({h}, {c}, 3, 3), float32],
          %b1: Tensor[({h}, 1, 1), float32], %w2: Tensor[({h}, {h}, 3, 3), float32],
          %b2: Tensor[({h}, 1, 1), float32], %wd: Tensor[({k}, {features}), float32],
          %bd: Tensor[({k}), float32]) {{
  %0 = nn.relu(add(nn.conv2d(%x, %w1, padding=[1, 1, 1, 1]), %b1));
  %1 = nn.relu({second});
  nn.bias_add(nn.dense({tail}, %wd, units={k}), %bd)
}}
"""
    rng = np.random.default_rng(seed)

    def normal(*shape: int, scale: float = weight_scale) -> np.ndarray:
        return (rng.normal(size=shape) * scale).astype(np.float32)

    params = {"w1": normal(h, c, 3, 3), "b1": normal(h, 1, 1, scale=0.5),
              "w2": normal(h, h, 3, 3), "b2": normal(h, 1, 1, scale=0.5),
              "wd": normal(k, features), "bd": normal(k, scale=0.5)}
    return parse(text), params


def inputs(n: int, channels: int = 3, size: int = 8, seed: int = 1,
           scale: float = 1.0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(1, channels, size, size)) * scale).astype(np.float32)
            for _ in range(n)]


def downsample_net(channels: int = 3, size: int = 8, hidden: int = 4, classes: int = 5,
                   seed: int = 0, weight_scale: float = 0.3
                   ) -> tuple[IRModule, dict[str, np.ndarray]]:
    """A ResNet basic block with a downsampling shortcut: conv-relu, then a stride-2 block
    whose shortcut is a stride-2 1x1 convolution (two accumulators of unrelated scales meet
    in an ``add``), global average pool, dense."""
    c, s, h, k = channels, size, hidden, classes
    w = 2 * h
    text = f"""
def @main(%x: Tensor[(1, {c}, {s}, {s}), float32], %w1: Tensor[({h}, {c}, 3, 3), float32],
          %b1: Tensor[({h}, 1, 1), float32], %w2: Tensor[({w}, {h}, 3, 3), float32],
          %b2: Tensor[({w}, 1, 1), float32], %w3: Tensor[({w}, {w}, 3, 3), float32],
          %b3: Tensor[({w}, 1, 1), float32], %ws: Tensor[({w}, {h}, 1, 1), float32],
          %bs: Tensor[({w}, 1, 1), float32], %wd: Tensor[({k}, {w}), float32],
          %bd: Tensor[({k}), float32]) {{
  %0 = nn.relu(add(nn.conv2d(%x, %w1, padding=[1, 1, 1, 1]), %b1));
  %1 = nn.relu(add(nn.conv2d(%0, %w2, strides=[2, 2], padding=[1, 1, 1, 1]), %b2));
  %2 = add(nn.conv2d(%1, %w3, padding=[1, 1, 1, 1]), %b3);
  %3 = add(nn.conv2d(%0, %ws, strides=[2, 2]), %bs);
  %4 = nn.relu(add(%2, %3));
  nn.bias_add(nn.dense(nn.batch_flatten(nn.global_avg_pool2d(%4)), %wd, units={k}), %bd)
}}
"""
    rng = np.random.default_rng(seed)

    def normal(*shape: int, scale: float = weight_scale) -> np.ndarray:
        return (rng.normal(size=shape) * scale).astype(np.float32)

    params = {"w1": normal(h, c, 3, 3), "b1": normal(h, 1, 1, scale=0.5),
              "w2": normal(w, h, 3, 3), "b2": normal(w, 1, 1, scale=0.5),
              "w3": normal(w, w, 3, 3), "b3": normal(w, 1, 1, scale=0.5),
              "ws": normal(w, h, 1, 1), "bs": normal(w, 1, 1, scale=0.5),
              "wd": normal(k, w), "bd": normal(k, scale=0.5)}
    return parse(text), params
