"""A deliberately broken implementation: it evaluates ``add`` as ``subtract`` and vice versa.

The conformance kit must catch it with a small counterexample::

    relay conformance --impl "python examples/external/broken_impl.py"

Graders can use it to check that their setup really detects wrong answers.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from conformance.external import handle_request  # noqa: E402
from semantics.expr import Call, Expr, Op  # noqa: E402
from semantics.module import IRModule  # noqa: E402
from semantics.visitor import ExprMutator  # noqa: E402

SWAP = {"add": "subtract", "subtract": "add"}


class _SwapAddSubtract(ExprMutator):
    def visit_call(self, new: Expr, old: Expr) -> Expr:
        assert isinstance(new, Call)
        if isinstance(new.op, Op) and new.op.name in SWAP:
            return Call(Op(SWAP[new.op.name]), new.args, new.attrs, new.type_args,
                        span=new.span)
        return new


def swap_add_subtract(mod: IRModule) -> IRModule:
    """Every ``add`` call becomes ``subtract`` and every ``subtract`` becomes ``add``."""
    mutator = _SwapAddSubtract()
    return mod.with_functions({name: mutator.mutate(fn)  # type: ignore[misc]
                               for name, fn in mod.functions.items()})


def main() -> int:
    for line in sys.stdin:
        if not line.strip():
            continue
        sys.stdout.write(handle_request(line, rewrite=swap_add_subtract) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
