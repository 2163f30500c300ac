"""Rules of the memory dialect (``semantics/ops/memory.py``).

* ``vm.reshape_tensor`` is a reshape: its gradient is ``reshape_like(g, data)`` and its
  tangent the operator applied to the data's tangent; the shape tensor carries none
  (:func:`ad.rules.transform.reshape_back`).
* ``vm.shape_of``: no rule (an integer result), as ``shape_of``.
* ``memory.alloc_storage``, ``memory.alloc_tensor``, ``memory.kill``: no rule.  Their values
  are storage regions, uninitialized tensors and ``()``: nothing a derivative could flow
  through, and TVM's VM compiler emits them after differentiation.
"""

from __future__ import annotations

from ad.rules.transform import reshape_back
from semantics.ops.tables import declare_no_gradient, declare_no_tangent

reshape_back("vm.reshape_tensor")

_REASONS = {
    "vm.shape_of": "its result is an integer tensor of the argument's shape",
    "memory.alloc_storage": "it allocates memory: a storage has no derivative",
    "memory.alloc_tensor": "its value is the storage's bytes, which depend on no "
                           "differentiable input",
    "memory.kill": "it frees a value and returns (): nothing to differentiate",
}

for _name, _reason in _REASONS.items():
    declare_no_gradient(_name, _reason)
    declare_no_tangent(_name, _reason)
