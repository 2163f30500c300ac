"""The paper's workloads written in Relay: ``models.get(name, batch=1, seed=0)``.

``get`` returns ``(IRModule, params)``: ``@main`` takes the data input(s) first, then every weight,
and ``params`` maps each weight's name (no ``%``) to its seeded ``float32`` array — bind them with
``passes.bind_params(mod, params)`` or pass them positionally after the inputs (in ``params``'
order). Weights are deterministic per ``(name, seed)``; ``save_weights``/``get(..., weights=path)``
keep and reload them as ``.npz``. ``example_inputs(name, batch, seed)`` builds the documented input
(arguments as :func:`interpreter.evaluate` takes them: arrays, and ``ConstructorValue`` lists and
trees).

* ``dqn`` — input ``(batch, 4, 84, 84)``; output ``(batch, 18)`` action values;
* ``mobilenet``, ``resnet18``, ``vgg16`` — input ``(batch, 3, 224, 224)``; output
  ``(batch, 1000)`` logits;
* ``rnn``, ``gru``, ``lstm`` — input the sequence ``(steps, batch, 650)``, any number of steps
  (35 in the documented input); output the final hidden state ``(batch, 650)``;
* ``char_rnn`` — inputs a one-hot category ``(1, 18)`` and a one-hot start letter ``(1, 59)``;
  output the ``List[int32]`` of generated letters (at most 20);
* ``tree_lstm`` — input a ``Tree`` of ``(1, 300)`` features (30 nodes in the documented input);
  output the root's hidden state ``(1, 150)``.

The architectures are described in :mod:`models.vision` and :mod:`models.recurrent`.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from interpreter import ConstructorValue
from models import recurrent, vision
from semantics import IRModule, parse
from semantics.errors import (
    RelayArgumentTypeError,
    RelayArgumentValueError,
    RelayRuntimeError,
)

_BUILDERS: dict[str, Callable[[int, int], tuple[str, dict]]] = {
    "dqn": vision.dqn,
    "mobilenet": vision.mobilenet,
    "resnet18": vision.resnet18,
    "vgg16": vision.vgg16,
    "rnn": lambda batch, seed: recurrent.recurrent("rnn", batch, seed),
    "gru": lambda batch, seed: recurrent.recurrent("gru", batch, seed),
    "lstm": lambda batch, seed: recurrent.recurrent("lstm", batch, seed),
    "char_rnn": recurrent.char_rnn,
    "tree_lstm": recurrent.tree_lstm,
}

VISION = ("dqn", "mobilenet", "resnet18", "vgg16")
NLP = ("rnn", "gru", "lstm", "char_rnn", "tree_lstm")
SEQUENCE_STEPS = 35
TREE_NODES = 30


def names() -> list[str]:
    """Every model's name, vision first: ``dqn mobilenet resnet18 vgg16 rnn gru lstm char_rnn
    tree_lstm``."""
    return list(_BUILDERS)


def _builder(name: str) -> Callable[[int, int], tuple[str, dict]]:
    try:
        return _BUILDERS[name]
    except KeyError:
        raise RelayArgumentValueError(f"unknown model {name!r}; models: "
                                      f"{', '.join(_BUILDERS)}") from None


def text(name: str, batch: int = 1, seed: int = 0) -> str:
    """The model's Relay source text (weights as parameters of ``@main``)."""
    return _builder(name)(batch, seed)[0]


def get(name: str, batch: int = 1, seed: int = 0,
        weights: str | Path | None = None) -> tuple[IRModule, dict[str, np.ndarray]]:
    """The model ``name`` as a Relay module and its weights.

    Args:
        name: one of :func:`names`.
        batch: the batch size (``char_rnn`` and ``tree_lstm`` take 1 only).
        seed: seeds the weights (deterministic per ``(name, seed)``).
        weights: an ``.npz`` file (see :func:`save_weights`) whose arrays replace the seeded
            weights; it must hold every weight, with the same shapes.
    Returns:
        ``(mod, params)``.
    Raises:
        RelayArgumentValueError: an unknown name, an unsupported batch, a negative seed, or a
            weights file that does not fit. RelayArgumentTypeError: a name, batch or seed of
            the wrong kind. RelayRuntimeError: an unreadable weights file.
    """
    if not isinstance(name, str):
        raise RelayArgumentTypeError(f"a model name is a string, not {type(name).__name__}")
    for what, v in (("batch", batch), ("seed", seed)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, (bool, np.bool_)):
            raise RelayArgumentTypeError(f"{what} must be an integer, not {v!r}")
        if v < (1 if what == "batch" else 0):
            raise RelayArgumentValueError(f"bad {what} {v}")
    source, params = _builder(name)(int(batch), int(seed))
    if weights is not None:
        params = load_weights(weights, like=params)
    return parse(source, source_name=f"<model {name}>"), params


