"""The ``Target`` record (``backends/tvm/target.py``): the host read once, targets forced by
dict, string or record, bad targets as ``RelayTypeError``, and a build that passes its
target down — AlterOpLayout's block, the schedules' lanes — with the same numbers at every
width.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from backends.tvm import build, load
from backends.tvm.kernel.cache import KernelCache
from backends.tvm.target import Target
from semantics.expr import Call, Op
from semantics.visitor import post_order


def test_the_target_record_reads_the_host_once_and_can_be_forced() -> None:
    host = Target.host()
    assert host.lanes in (4, 8, 16) and host.registers in (16, 32)
    assert host.l1_bytes > 0 and host.l2_bytes >= host.l1_bytes and host.threads >= 1
    assert (host.lanes == 16) == host.avx512 == (host.registers == 32)
    forced = Target.of({"kind": "llvm", "mcpu": host.mcpu, "lanes": 4, "l2_bytes": 1 << 20})
    assert (forced.lanes, forced.l2_bytes, forced.mcpu) == (4, 1 << 20, host.mcpu)
    assert host.with_lanes(16).lanes == 16 and host.with_lanes(16).registers == host.registers
    assert Target.of(forced.to_dict()) == forced             # build.json round trip
    assert Target.of(host.with_lanes(16)).key() != host.key()
    skx = Target.of("llvm -mcpu=skylake-avx512")
    assert (skx.mcpu, skx.lanes, skx.registers, skx.avx512, skx.fma) == (
        "skylake-avx512", 16, 32, True, True)
    assert Target.of({"kind": "llvm", "mcpu": "cascadelake"}).vnni


@pytest.mark.parametrize("spec,message", [
    ({"kind": "cuda"}, "llvm only"), ("cuda", "llvm only"), ({"lanes": 12}, "lanes 12"),
    ({"lanes": "8"}, "positive int"), ({"l2": 5}, "unknown target field"),
    ("llvm -O3", "cannot read"), ({"avx512": 1}, "True or False"), (42, "bad target"),
])
def test_a_bad_target_is_a_relay_error(spec: object, message: str) -> None:
    from semantics.errors import RelayTypeError

    with pytest.raises(RelayTypeError, match=message):
        Target.of(spec)


NET = """
def @main(%x: Tensor[(1, 16, 9, 9), float32], %w: Tensor[(32, 16, 3, 3), float32],
          %d: Tensor[(10, 288), float32]) {
  %0 = nn.relu(nn.conv2d(%x, %w, padding=[1, 1]));
  %1 = nn.max_pool2d(%0, pool_size=[3, 3], strides=[3, 3]);
  nn.dense(reshape(%1, newshape=[1, 288]), %d)
}"""


def _conv_layouts(exe: object) -> list[str]:
    return [n.attrs["data_layout"] for fn in exe.module.functions.values()  # type: ignore[attr-defined]
            for n in post_order(fn)
            if isinstance(n, Call) and isinstance(n.op, Op) and n.op.name == "nn.conv2d"]


def test_a_build_passes_its_target_down_and_saves_it(kernel_cache: KernelCache,
                                                     tmp_path: Path, close: object) -> None:
    rng = np.random.default_rng(0)
    params = {"w": rng.standard_normal((32, 16, 3, 3)).astype("float32"),
              "d": rng.standard_normal((10, 288)).astype("float32")}
    x = rng.standard_normal((1, 16, 9, 9)).astype("float32")
    host = build(NET, params, cache=kernel_cache)
    assert host.target is Target.host()
    assert _conv_layouts(host) == [f"NCHW{Target.host().lanes}c"]
    want = host(x)
    for spec in ({"kind": "llvm", "lanes": 16}, Target.host().with_lanes(4)):
        exe = build(NET, params, target=spec, cache=kernel_cache)
        lanes = Target.of(spec).lanes
        assert exe.target.lanes == lanes and _conv_layouts(exe) == [f"NCHW{lanes}c"]
        close(exe(x), want, {"float32": 1e-5})  # type: ignore[operator]
        exe.save(tmp_path / f"b{lanes}")
        saved = json.loads((tmp_path / f"b{lanes}" / "build.json").read_text())
        assert saved["target"]["lanes"] == lanes           # a forced target stays forced
        assert load(tmp_path / f"b{lanes}").target == exe.target
    host.save(tmp_path / "host")
    assert json.loads((tmp_path / "host" / "build.json").read_text())["target"] == "llvm"
