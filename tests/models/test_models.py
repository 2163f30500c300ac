"""models/: every workload prints, re-parses, type-checks, runs on the oracle, and equals an
independent PyTorch implementation with the same weights; the recurrent ones are not unrolled."""

from __future__ import annotations

import numpy as np
import pytest

import models
import passes
from interpreter import ConstructorValue, evaluate
from models import recurrent
from semantics import alpha_equal, parse, pretty
from semantics.expr import Call, Op
from semantics.visitor import post_order
from typechecker import check, type_of

pytest.importorskip("torch", reason="torch is not installed (extra `torch`)")
from models import torch_reference as torch_ref  # noqa: E402  (needs torch)


def test_names_are_the_contracts() -> None:
    assert models.names() == ["dqn", "mobilenet", "resnet18", "vgg16", "rnn", "gru", "lstm",
                              "char_rnn", "tree_lstm"]
    with pytest.raises(ValueError, match="unknown model"):
        models.get("alexnet")


@pytest.mark.parametrize("name", models.names())
def test_prints_reparses_and_typechecks(name: str) -> None:
    mod, params = models.get(name)
    check(mod)
    again = parse(pretty(mod))
    assert alpha_equal(mod, again)
    main_type = type_of(mod["main"], mod)
    assert len(main_type.arg_types) == len(mod["main"].params)
    assert [p.name_hint for p in mod["main"].params][-len(params):] == list(params)


@pytest.mark.parametrize("name", models.names())
def test_weights_are_seeded_and_reloadable(name: str, tmp_path) -> None:
    _, a = models.get(name, seed=3)
    _, b = models.get(name, seed=3)
    _, c = models.get(name, seed=4)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert any(not np.array_equal(a[k], c[k]) for k in a)
    path = tmp_path / "w.npz"
    models.save_weights(c, path)
    _, d = models.get(name, seed=3, weights=path)
    assert all(np.array_equal(c[k], d[k]) for k in c)
    broken = dict(c)
    broken.pop(next(iter(broken)))
    models.save_weights(broken, path)
    with pytest.raises(ValueError, match="does not fit"):
        models.get(name, weights=path)


def _run(name: str, *inputs, batch: int = 1, seed: int = 0):
    mod, params = models.get(name, batch=batch, seed=seed)
    return evaluate(mod, *inputs, *params.values()), params


@pytest.mark.parametrize("name", models.VISION)
def test_vision_matches_pytorch(name: str) -> None:
    batch = 2 if name == "dqn" else 1
    (x,) = models.example_inputs(name, batch=batch, seed=1)
    ours, params = _run(name, x, batch=batch)
    theirs = torch_ref.run(name, params, x)
    assert ours.shape == theirs.shape and ours.dtype == np.float32
    scale = float(np.abs(theirs).max())
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4 * scale)


@pytest.mark.parametrize("kind", ["rnn", "gru", "lstm"])
@pytest.mark.parametrize("steps", [1, 6])
def test_recurrent_matches_pytorch(kind: str, steps: int) -> None:
    rng = np.random.default_rng(steps)
    xs = rng.standard_normal((steps, 2, recurrent.LM_SIZE), dtype=np.float32)
    ours, params = _run(kind, xs, batch=2)
    np.testing.assert_allclose(ours, torch_ref.recurrent(kind, params, list(xs)), rtol=1e-4,
                               atol=1e-5)


def test_recurrent_empty_sequence_is_the_initial_state() -> None:
    ours, _ = _run("lstm", np.zeros((0, 1, recurrent.LM_SIZE), np.float32))
    assert np.array_equal(ours, np.zeros((1, recurrent.LM_SIZE), np.float32))


def _letters(v: ConstructorValue) -> list[int]:
    out = []
    while v.name == "Cons":
        out.append(int(v.fields[0]))
        v = v.fields[1]
    return out


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_char_rnn_matches_pytorch(seed: int) -> None:
    category, letter = models.example_inputs("char_rnn", seed=seed)
    ours, params = _run("char_rnn", category, letter, seed=seed)
    assert _letters(ours) == torch_ref.char_rnn(params, category, letter)


def test_char_rnn_stops_on_end_of_sequence() -> None:
    # Make the end-of-sequence class win from the first step: the generated name is empty.
    mod, params = models.get("char_rnn")
    params = dict(params)
    params["o2o_bias"] = params["o2o_bias"].copy()
    params["o2o_bias"][-1] = 1e4
    category, letter = models.example_inputs("char_rnn")
    out = evaluate(mod, category, letter, *params.values())
    assert _letters(out) == [] == torch_ref.char_rnn(params, category, letter)
    # ... and a class that never wins lets it run to the 20-letter bound.
    params["o2o_bias"][-1] = -1e4
    params["o2o_bias"][5] = 1e4
    assert _letters(evaluate(mod, category, letter, *params.values())) == [5] * 20


@pytest.mark.parametrize("nodes", [1, 2, 9, 25])
def test_tree_lstm_matches_pytorch(nodes: int) -> None:
    tree = recurrent.random_tree(np.random.default_rng(nodes), nodes, (1, recurrent.TREE_INPUT))
    ours, params = _run("tree_lstm", models.relay_tree(tree))
    np.testing.assert_allclose(ours, torch_ref.tree_lstm(params, tree), rtol=1e-4, atol=1e-5)


def _op_calls(mod) -> int:
    return sum(1 for f in mod.functions.values() for e in post_order(f)
               if isinstance(e, Call) and isinstance(e.op, Op))


@pytest.mark.parametrize("name", models.NLP)
def test_recurrent_models_are_not_unrolled(name: str) -> None:
    """The module is the same whatever the sequence length or tree size: a handful of operator
    calls inside a recursive function, while the number of rule applications grows with the
    input."""
    mod, params = models.get(name)
    assert _op_calls(mod) <= 25
    bound = passes.bind_params(mod, params)

    def rules(*args) -> int:
        count = [0]
        evaluate(bound, *args, trace=lambda rule, node: count.__setitem__(0, count[0] + 1))
        return count[0]

    rng = np.random.default_rng(0)
    if name == "char_rnn":
        return  # its length is data-dependent: covered by the stop tests above
    if name == "tree_lstm":
        small, large = (models.relay_tree(recurrent.random_tree(rng, n, (1, 300)))
                        for n in (2, 8))
    else:
        small, large = (rng.standard_normal((n, 1, 650), dtype=np.float32) for n in (2, 8))
    assert rules(large) > 3 * rules(small) // 2


def test_batch_one_only_models_say_so() -> None:
    for name in ("char_rnn", "tree_lstm"):
        with pytest.raises(ValueError, match="batch must be 1"):
            models.get(name, batch=2)
