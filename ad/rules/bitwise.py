"""Rules of the ``bitwise`` family (``right_shift``, ``left_shift``, ``bitwise_and/or/xor``):
none, by declaration.

Their operands and results are integer (or bool) tensors, which carry no derivative in this
project (every rule returns no adjoint for an integer operand), so both tables record the
reason instead of a rule.
"""

from __future__ import annotations

from semantics.ops.tables import declare_no_gradient, declare_no_tangent

_INTEGER_REASON = "its operands and result are integer or bool tensors, which carry no derivative"
for _name in ("right_shift", "left_shift", "bitwise_and", "bitwise_or", "bitwise_xor"):
    declare_no_gradient(_name, _INTEGER_REASON)
    declare_no_tangent(_name, _INTEGER_REASON)
