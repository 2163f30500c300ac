"""quantize: the pipeline's contract (weights bound, pure, deterministic) and the CLI."""

from __future__ import annotations

import numpy as np
import pytest
import qnets

from interpreter import evaluate
from passes import bind_params
from passes.quantize import QConfig, QuantizeError, quantize
from relay.cli import main as relay_main
from semantics import alpha_equal, parse, pretty


def test_main_takes_the_data_only_and_tracks_float() -> None:
    mod, params = qnets.conv_net()
    q = quantize(mod, params, QConfig(), qnets.inputs(2))
    assert [p.name_hint for p in q["main"].params] == ["x"]
    x = qnets.inputs(1, seed=9)[0]
    ref = evaluate(bind_params(mod, params), x)
    out = evaluate(q, x)
    assert out.dtype == np.float32 and out.shape == ref.shape
    assert np.abs(out - ref).max() < 0.1 * np.abs(ref).max()


def test_pure_and_deterministic() -> None:
    mod, params = qnets.conv_net()
    data = qnets.inputs(2)
    text, saved = pretty(mod), {k: v.copy() for k, v in params.items()}
    saved_data = [d.copy() for d in data]
    for calibrator in ("global_scale", "mse", "kl"):
        config = QConfig(calibrate=calibrator)
        a = quantize(mod, params, config, data)
        b = quantize(mod, params, config, data)
        assert alpha_equal(a, b) and pretty(a) == pretty(b)
    assert pretty(mod) == text
    assert all(np.array_equal(saved[k], params[k]) for k in params)
    assert all(np.array_equal(s, d) for s, d in zip(saved_data, data))


def test_default_config_and_errors() -> None:
    mod, params = qnets.conv_net()
    assert pretty(quantize(mod, params)) == pretty(quantize(mod, params, QConfig(), None))
    with pytest.raises(QuantizeError):
        quantize(mod, params, {"nbit_input": 8})  # type: ignore[arg-type]
    with pytest.raises(QuantizeError):
        quantize(parse("def @f(%x: float32) { %x }"), None, QConfig())


@pytest.fixture
def files(tmp_path):
    mod, params = qnets.conv_net()
    src = tmp_path / "net.relay"
    src.write_text(pretty(mod))
    np.savez(tmp_path / "p.npz", **params)
    np.savez(tmp_path / "x.npz", np.stack(qnets.inputs(2)))
    return tmp_path


def test_cli_quantize_writes_a_program_that_runs(files, capsys) -> None:
    out = files / "q.relay"
    status = relay_main([
        "quantize", str(files / "net.relay"), "--params", str(files / "p.npz"),
        "--bits", "8/16", "--calibrate", "kl", "--data", str(files / "x.npz"), "-o", str(out)])
    assert status == 0
    q = parse(out.read_text())
    expected = quantize(*qnets.conv_net(), QConfig(nbit_activation=16, calibrate="kl"),
                        qnets.inputs(2))
    assert alpha_equal(q, expected)
    assert relay_main(["quantize", str(files / "net.relay"), "--params",
                       str(files / "p.npz")]) == 0
    assert "out_dtype=\"int32\"" in capsys.readouterr().out


@pytest.mark.parametrize(("args", "status", "message"), [
    (["--bits", "8/8"], 1, "QConfig.nbit_activation"),
    (["--bits", "8"], 2, "--bits"),
    (["--calibrate", "mse"], 1, "needs a dataset"),
    (["--calibrate", "entropy"], 2, "--calibrate"),
    (["--data", "missing.npz"], 1, "cannot read"),
    (["--data", "BAD"], 1, "neither a value"),
])
def test_cli_errors(files, capsys, args, status, message) -> None:
    np.savez(files / "bad.npz", np.zeros((3, 2), np.float32))
    args = [a.replace("BAD", str(files / "bad.npz")) for a in args]
    argv = ["quantize", str(files / "net.relay"), "--params", str(files / "p.npz"), *args]
    try:
        got = relay_main(argv)
    except SystemExit as exit_:   # argparse's usage errors
        got = exit_.code
    err = capsys.readouterr().err
    assert got == status and message in err
    assert "Traceback" not in err


def test_deep_programs_need_no_python_recursion() -> None:
    """2,000 operators between two dense layers: twice Python's default recursion limit."""
    from semantics.expr import Call, Function, Op, Var
    from semantics.module import IRModule
    from semantics.types import TensorType

    x = Var("x", TensorType((1, 4), "float32"))
    w = Var("w", TensorType((4, 4), "float32"))
    e = Call(Op("nn.dense"), (x, w))
    for _ in range(2000):
        e = Call(Op("nn.relu"), (e,))
    mod = IRModule({"main": Function((x, w), Call(Op("nn.dense"), (e, w)))})
    q = quantize(mod, {"w": np.eye(4, dtype=np.float32)}, QConfig(),
                 [np.ones((1, 4), np.float32)])
    out = evaluate(q, np.arange(4, dtype=np.float32).reshape(1, 4))
    np.testing.assert_allclose(out, [[0, 1, 2, 3]], atol=0.05)
