"""Program transformations (ARCHITECTURE.md §4, §8): the pass manager and the passes.

Every pass is a pure function ``program -> program`` over an ``IRModule`` or an
expression (the same kind comes back; inputs are never mutated). Each pass
lives in its own module with a design note as its docstring.
"""

from __future__ import annotations

from passes.cse import eliminate_common_subexpr
from passes.dead_code import dead_code_elimination
from passes.fold_constant import fold_constant
from passes.manager import (
    Pass,
    PassError,
    PassRecord,
    Sequential,
    get_pass,
    list_passes,
    optimize,
    register_pass,
)
from passes.to_anf import to_anf
from passes.to_gnf import to_gnf

__all__ = [
    "Pass", "PassError", "PassRecord", "Sequential", "dead_code_elimination",
    "eliminate_common_subexpr", "fold_constant", "get_pass", "list_passes", "optimize",
    "register_pass", "to_anf", "to_gnf",
]
