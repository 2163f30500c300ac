"""The paper's NLP workloads (Figs. 6 and 13): RNN, GRU and LSTM loops, CharRNN and TreeLSTM.

None of them is unrolled: every loop is a recursive function over a step counter or its input
(a ``List`` or a ``Tree``), so a module's size does not depend on the length of the sequence or
the shape of the tree it is run on.

* ``rnn``, ``gru``, ``lstm``: one recurrent layer as in Gluon's medium language model (input =
  hidden = 650); the input is the sequence as a tensor ``(steps, batch, 650)`` with a dynamic
  number of steps (35 in the documented input); the input projection of all steps is one matrix
  product before the loop, which recurses over the step counter; the state starts at zeros;
  the result is the final hidden state. Weights are
  named and laid out as PyTorch's ``nn.RNN``/``nn.GRU``/``nn.LSTM`` (``weight_ih``, ``weight_hh``,
  ``bias_ih``, ``bias_hh``; gate order r, z, n for the GRU and i, f, g, o for the LSTM), so loading
  a PyTorch layer's ``state_dict`` (without the ``_l0`` suffixes) gives the same function.
* ``char_rnn``: the generator of PyTorch's "generating names with a character-level RNN"
  tutorial — inputs are a one-hot category ``(1, 18)`` and a one-hot start letter ``(1, 59)``; each
  step concatenates category, letter and hidden state (128), computes the new hidden state
  (``i2h``) and the output (``i2o``, then ``o2o`` over hidden and output, log-softmax; dropout is
  the identity at inference), takes the most likely letter, and stops at the end-of-sequence class
  (58) or after 20 letters: data-dependent control flow. The result is the ``List`` of generated
  letter indices (``int32``), the feedback input being the one-hot of the chosen letter.
* ``tree_lstm``: the child-sum TreeLSTM of Tai et al. (2015), input 300, hidden 150, over a
  ``Tree[Tensor[(1, 300), float32]]`` (prelude ``Rose(value, children)``) of any shape, written with
  ``match`` and recursion; the result is the root's hidden state ``(1, 150)``.
"""

from __future__ import annotations

import numpy as np

from models._builder import Net, tensor_type
from semantics.errors import RelayArgumentValueError

LM_SIZE = 650
CHAR_CATEGORIES = 18
CHAR_LETTERS = 59
CHAR_HIDDEN = 128
CHAR_MAX_LENGTH = 20
TREE_INPUT = 300
TREE_HIDDEN = 150


def _recurrent_weights(n: Net, gates: int, size: int) -> None:
    bound = 1.0 / size ** 0.5
    n.uniform("weight_ih", (gates * size, size), bound)
    n.uniform("weight_hh", (gates * size, size), bound)
    n.uniform("bias_ih", (gates * size,), bound)
    n.uniform("bias_hh", (gates * size,), bound)


_CELLS = {
    "rnn": (1, """
        let %h2 = tanh(add(%gi, %gh));
        %step(add(%t, 1), %h2)"""),
    "gru": (3, """
        let %si = split(%gi, indices_or_sections=3, axis=1);
        let %sh = split(%gh, indices_or_sections=3, axis=1);
        let %r = sigmoid(add(%si.0, %sh.0));
        let %z = sigmoid(add(%si.1, %sh.1));
        let %n = tanh(add(%si.2, multiply(%r, %sh.2)));
        let %h2 = add(%n, multiply(%z, subtract(%h, %n)));
        %step(add(%t, 1), %h2)"""),
    "lstm": (4, """
        let %s = split(add(%gi, %gh), indices_or_sections=4, axis=1);
        let %c2 = add(multiply(sigmoid(%s.1), %c), multiply(sigmoid(%s.0), tanh(%s.2)));
        let %h2 = multiply(sigmoid(%s.3), tanh(%c2));
        %step(add(%t, 1), %h2, %c2)"""),
}


