"""The models' architectures written independently in PyTorch, run with the same weights
(needs the `torch` extra; used by the tests, and by `bench/paper.py` as the PyTorch-eager and,
exported to ONNX, the onnxruntime peers).

:func:`module` returns a ``torch.nn.Module`` per model whose ``forward`` takes torch tensors:

* vision models use ``torch.nn.functional`` layer by layer (weights held as buffers);
* ``rnn``/``gru``/``lstm`` are PyTorch's own ``nn.RNN``/``nn.GRU``/``nn.LSTM`` with the weights
  loaded into their ``state_dict``; ``forward(steps)`` takes the stacked ``(steps, batch, 650)``
  input and returns the final hidden state;
* ``char_rnn`` is the tutorial's cell (``forward(category, letter, hidden)`` → log-probabilities
  and hidden state); :func:`char_rnn_generate` is its sampling loop in Python;
* ``tree_lstm`` is the child-sum cell of one node (``forward(x, hsum, child_h, child_c)`` with
  the children stacked on dim 0); :func:`tree_lstm_run` recurses over a tree in Python.

The numpy-facing functions (:func:`run`, :func:`recurrent`, :func:`char_rnn`,
:func:`tree_lstm`) are what the tests compare against.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from models import vision


def _t(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a))


class _Vision(torch.nn.Module):
    def __init__(self, name: str, params: dict[str, np.ndarray]) -> None:
        super().__init__()
        self.arch = name
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

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return getattr(self, f"_{self.arch}")(x)

    def _dqn(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.conv("conv1", x, 4, bias=True))
        y = F.relu(self.conv("conv2", y, 2, bias=True))
        y = F.relu(self.conv("conv3", y, 1, bias=True))
        y = F.relu(self.fc("fc1", torch.flatten(y, 1)))
        return self.fc("fc2", y)

    def _mobilenet(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn("bn0", self.conv("conv0", x, 2, 1)))
        cin = 32
        for i, (cout, stride) in enumerate(vision.MOBILENET_BLOCKS, start=1):
            y = F.relu(self.bn(f"dw{i}_bn", self.conv(f"dw{i}", y, stride, 1, groups=cin)))
            y = F.relu(self.bn(f"pw{i}_bn", self.conv(f"pw{i}", y)))
            cin = cout
        return self.fc("fc", torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))

    def _resnet18(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn("bn1", self.conv("conv1", x, 2, 3)))
        y = F.max_pool2d(y, 3, 2, 1)
        for stage, stride in enumerate((1, 2, 2, 2), start=1):
            for block in range(2):
                p = f"layer{stage}_{block}"
                s = stride if block == 0 else 1
                z = F.relu(self.bn(f"{p}_bn1", self.conv(f"{p}_conv1", y, s, 1)))
                z = self.bn(f"{p}_bn2", self.conv(f"{p}_conv2", z, 1, 1))
                if f"{p}_down_weight" in self.p:
                    y = self.bn(f"{p}_down_bn", self.conv(f"{p}_down", y, s))
                y = F.relu(z + y)
        return self.fc("fc", torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))

    def _vgg16(self, x: torch.Tensor) -> torch.Tensor:
        y = x
        for s, stage in enumerate(vision.VGG16_STAGES, start=1):
            for i in range(1, len(stage) + 1):
                y = F.relu(self.conv(f"conv{s}_{i}", y, 1, 1, bias=True))
            y = F.max_pool2d(y, 2, 2)
        y = torch.flatten(y, 1)
        y = F.relu(self.fc("fc6", y))
        y = F.relu(self.fc("fc7", y))
        return self.fc("fc8", y)


class _Recurrent(torch.nn.Module):
    def __init__(self, kind: str, params: dict[str, np.ndarray]) -> None:
        super().__init__()
        self.kind = kind
        size = params["weight_hh"].shape[1]
        layer = {"rnn": torch.nn.RNN, "gru": torch.nn.GRU, "lstm": torch.nn.LSTM}[kind]
        self.layer = layer(size, size)
        self.layer.load_state_dict({f"{k}_l0": _t(v) for k, v in params.items()})

    def forward(self, steps: torch.Tensor) -> torch.Tensor:
        _, state = self.layer(steps)
        h = state[0] if self.kind == "lstm" else state
        return h[0]


class CharRNN(torch.nn.Module):
    """The tutorial's generator cell (dropout omitted: the identity at inference)."""

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


