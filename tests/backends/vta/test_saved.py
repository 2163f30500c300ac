"""exe.save(path) / backends.vta.load(path): the round trip runs the same streams, packed
weights and CPU stages without compiling anything; a damaged build is refused."""

from __future__ import annotations

import json

import numpy as np
import pytest

from backends.vta import build, load
from interpreter import evaluate
from semantics.errors import RelayError, RelayRuntimeError

# a conv on VTA between two CPU stages (the residual operand, max pooling)
SOURCE = """
def @main(%x: Tensor[(1, 16, 6, 6), int8], %r: Tensor[(1, 16, 6, 6), int8]) {
  %0 = nn.conv2d(%x, meta[relay.Constant][0], padding=[1, 1], out_dtype="int32");
  %1 = add(%0, left_shift(cast(%r, dtype="int32"), 2));
  %2 = cast(clip(right_shift(%1, 5), a_min=-127f, a_max=127f), dtype="int8");
  nn.max_pool2d(%2, pool_size=[2, 2], strides=[2, 2])
}
"""


def _program():
    from semantics.parser import parse

    rng = np.random.default_rng(4)
    w = rng.integers(-128, 128, (16, 16, 3, 3), dtype=np.int8)
    text = SOURCE.replace("meta[relay.Constant][0]", "%w")
    text = text.replace("%r: Tensor[(1, 16, 6, 6), int8])",
                        "%r: Tensor[(1, 16, 6, 6), int8], %w: Tensor[(16, 16, 3, 3), int8])")
    return parse(text), {"w": w}, rng


@pytest.mark.parametrize("cpu", ["oracle", "tvm"])
def test_round_trip(tmp_path, cpu):
    mod, params, rng = _program()
    exe = build(mod, params=params, cpu=cpu)
    x = rng.integers(-128, 128, (1, 16, 6, 6), dtype=np.int8)
    r = rng.integers(-128, 128, (1, 16, 6, 6), dtype=np.int8)
    expect = exe(x, r)
    assert np.array_equal(expect, evaluate(mod, x, r, params["w"]))
    exe.save(tmp_path / "b")
    back = load(tmp_path / "b")
    assert back.cpu == cpu and back.config == exe.config
    assert back.offloaded == exe.offloaded and back.cpu_ops == exe.cpu_ops
    assert back.cpu_report == exe.cpu_report
    assert np.array_equal(back.offloads[0].packed_weight, exe.offloads[0].packed_weight)
    assert np.array_equal(back(x, r), expect)
    assert back.instructions == exe.instructions
    assert back.stats == exe.stats
    if cpu == "tvm":
        assert all(s.backend == "tvm" for s in back.program.stages)


def test_damaged_builds_are_refused(tmp_path):
    mod, params, _ = _program()
    exe = build(mod, params=params, cpu="oracle")
    good = tmp_path / "good"
    exe.save(good)

    def copy(name):
        import shutil

        target = tmp_path / name
        shutil.copytree(good, target)
        return target

    flipped = copy("flipped")
    raw = bytearray((flipped / "arrays.npz").read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    (flipped / "arrays.npz").write_bytes(bytes(raw))
    with pytest.raises(RelayRuntimeError, match="damaged"):
        load(flipped)
    missing = copy("missing")
    (missing / "stages" / "stage_0.relay").unlink()
    with pytest.raises(RelayRuntimeError, match="stage_0.relay"):
        load(missing)
    version = copy("version")
    meta = json.loads((version / "build.json").read_text())
    meta["version"] = 99
    (version / "build.json").write_text(json.dumps(meta))
    with pytest.raises(RelayRuntimeError, match="version"):
        load(version)
    truncated = copy("truncated")
    (truncated / "build.json").write_text((good / "build.json").read_text()[:100])
    with pytest.raises(RelayError):
        load(truncated)
    with pytest.raises(RelayRuntimeError, match="not a valid saved VTA build"):
        load(tmp_path / "nowhere")