def save_weights(params: dict[str, np.ndarray], path: str | Path) -> None:
    """Save a model's weights as an ``.npz`` archive (one array per parameter name)."""
    np.savez(Path(path), **params)  # type: ignore[arg-type]  # numpy types **kwds as its flags


def load_weights(path: str | Path, like: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Read weights saved by :func:`save_weights`, checked against ``like`` (names, shapes).

    Raises:
        RelayArgumentValueError: a missing or extra name, or a shape that differs.
        RelayRuntimeError: the file cannot be read as an ``.npz`` archive.
    """
    if not isinstance(path, (str, Path)):
        raise RelayArgumentTypeError(f"a weights file is a path, not {type(path).__name__}")
    try:
        with np.load(Path(path), allow_pickle=False) as archive:
            loaded = {k: np.asarray(archive[k]) for k in archive.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError, AttributeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise RelayRuntimeError(f"cannot read the weights file {path}: {reason}") from None
    if set(loaded) != set(like):
        missing, extra = sorted(set(like) - set(loaded)), sorted(set(loaded) - set(like))
        raise RelayArgumentValueError(f"weights file {path} does not fit: missing {missing}, "
                                      f"extra {extra}")
    out = {}
    for k, ref in like.items():
        if loaded[k].shape != ref.shape:
            raise RelayArgumentValueError(f"weights file {path}: {k} has shape "
                                          f"{loaded[k].shape}, expected {ref.shape}")
        out[k] = np.ascontiguousarray(loaded[k], dtype=np.float32)
    return out


def relay_list(items: list[Any]) -> ConstructorValue:
    """A prelude ``List`` value (``Cons``/``Nil``) holding ``items`` in order."""
    out = ConstructorValue("Nil", ())
    for v in reversed(items):
        out = ConstructorValue("Cons", (v, out))
    return out


def relay_tree(tree: tuple) -> ConstructorValue:
    """A prelude ``Tree`` value from nested ``(value, [children])`` pairs (no recursion)."""
    # Post-order over an explicit stack: each node is built after its children.
    built: dict[int, ConstructorValue] = {}
    stack: list[tuple[tuple, bool]] = [(tree, False)]
    while stack:
        node, ready = stack.pop()
        if ready:
            kids = [built.pop(id(c)) for c in node[1]]
            built[id(node)] = ConstructorValue("Rose", (node[0], relay_list(kids)))
        else:
            stack.append((node, True))
            stack.extend((c, False) for c in node[1])
    return built[id(tree)]


def example_inputs(name: str, batch: int = 1, seed: int = 0) -> tuple[Any, ...]:
    """The documented input of ``name`` (see the table above), seeded.

    For the sequence models this is a ``(35, batch, 650)`` tensor; for ``tree_lstm`` a random
    tree of 30 nodes; for ``char_rnn`` a category and a start letter (one-hot).
    """
    _builder(name)
    rng = np.random.default_rng(seed + 1000)
    if name == "dqn":
        return (rng.random((batch, 4, 84, 84), dtype=np.float32),)
    if name in VISION:
        return (rng.standard_normal((batch, 3, 224, 224), dtype=np.float32),)
    if name in ("rnn", "gru", "lstm"):
        return (rng.standard_normal((SEQUENCE_STEPS, batch, recurrent.LM_SIZE),
                                    dtype=np.float32),)
    if name == "char_rnn":
        cat = np.zeros((1, recurrent.CHAR_CATEGORIES), np.float32)
        cat[0, rng.integers(recurrent.CHAR_CATEGORIES)] = 1
        letter = np.zeros((1, recurrent.CHAR_LETTERS), np.float32)
        letter[0, rng.integers(recurrent.CHAR_LETTERS - 1)] = 1
        return (cat, letter)
    return (relay_tree(recurrent.random_tree(rng, TREE_NODES, (1, recurrent.TREE_INPUT))),)


__all__ = ["NLP", "VISION", "example_inputs", "get", "load_weights", "names", "relay_list",
           "relay_tree", "save_weights", "text"]