class TreeLSTMCell(torch.nn.Module):
    """One child-sum TreeLSTM node: ``forward(x, child_h, child_c)`` (children on dim 0; zero
    children is a ``(0, hidden)`` tensor) returns the node's ``(h, c)``."""

    def __init__(self, params: dict[str, np.ndarray]) -> None:
        super().__init__()
        self.p = {k: _t(v) for k, v in params.items()}

    def forward(self, x: torch.Tensor, child_h: torch.Tensor,
                child_c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        p = self.p
        hsum = child_h.sum(0, keepdim=True)
        iou = F.linear(x, p["w_iou"], p["b_iou"]) + F.linear(hsum, p["u_iou"])
        i, o, u = torch.chunk(iou, 3, dim=1)
        f = torch.sigmoid(F.linear(x, p["w_f"], p["b_f"]) + F.linear(child_h, p["u_f"]))
        c = torch.sigmoid(i) * torch.tanh(u) + (f * child_c).sum(0, keepdim=True)
        return torch.sigmoid(o) * torch.tanh(c), c


def module(name: str, params: dict[str, np.ndarray]) -> torch.nn.Module:
    """The PyTorch module of model ``name`` (see the module docstring for its ``forward``)."""
    if name in ("dqn", "mobilenet", "resnet18", "vgg16"):
        return _Vision(name, params).eval()
    if name in ("rnn", "gru", "lstm"):
        return _Recurrent(name, params).eval()
    if name == "char_rnn":
        return CharRNN(params).eval()
    if name == "tree_lstm":
        return TreeLSTMCell(params).eval()
    raise ValueError(f"no PyTorch reference for model {name!r}")


# --- numpy-facing runners (the tests' side) ---------------------------------------------------

def run(name: str, params: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """A vision model's output on ``x``."""
    with torch.no_grad():
        return module(name, params)(_t(x)).numpy()


def recurrent(kind: str, params: dict[str, np.ndarray], steps: list[np.ndarray]) -> np.ndarray:
    """The final hidden state of the ``rnn``/``gru``/``lstm`` loop over ``steps``."""
    with torch.no_grad():
        return module(kind, params)(torch.stack([_t(s) for s in steps])).numpy()


def char_rnn_generate(cell: Any, category: torch.Tensor, letter: torch.Tensor,
                      max_length: int = 20) -> list[int]:
    """The tutorial's sampling loop around ``cell`` (a :class:`CharRNN` or anything with the
    same call signature returning log-probabilities and the hidden state)."""
    letters = letter.shape[1]
    out: list[int] = []
    x, hidden = letter, torch.zeros(1, 128)
    for _ in range(max_length):
        logp, hidden = cell(category, x, hidden)
        top = int(torch.as_tensor(logp).argmax(1)[0])
        if top == letters - 1:
            break
        out.append(top)
        x = torch.zeros(1, letters)
        x[0, top] = 1
    return out


def char_rnn(params: dict[str, np.ndarray], category: np.ndarray, letter: np.ndarray,
             max_length: int = 20) -> list[int]:
    """The letters CharRNN generates."""
    with torch.no_grad():
        return char_rnn_generate(module("char_rnn", params), _t(category), _t(letter),
                                 max_length)


def tree_lstm_run(cell: Any, tree: tuple, hidden: int = 150) -> torch.Tensor:
    """The root's hidden state: ``cell`` applied bottom-up over nested ``(x, [children])``
    pairs (an explicit stack, no recursion)."""
    done: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
    stack: list[tuple[tuple, bool]] = [(tree, False)]
    while stack:
        node, ready = stack.pop()
        if not ready:
            stack.append((node, True))
            stack.extend((c, False) for c in node[1])
            continue
        kids = [done.pop(id(c)) for c in node[1]]
        ch = torch.cat([h for h, _ in kids]) if kids else torch.zeros(0, hidden)
        cc = torch.cat([c for _, c in kids]) if kids else torch.zeros(0, hidden)
        x = node[0] if isinstance(node[0], torch.Tensor) else _t(node[0])
        done[id(node)] = cell(x, ch, cc)
    return done[id(tree)][0]


def tree_lstm(params: dict[str, np.ndarray], tree: tuple) -> np.ndarray:
    """The TreeLSTM's root hidden state over ``tree``."""
    with torch.no_grad():
        return tree_lstm_run(module("tree_lstm", params), tree).numpy()