def recurrent(kind: str, batch: int, seed: int) -> tuple[str, dict]:
    """The ``rnn``/``gru``/``lstm`` loop; returns (module text, weights).

    ``main`` takes the sequence as one tensor ``(steps, batch, 650)`` with a dynamic number
    of steps (``?``), as Gluon's and PyTorch's recurrent layers do. The input projection
    ``x W_ih^T + b_ih`` of every step does not depend on the state, so it is computed for the
    whole sequence at once, one matrix product before the loop (as Gluon's fused layers and
    cuDNN do: per step, only the hidden projection streams its weight); the loop is a
    recursive function over the step counter that takes its step's row of the projection.
    """
    gates, cell = _CELLS[kind]
    n = Net(seed)
    _recurrent_weights(n, gates, LM_SIZE)
    t = tensor_type((batch, LM_SIZE))
    g = gates * LM_SIZE
    lstm = kind == "lstm"
    state_params = f"%h: {t}, %c: {t}" if lstm else f"%h: {t}"
    state_type = f"({t}, {t})" if lstm else t
    done = "(%h, %c)" if lstm else "%h"
    zero = f'zeros(shape=[{batch}, {LM_SIZE}], dtype="float32")'
    start = "%step(0, %zero, %zero).0" if lstm else "%step(0, %zero)"
    weights = ", ".join(f"%{name}: {tensor_type(a.shape)}" for name, a in n.params.items())
    text = f"""def @main(%xs: Tensor[(?, {batch}, {LM_SIZE}), float32], {weights}) -> {t} {{
  let %steps = take(shape_of(%xs), 0);
  let %gi_all = reshape(nn.bias_add(nn.dense(reshape(%xs, newshape=[-1, {LM_SIZE}]),
                                             %weight_ih, units={g}), %bias_ih),
                        newshape=[-1, {batch}, {g}]);
  let %step = fn (%t: int32, {state_params}) -> {state_type} {{
    if (less(%t, %steps)) {{
        let %gi = take(%gi_all, %t, axis=0);
        let %gh = nn.bias_add(nn.dense(%h, %weight_hh, units={g}), %bias_hh);{cell}
    }} else {{
      {done}
    }}
  }};
  let %zero = {zero};
  {start}
}}
"""
    return text, n.params


def char_rnn(batch: int, seed: int) -> tuple[str, dict]:
    """The CharRNN name generator; returns (module text, weights)."""
    if batch != 1:
        raise RelayArgumentValueError("char_rnn generates one name at a time: batch must be 1")
    n = Net(seed)
    cat, let, hid = CHAR_CATEGORIES, CHAR_LETTERS, CHAR_HIDDEN
    combined = cat + let + hid
    for name, fan_in, units in (("i2h", combined, hid), ("i2o", combined, let),
                                ("o2o", hid + let, let)):
        bound = 1.0 / fan_in ** 0.5
        n.uniform(f"{name}_weight", (units, fan_in), bound)
        n.uniform(f"{name}_bias", (units,), bound)
    weights = ", ".join(f"%{name}: {tensor_type(a.shape)}" for name, a in n.params.items())
    th, tl = tensor_type((1, hid)), tensor_type((1, let))
    text = f"""def @main(%category: {tensor_type((1, cat))}, %letter: {tl}, {weights})
    -> List[int32] {{
  let %letters = arange(0f, {let}f, 1f, dtype="float32");
  let %gen = fn (%input: {tl}, %hidden: {th}, %i: int32) -> List[int32] {{
    if (greater_equal(%i, {CHAR_MAX_LENGTH})) {{
      Nil
    }} else {{
      let %combined = concatenate((%category, %input, %hidden), axis=1);
      let %hidden2 = nn.bias_add(nn.dense(%combined, %i2h_weight, units={hid}), %i2h_bias);
      let %out = nn.bias_add(nn.dense(%combined, %i2o_weight, units={let}), %i2o_bias);
      let %both = concatenate((%hidden2, %out), axis=1);
      let %logp = nn.log_softmax(nn.bias_add(nn.dense(%both, %o2o_weight, units={let}),
                                             %o2o_bias), axis=1);
      let %top = cast(squeeze(argmax(%logp, axis=[1])), dtype="int32");
      if (equal(%top, {let - 1})) {{
        Nil
      }} else {{
        let %onehot = cast(equal(%letters, cast(%top, dtype="float32")), dtype="float32");
        Cons(%top, %gen(expand_dims(%onehot, axis=0), %hidden2, add(%i, 1)))
      }}
    }}
  }};
  %gen(%letter, zeros(shape=[1, {hid}], dtype="float32"), 0)
}}
"""
    return text, n.params


