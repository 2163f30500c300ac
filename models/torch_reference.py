"""The models' architectures written independently in PyTorch, run with the same weights
(needs the `torch` extra; used by the tests and by `bench/paper.py` as the PyTorch-eager peer).

Vision models use ``torch.nn.functional`` layer by layer; the recurrent layers are PyTorch's own
``nn.RNN``/``nn.GRU``/``nn.LSTM`` with the weights loaded into their ``state_dict``; CharRNN is the
tutorial's module and sampling loop; the TreeLSTM is the child-sum recursion of Tai et al.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from models import vision


def _t(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a))


class _Weights:
    def __init__(self, params: dict[str, np.ndarray]) -> None:
        self.p = {k: _t(v) for k, v in params.items()}

    def conv(self, name: str, x: torch.Tensor, stride: int = 1, pad: int = 0, groups: int = 1,
             bias: bool = False) -> torch.Tensor:
        b = self.p[f"{name}_bias"] if bias else None
        return F.conv2d(x, self.p[f"{name}_weight"], b, stride=stride, padding=pad, groups=groups)

    def bn(self, name: str, x: torch.Tensor) -> torch.Tensor:
        p = self.p
        return F.batch_norm(x, p[f"{name}_moving_mean"], p[f"{name}_moving_var"],
                            p[f"{name}_gamma"], p[f"{name}_beta"], training=False, eps=1e-5)

    def fc(self, name: str, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.p[f"{name}_weight"], self.p[f"{name}_bias"])


def dqn(params: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    w = _Weights(params)
    y = F.relu(w.conv("conv1", _t(x), 4, bias=True))
    y = F.relu(w.conv("conv2", y, 2, bias=True))
    y = F.relu(w.conv("conv3", y, 1, bias=True))
    y = F.relu(w.fc("fc1", torch.flatten(y, 1)))
    return w.fc("fc2", y).numpy()


def mobilenet(params: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    w = _Weights(params)
    y = F.relu(w.bn("bn0", w.conv("conv0", _t(x), 2, 1)))
    cin = 32
    for i, (cout, stride) in enumerate(vision.MOBILENET_BLOCKS, start=1):
        y = F.relu(w.bn(f"dw{i}_bn", w.conv(f"dw{i}", y, stride, 1, groups=cin)))
        y = F.relu(w.bn(f"pw{i}_bn", w.conv(f"pw{i}", y)))
        cin = cout
    return w.fc("fc", torch.flatten(F.adaptive_avg_pool2d(y, 1), 1)).numpy()


def resnet18(params: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    w = _Weights(params)
    y = F.relu(w.bn("bn1", w.conv("conv1", _t(x), 2, 3)))
    y = F.max_pool2d(y, 3, 2, 1)
    for stage, stride in enumerate((1, 2, 2, 2), start=1):
        for block in range(2):
            p = f"layer{stage}_{block}"
            s = stride if block == 0 else 1
            z = F.relu(w.bn(f"{p}_bn1", w.conv(f"{p}_conv1", y, s, 1)))
            z = w.bn(f"{p}_bn2", w.conv(f"{p}_conv2", z, 1, 1))
            if f"{p}_down_weight" in w.p:
                y = w.bn(f"{p}_down_bn", w.conv(f"{p}_down", y, s))
            y = F.relu(z + y)
    return w.fc("fc", torch.flatten(F.adaptive_avg_pool2d(y, 1), 1)).numpy()


def vgg16(params: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    w = _Weights(params)
    y = _t(x)
    for s, stage in enumerate(vision.VGG16_STAGES, start=1):
        for i in range(1, len(stage) + 1):
            y = F.relu(w.conv(f"conv{s}_{i}", y, 1, 1, bias=True))
        y = F.max_pool2d(y, 2, 2)
    y = torch.flatten(y, 1)
    y = F.relu(w.fc("fc6", y))
    y = F.relu(w.fc("fc7", y))
    return w.fc("fc8", y).numpy()


def recurrent(kind: str, params: dict[str, np.ndarray], steps: list[np.ndarray]) -> np.ndarray:
    size = steps[0].shape[1]
    layer = {"rnn": torch.nn.RNN, "gru": torch.nn.GRU, "lstm": torch.nn.LSTM}[kind](size, size)
    layer.load_state_dict({f"{k}_l0": _t(v) for k, v in params.items()})
    with torch.no_grad():
        _, state = layer(torch.stack([_t(s) for s in steps]))
    h = state[0] if kind == "lstm" else state
    return h[0].numpy()


class CharRNN(torch.nn.Module):
    """The tutorial's generator network (dropout omitted: the identity at inference)."""

    def __init__(self, params: dict[str, np.ndarray]) -> None:
        super().__init__()
        sizes = {k: params[f"{k}_weight"].shape for k in ("i2h", "i2o", "o2o")}
        self.i2h = torch.nn.Linear(sizes["i2h"][1], sizes["i2h"][0])
        self.i2o = torch.nn.Linear(sizes["i2o"][1], sizes["i2o"][0])
        self.o2o = torch.nn.Linear(sizes["o2o"][1], sizes["o2o"][0])
        self.load_state_dict({k.replace("_", "."): _t(v) for k, v in params.items()})

    def forward(self, category: torch.Tensor, letter: torch.Tensor,
                hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        combined = torch.cat((category, letter, hidden), 1)
        hidden = self.i2h(combined)
        output = self.o2o(torch.cat((hidden, self.i2o(combined)), 1))
        return F.log_softmax(output, dim=1), hidden


def char_rnn(params: dict[str, np.ndarray], category: np.ndarray, letter: np.ndarray,
             max_length: int = 20) -> list[int]:
    net = CharRNN(params)
    letters = letter.shape[1]
    out: list[int] = []
    x, hidden = _t(letter), torch.zeros(1, net.i2h.out_features)
    with torch.no_grad():
        for _ in range(max_length):
            logp, hidden = net(_t(category), x, hidden)
            top = int(logp.topk(1)[1][0][0])
            if top == letters - 1:
                break
            out.append(top)
            x = torch.zeros(1, letters)
            x[0, top] = 1
    return out


def tree_lstm(params: dict[str, np.ndarray], tree: tuple) -> np.ndarray:
    p = {k: _t(v) for k, v in params.items()}

    def node(t: tuple) -> tuple[Any, Any]:
        x = _t(t[0])
        states = [node(c) for c in t[1]]
        hsum = sum((h for h, _ in states), torch.zeros(1, p["u_f"].shape[0]))
        iou = F.linear(x, p["w_iou"], p["b_iou"]) + F.linear(hsum, p["u_iou"])
        i, o, u = torch.chunk(iou, 3, dim=1)
        fx = F.linear(x, p["w_f"], p["b_f"])
        c = torch.sigmoid(i) * torch.tanh(u)
        for h_k, c_k in states:
            c = c + torch.sigmoid(fx + F.linear(h_k, p["u_f"])) * c_k
        return torch.sigmoid(o) * torch.tanh(c), c

    with torch.no_grad():
        return node(tree)[0].numpy()
