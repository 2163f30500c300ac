"""Lowerings of the memory dialect (``semantics/ops/memory.py``) for ``llvm``.

* ``vm.shape_of`` lowers as ``shape_of`` (a constant of the specialized argument shape).
* ``vm.reshape_tensor`` has no lowering: its shape argument must be checked against
  ``newshape`` at run time, which the fallback kernel (the reference) does.
* ``memory.alloc_storage``, ``memory.alloc_tensor``, ``memory.kill`` (:data:`MEMORY_DIALECT`):
  no lowering.  The TVM backend plans and frees memory itself:
  :func:`backends.tvm.build.lower_memory_dialect` replaces ``memory.kill(e)`` by
  ``let %_ = e; ()`` and refuses the two allocations with a ``RelayTypeError`` naming the
  operator (the reference interpreter runs them).
"""

from __future__ import annotations

from backends.tvm.lower.base import TARGET, no_lowering
from backends.tvm.lower.transform import shape_of_rule
from semantics.ops.tables import LOWERINGS

MEMORY_DIALECT = ("memory.alloc_storage", "memory.alloc_tensor", "memory.kill")

LOWERINGS.add("vm.shape_of", shape_of_rule, TARGET)
no_lowering("vm.reshape_tensor", "the shape tensor is checked against newshape at run time; "
                                 "the reference runs as the fallback kernel")
for _name in MEMORY_DIALECT:
    no_lowering(_name, "the TVM backend plans memory itself: build drops memory.kill and "
                       "refuses explicit allocation (the reference interpreter runs it)")
