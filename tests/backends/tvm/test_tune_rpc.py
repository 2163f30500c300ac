"""``relay tune --rpc HOST:PORT:KEY`` end to end: a TVM RPC tracker and one RPC server on
localhost (TVM's own ``tvm.rpc.tracker.Tracker`` and ``tvm.rpc.server.Server``, each in a
process of its own), and MetaSchedule's ``RPCRunner`` measuring the search's candidates on
the server. The tracker needs ``tornado`` (the ``tvm`` extra)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tunekit import DENSE, params_of

from backends.tvm.target import Target
from backends.tvm.tune import search as search_mod
from backends.tvm.tune.database import TuningDatabase

KEY = "relay-test"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def tracker() -> Any:
    """A tracker on localhost with one server registered under :data:`KEY`; its port."""
    pytest.importorskip("tornado", reason="TVM's RPC tracker needs tornado (the tvm extra)")
    from tvm.rpc.server import Server
    from tvm.rpc.tracker import Tracker

    start = _free_port()
    track = Tracker(host="127.0.0.1", port=start, port_end=start + 50, silent=True)
    server = None
    try:
        server = Server(host="127.0.0.1", port=_free_port(), port_end=65000,
                        tracker_addr=("127.0.0.1", track.port), key=KEY, silent=True)
        yield track.port
    finally:
        if server is not None:
            server.terminate()
        track.terminate()


@pytest.mark.slow      # 73 s at a load of 10 on 2 cores: the tracker's and the server's
def test_relay_tune_measures_candidates_on_an_rpc_server(  # processes import TVM (16-25 s)
        tracker: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from relay.cli import main

    runners: list[str] = []
    real_runner = search_mod._runner

    def spy(rpc: Any) -> Any:
        runner = real_runner(rpc)
        runners.append(type(runner).__name__)
        return runner

    monkeypatch.setattr(search_mod, "_runner", spy)
    program, weights, db = tmp_path / "p.relay", tmp_path / "w.npz", tmp_path / "db"
    program.write_text(DENSE)
    np.savez(weights, **params_of())
    assert main(["tune", str(program), "--params", str(weights), "--trials", "2",
                 "--kernels", "1", "--db", str(db), "--rpc",
                 f"127.0.0.1:{tracker}:{KEY}"]) == 0
    assert runners == ["RPCRunner"]
    out = capsys.readouterr().out
    assert "tuned 1 of 1 kernels" in out and "no candidate" not in out
    # a candidate was measured on the server and judged here: the record has both times (a
    # search whose runner fails every candidate returns no trace: "no candidate" above)
    (record,) = TuningDatabase.open(db, Target.host()).records.values()
    assert record.tuned_seconds > 0 and record.ours_seconds > 0 and record.trials == 2


def test_rpc_specs_reach_metaschedules_rpc_runner() -> None:
    from backends.tvm.tune.search import RPCSpec, _runner

    runner = _runner(RPCSpec("127.0.0.1", 9190, KEY))
    assert type(runner).__name__ == "RPCRunner"
    config = runner.rpc_config
    assert (config.tracker_host, config.tracker_port, config.tracker_key) == (
        "127.0.0.1", 9190, KEY)
    assert type(_runner(None)).__name__ != "RPCRunner"      # without --rpc: this process
