"""``relay build FILE --target vta`` and ``relay run FILE --backend vta``."""

from __future__ import annotations

import numpy as np

from backends.vta import isa
from relay.cli import main

PROGRAM = """
def @main(%x: Tensor[(1, 16, 8, 8), int8], %w: Tensor[(32, 16, 3, 3), int8]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1], out_dtype="int32");
  %1 = clip(%0, a_min=-127f, a_max=127f);
  %2 = cast(%1, dtype="int8");
  nn.max_pool2d(%2, pool_size=[2, 2], strides=[2, 2])
}
"""


def test_build_target_vta_prints_stats_and_writes_streams(tmp_path, capsys):
    src = tmp_path / "q.relay"
    src.write_text(PROGRAM)
    out = tmp_path / "out"
    assert main(["build", str(src), "--target", "vta", "--vta-config", "TARGET=ultra96",
                 "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "target=ultra96 333 MHz" in text
    assert "gemm_counter: 1152" in text            # 32*16*9*64 MACs / 256
    assert "on the CPU: nn.max_pool2d x1" in text
    stream = (out / "invocation_00.bin").read_bytes()
    assert len(stream) % 16 == 0
    assert isinstance(isa.decode_stream(stream)[-1], isa.FinishInsn)


def test_build_target_vta_rejects_a_bad_config(tmp_path, capsys):
    src = tmp_path / "q.relay"
    src.write_text(PROGRAM)
    assert main(["build", str(src), "--target", "vta", "--vta-config", "LOG_BLOCK=3"]) != 0
    assert "micro-op" in capsys.readouterr().err


def test_run_backend_vta(tmp_path, capsys):
    src = tmp_path / "q.relay"
    src.write_text(PROGRAM)
    np.save(tmp_path / "x.npy", np.ones((1, 16, 8, 8), np.int8))
    np.save(tmp_path / "w.npy", np.ones((32, 16, 3, 3), np.int8))
    assert main(["run", str(src), str(tmp_path / "x.npy"), str(tmp_path / "w.npy"),
                 "--backend", "vta"]) == 0
    captured = capsys.readouterr()
    assert "127" in captured.out and "cycles:" in captured.err