def tree_lstm(batch: int, seed: int) -> tuple[str, dict]:
    """The child-sum TreeLSTM; returns (module text, weights)."""
    if batch != 1:
        raise RelayArgumentValueError("tree_lstm runs on one tree at a time: batch must be 1")
    n = Net(seed)
    x_dim, h = TREE_INPUT, TREE_HIDDEN
    for name, shape, fan_in in (("w_iou", (3 * h, x_dim), x_dim), ("u_iou", (3 * h, h), h),
                                ("b_iou", (3 * h,), h), ("w_f", (h, x_dim), x_dim),
                                ("u_f", (h, h), h), ("b_f", (h,), h)):
        n.uniform(name, shape, 1.0 / fan_in ** 0.5)
    weights = ", ".join(f"%{name}: {tensor_type(a.shape)}" for name, a in n.params.items())
    th, tx = tensor_type((1, h)), tensor_type((1, x_dim))
    text = f"""def @main(%tree: Tree[{tx}], {weights}) -> {th} {{
  let %node = fn (%t: Tree[{tx}]) -> ({th}, {th}) {{
    match (%t) {{
      Rose(%x, %kids) => {{
        let %states = @map(%node, %kids);
        let %hsum = @foldl(fn (%acc: {th}, %s: ({th}, {th})) {{ add(%acc, %s.0) }},
                           zeros(shape=[1, {h}], dtype="float32"), %states);
        let %iou = add(nn.bias_add(nn.dense(%x, %w_iou, units={3 * h}), %b_iou),
                       nn.dense(%hsum, %u_iou, units={3 * h}));
        let %parts = split(%iou, indices_or_sections=3, axis=1);
        let %fx = nn.bias_add(nn.dense(%x, %w_f, units={h}), %b_f);
        let %fc = @foldl(fn (%acc: {th}, %s: ({th}, {th})) {{
                           add(%acc, multiply(sigmoid(add(%fx, nn.dense(%s.0, %u_f, units={h}))),
                                              %s.1))
                         }}, zeros(shape=[1, {h}], dtype="float32"), %states);
        let %c = add(multiply(sigmoid(%parts.0), tanh(%parts.2)), %fc);
        (multiply(sigmoid(%parts.1), tanh(%c)), %c)
      }},
    }}
  }};
  %node(%tree).0
}}
"""
    return text, n.params


def random_tree(rng: np.random.Generator, nodes: int, feature: tuple[int, ...]) -> tuple:
    """A random tree of ``nodes`` nodes as nested ``(feature, [children])`` pairs, built without
    recursion: node k > 0 hangs under a node chosen uniformly among the earlier ones."""
    parent = [-1] + [int(rng.integers(0, k)) for k in range(1, nodes)]
    feats = [rng.standard_normal(feature, dtype=np.float32) for _ in range(nodes)]
    kids: list[list[int]] = [[] for _ in range(nodes)]
    for k in range(1, nodes):
        kids[parent[k]].append(k)
    built: dict[int, tuple] = {}
    for j in range(nodes - 1, -1, -1):
        built[j] = (feats[j], [built[c] for c in kids[j]])
    return built[0]
