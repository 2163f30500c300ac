"""Program transformations (ARCHITECTURE.md §4, §8): the pass manager and the passes.

Every pass is a pure function ``program -> program`` over an ``IRModule`` or an
expression (the same kind comes back; inputs are never mutated). Each pass
lives in its own module with a design note as its docstring.
"""

from __future__ import annotations

from passes.cse import eliminate_common_subexpr
from passes.dead_code import dead_code_elimination
from passes.fold_constant import fold_constant
from passes.fuse_ops import count_primitive_functions, fuse_ops
from passes.inline import inline, mark_inline
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

__all__ = [
    "Pass", "PassError", "PassRecord", "Sequential", "count_primitive_functions",
    "dead_code_elimination",
    "eliminate_common_subexpr", "fold_constant", "fuse_ops", "get_pass", "inline", "list_passes",
    "mark_inline", "optimize", "register_pass",
]
