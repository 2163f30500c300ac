"""The VTA backend (issue 30): the accelerator's ISA, a bit-exact functional simulator with a
cycle model, and a compiler from quantized Relay (docs/architecture.md#toolchain; docs/vta.md).

``build(qmod, params=None, config=None)`` offloads int8 ``nn.conv2d``/``nn.dense`` with their
integer epilogues to the simulated accelerator and runs the rest on the CPU;
:class:`Config` is ``vta_config.json``; :class:`Simulator` runs instruction streams;
:mod:`isa` encodes, decodes and disassembles them; ``exe.save(path)`` and ``load(path)`` write
and read a build.
"""

from __future__ import annotations

from backends.vta import isa
from backends.vta.build import VTAExecutable, build, load
from backends.vta.config import Config
from backends.vta.simulator import Simulator

__all__ = ["build", "load", "Config", "Simulator", "isa", "VTAExecutable"]
