"""The VTA hardware configuration (``vta_config.json``) and the values derived from it.

A :class:`Config` holds the keys of apache/tvm-vta's ``config/vta_config.json`` with their
defaults and derives, under the names TVM's ``vta.Environment`` uses, the tensor shapes
(``BATCH``, ``BLOCK_IN``, ``BLOCK_OUT``), the element widths and sizes (``INP_WIDTH``,
``INP_ELEM_BYTES``, ...), the on-chip buffer sizes and depths (``INP_BUFF_SIZE``,
``INP_BUFF_DEPTH``, ``LOG_INP_BUFF_DEPTH``, ...) as ``hw_spec_const.h`` defines them, and per
board (``TARGET``) the clock and the width of the data bus (``pkg_config.py``: pynq, sim and
de10nano at 100 MHz with a 64-bit AXI port; ultra96 and zcu104 at 333 MHz with 128 bits).

Invariants (checked at construction, ``ValueError`` otherwise): every key is known and an
integer in range; each buffer holds at least one element; a micro-op's three indices
(``dst_idx`` and ``src_idx`` of ``LOG_ACC_BUFF_DEPTH`` bits each, ``wgt_idx`` of
``LOG_WGT_BUFF_DEPTH`` bits, as ``hw_spec.h``'s ``VTAUop``) fit in 32 bits; every index field
of an instruction fits its 64-bit word (see :mod:`backends.vta.isa`).  With 16x16 blocks the
defaults give 11 + 11 + 10 = 32 bits; an 8x8 core (``LOG_BLOCK=3``) needs smaller buffers,
e.g. ``LOG_INP_BUFF_SIZE=14, LOG_WGT_BUFF_SIZE=16, LOG_ACC_BUFF_SIZE=16``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Config", "DEFAULTS", "TARGETS"]

DEFAULTS: dict[str, Any] = {
    "TARGET": "sim",
    "HW_VER": "0.0.2",
    "LOG_INP_WIDTH": 3,
    "LOG_WGT_WIDTH": 3,
    "LOG_ACC_WIDTH": 5,
    "LOG_BATCH": 0,
    "LOG_BLOCK": 4,
    "LOG_UOP_BUFF_SIZE": 15,
    "LOG_INP_BUFF_SIZE": 15,
    "LOG_WGT_BUFF_SIZE": 18,
    "LOG_ACC_BUFF_SIZE": 17,
}

#: Per board: (clock in MHz, data bus width in bits), from ``config/pkg_config.py``.
TARGETS: dict[str, tuple[int, int]] = {
    "sim": (100, 64),
    "tsim": (100, 64),
    "pynq": (100, 64),
    "de10nano": (100, 64),
    "ultra96": (333, 128),
    "zcu104": (333, 128),
}

#: The simulator models int8 inputs and weights and int32 accumulators (fsim's data path).
_SUPPORTED_WIDTHS = {"LOG_INP_WIDTH": 3, "LOG_WGT_WIDTH": 3, "LOG_ACC_WIDTH": 5}


class Config:
    """A VTA configuration; ``Config(**overrides)`` with ``vta_config.json``'s keys.

    Raises:
        ValueError: an unknown key, a value of the wrong kind or out of range, a buffer that
            cannot hold one element, or a micro-op wider than 32 bits.
    """

    __slots__ = ("_values",)

    def __init__(self, **overrides: Any):
        values = dict(DEFAULTS)
        for key, value in overrides.items():
            if key not in DEFAULTS:
                raise ValueError(f"unknown VTA configuration key {key!r} "
                                 f"(known: {', '.join(DEFAULTS)})")
            values[key] = value
        object.__setattr__(self, "_values", values)
        self._validate()

    # -- construction helpers --------------------------------------------------------------
    @classmethod
    def from_strings(cls, pairs: list[str]) -> Config:
        """A configuration from ``KEY=VALUE`` strings (the CLI's ``--vta-config``)."""
        overrides: dict[str, Any] = {}
        for pair in pairs:
            key, sep, text = pair.partition("=")
            key = key.strip()
            if not sep or not key:
                raise ValueError(f"--vta-config expects KEY=VALUE, got {pair!r}")
            if key in ("TARGET", "HW_VER"):
                overrides[key] = text.strip()
            else:
                try:
                    overrides[key] = int(text)
                except ValueError:
                    raise ValueError(f"VTA configuration {key} must be an integer, "
                                     f"got {text!r}") from None
        return cls(**overrides)

    def _validate(self) -> None:
        v = self._values
        if v["TARGET"] not in TARGETS:
            raise ValueError(f"unknown VTA TARGET {v['TARGET']!r} "
                             f"(known: {', '.join(TARGETS)})")
        if not isinstance(v["HW_VER"], str):
            raise ValueError("VTA HW_VER must be a string")
        for key in DEFAULTS:
            if key in ("TARGET", "HW_VER"):
                continue
            if not isinstance(v[key], int) or isinstance(v[key], bool) or not 0 <= v[key] <= 30:
                raise ValueError(f"VTA configuration {key} must be an integer in [0, 30], "
                                 f"got {v[key]!r}")
        for key, width in _SUPPORTED_WIDTHS.items():
            if v[key] != width:
                raise ValueError(f"VTA configuration {key}={v[key]} is not supported: the "
                                 f"simulator implements int8 x int8 -> int32 ({key}={width})")
        for name in ("UOP", "INP", "WGT", "ACC"):
            if getattr(self, f"LOG_{name}_BUFF_DEPTH") < 0:
                raise ValueError(f"VTA configuration: the {name} buffer "
                                 f"(2^{v[f'LOG_{name}_BUFF_SIZE']} bytes) cannot hold one "
                                 f"element of {getattr(self, f'{name}_ELEM_BYTES')} bytes")
        uop_bits = 2 * self.LOG_ACC_BUFF_DEPTH + self.LOG_WGT_BUFF_DEPTH
        if uop_bits > 32:
            raise ValueError(
                f"VTA configuration: a micro-op needs {uop_bits} bits (dst_idx and src_idx "
                f"{self.LOG_ACC_BUFF_DEPTH} bits each, wgt_idx {self.LOG_WGT_BUFF_DEPTH}) "
                f"but has 32; make the buffers smaller")
        gemm_bits = 2 * (self.LOG_ACC_BUFF_DEPTH + self.LOG_INP_BUFF_DEPTH
                         + self.LOG_WGT_BUFF_DEPTH)
        head = 3 + 4 + 1 + self.LOG_UOP_BUFF_DEPTH + (self.LOG_UOP_BUFF_DEPTH + 1) + 2 * 14
        if gemm_bits > 64 or head > 64 or 4 * self.LOG_ACC_BUFF_DEPTH + 3 + 1 + 16 > 64:
            raise ValueError("VTA configuration: the GEMM/ALU instruction fields do not fit "
                             "two 64-bit words; make the buffers smaller")

    # -- the keys --------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"VTA Config has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Config is immutable")

    def as_dict(self) -> dict[str, Any]:
        """The ``vta_config.json`` keys and values."""
        return dict(self._values)

    def replace(self, **overrides: Any) -> Config:
        """A copy with some keys changed."""
        return Config(**{**self._values, **overrides})

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and other._values == self._values

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._values.items())))

    def __repr__(self) -> str:
        changed = {k: v for k, v in self._values.items() if DEFAULTS[k] != v}
        return "Config(" + ", ".join(f"{k}={v!r}" for k, v in changed.items()) + ")"

    # -- derived (names as vta.Environment) ------------------------------------------------
    @property
    def LOG_BLOCK_IN(self) -> int:
        return int(self._values["LOG_BLOCK"])

    @property
    def LOG_BLOCK_OUT(self) -> int:
        return int(self._values["LOG_BLOCK"])

    @property
    def LOG_OUT_WIDTH(self) -> int:
        return int(self._values["LOG_INP_WIDTH"])

    @property
    def BATCH(self) -> int:
        return 1 << int(self._values["LOG_BATCH"])

    @property
    def BLOCK_IN(self) -> int:
        return 1 << self.LOG_BLOCK_IN

    @property
    def BLOCK_OUT(self) -> int:
        return 1 << self.LOG_BLOCK_OUT

    @property
    def INP_WIDTH(self) -> int:
        return 1 << int(self._values["LOG_INP_WIDTH"])

    @property
    def WGT_WIDTH(self) -> int:
        return 1 << int(self._values["LOG_WGT_WIDTH"])

    @property
    def ACC_WIDTH(self) -> int:
        return 1 << int(self._values["LOG_ACC_WIDTH"])

    @property
    def OUT_WIDTH(self) -> int:
        return 1 << self.LOG_OUT_WIDTH

    @property
    def UOP_WIDTH(self) -> int:
        return 32

    @property
    def INS_WIDTH(self) -> int:
        return 128

    @property
    def INP_ELEM_BITS(self) -> int:
        return self.BATCH * self.BLOCK_IN * self.INP_WIDTH

    @property
    def WGT_ELEM_BITS(self) -> int:
        return self.BLOCK_OUT * self.BLOCK_IN * self.WGT_WIDTH

    @property
    def ACC_ELEM_BITS(self) -> int:
        return self.BATCH * self.BLOCK_OUT * self.ACC_WIDTH

    @property
    def OUT_ELEM_BITS(self) -> int:
        return self.BATCH * self.BLOCK_OUT * self.OUT_WIDTH

    @property
    def INP_ELEM_BYTES(self) -> int:
        return self.INP_ELEM_BITS // 8

    @property
    def WGT_ELEM_BYTES(self) -> int:
        return self.WGT_ELEM_BITS // 8

    @property
    def ACC_ELEM_BYTES(self) -> int:
        return self.ACC_ELEM_BITS // 8

    @property
    def OUT_ELEM_BYTES(self) -> int:
        return self.OUT_ELEM_BITS // 8

    @property
    def UOP_ELEM_BYTES(self) -> int:
        return 4

    @property
    def INS_ELEM_BYTES(self) -> int:
        return 16

    @property
    def LOG_OUT_BUFF_SIZE(self) -> int:
        return (int(self._values["LOG_ACC_BUFF_SIZE"]) + self.LOG_OUT_WIDTH
                - int(self._values["LOG_ACC_WIDTH"]))

    @property
    def UOP_BUFF_SIZE(self) -> int:
        return 1 << int(self._values["LOG_UOP_BUFF_SIZE"])

    @property
    def INP_BUFF_SIZE(self) -> int:
        return 1 << int(self._values["LOG_INP_BUFF_SIZE"])

    @property
    def WGT_BUFF_SIZE(self) -> int:
        return 1 << int(self._values["LOG_WGT_BUFF_SIZE"])

    @property
    def ACC_BUFF_SIZE(self) -> int:
        return 1 << int(self._values["LOG_ACC_BUFF_SIZE"])

    @property
    def OUT_BUFF_SIZE(self) -> int:
        return 1 << self.LOG_OUT_BUFF_SIZE

    @property
    def LOG_UOP_BUFF_DEPTH(self) -> int:
        return int(self._values["LOG_UOP_BUFF_SIZE"]) - 5 + 3

    @property
    def LOG_INP_BUFF_DEPTH(self) -> int:
        v = self._values
        return (int(v["LOG_INP_BUFF_SIZE"]) - int(v["LOG_BATCH"]) - self.LOG_BLOCK_IN
                - int(v["LOG_INP_WIDTH"]) + 3)

    @property
    def LOG_WGT_BUFF_DEPTH(self) -> int:
        v = self._values
        return (int(v["LOG_WGT_BUFF_SIZE"]) - self.LOG_BLOCK_OUT - self.LOG_BLOCK_IN
                - int(v["LOG_WGT_WIDTH"]) + 3)

    @property
    def LOG_ACC_BUFF_DEPTH(self) -> int:
        v = self._values
        return (int(v["LOG_ACC_BUFF_SIZE"]) - int(v["LOG_BATCH"]) - self.LOG_BLOCK_OUT
                - int(v["LOG_ACC_WIDTH"]) + 3)

    @property
    def UOP_BUFF_DEPTH(self) -> int:
        return 1 << self.LOG_UOP_BUFF_DEPTH

    @property
    def INP_BUFF_DEPTH(self) -> int:
        return 1 << self.LOG_INP_BUFF_DEPTH

    @property
    def WGT_BUFF_DEPTH(self) -> int:
        return 1 << self.LOG_WGT_BUFF_DEPTH

    @property
    def ACC_BUFF_DEPTH(self) -> int:
        return 1 << self.LOG_ACC_BUFF_DEPTH

    @property
    def OUT_BUFF_DEPTH(self) -> int:
        return self.OUT_BUFF_SIZE // self.OUT_ELEM_BYTES

    @property
    def CLOCK_MHZ(self) -> int:
        return TARGETS[str(self._values["TARGET"])][0]

    @property
    def BUS_WIDTH(self) -> int:
        return TARGETS[str(self._values["TARGET"])][1]

    @property
    def MACS_PER_CYCLE(self) -> int:
        """MACs of one GEMM micro-op (BATCH x BLOCK_IN x BLOCK_OUT)."""
        return self.BATCH * self.BLOCK_IN * self.BLOCK_OUT

    @property
    def TARGET_NAME(self) -> str:
        """The bitstream tag, e.g. ``1x16_i8w8a32_15_15_18_17``."""
        v = self._values
        return (f"{self.BATCH}x{self.BLOCK_IN}_i{self.INP_WIDTH}w{self.WGT_WIDTH}"
                f"a{self.ACC_WIDTH}_{v['LOG_UOP_BUFF_SIZE']}_{v['LOG_INP_BUFF_SIZE']}_"
                f"{v['LOG_WGT_BUFF_SIZE']}_{v['LOG_ACC_BUFF_SIZE']}")
