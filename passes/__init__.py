"""Program transformations (docs/architecture.md#api, #toolchain): the pass manager and the passes.

Every pass is a pure function ``program -> program`` over an ``IRModule`` or an
expression (the same kind comes back; inputs are never mutated). Each pass
lives in its own module with a design note as its docstring.
"""

from __future__ import annotations

from passes.alter_op_layout import alter_op_layout
from passes.bind_params import bind_params
from passes.canonicalize_ops import canonicalize_ops
from passes.combine_parallel_conv2d import combine_parallel_conv2d
from passes.cse import eliminate_common_subexpr
from passes.dead_code import dead_code_elimination
from passes.defuse_ops import defuse_ops
from passes.fold_constant import fold_constant
from passes.fold_scale_axis import fold_scale_axis
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
from passes.simplify_inference import simplify_inference
from passes.to_anf import to_anf
from passes.to_gnf import to_gnf

__all__ = [
    "Pass", "PassError", "PassRecord", "Sequential", "alter_op_layout", "bind_params",
    "canonicalize_ops", "combine_parallel_conv2d", "count_primitive_functions",
    "dead_code_elimination", "defuse_ops", "eliminate_common_subexpr", "fold_constant",
    "fold_scale_axis", "fuse_ops", "get_pass", "inline", "list_passes", "mark_inline",
    "optimize", "register_pass", "simplify_inference", "to_anf", "to_gnf",
]
