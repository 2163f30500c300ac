"""The showcase behind `make demo`: parse → type-check → run → trace, end to end.

It walks one small Relay module through every layer of the oracle: the text
format, the type checker with shape-polymorphic definitions, the interpreter
(with the prelude's lists, a closure, a reference and an operator call), and
the rule-by-rule derivation trace.
"""

from __future__ import annotations

import numpy as np

import relay

PROGRAM = """
#[version = "0.0.5"]
def @dense_relu[n](%x: Tensor[(n, 4), float32], %w: Tensor[(3, 4), float32])
    -> Tensor[(n, 3), float32] {
  nn.relu(nn.dense(%x, %w, units=3))
}

def @fact(%n: int32) -> int32 {
  if (%n <= 1) { 1 } else { %n * @fact(%n - 1) }
}

def @main(%x: Tensor[(2, 4), float32], %w: Tensor[(3, 4), float32]) {
  let %counter = ref(0);
  let %tick = fn (%v: int32) -> int32 { %counter := !%counter + %v; %v * 10 };
  let %xs = @map(%tick, Cons(1, Cons(2, Cons(3, Nil))));
  (@dense_relu(%x, %w), @foldl(fn (%a: int32, %b: int32) { %a + %b }, 0, %xs), !%counter, @fact(10))
}
"""


def main() -> None:
    mod = relay.parse(PROGRAM, source_name="demo.relay")
    print("== parsed and re-printed (canonical form) ==")
    print(relay.pretty(mod))

    print("== types ==")
    checked = relay.infer(mod)
    for name, fn in checked.functions.items():
        print(f"  @{name}: {relay.pretty(fn.checked_type)}")

    x = np.arange(8, dtype=np.float32).reshape(2, 4) - 3
    w = np.ones((3, 4), dtype=np.float32)
    dense, total, counter, fact = relay.evaluate(mod, x, w)
    print("== result of @main ==")
    print("  dense_relu:\n", dense)
    print(f"  sum of mapped list = {total}, counter = {counter}, 10! = {fact}")

    print("== derivation of `let %a = 1; %a + %a` (rule names from semantics/RULES.md) ==")
    rules: list[str] = []
    relay.evaluate("def @main() { let %a = 1; %a + %a }",
                   trace=lambda rule, node: rules.append(rule))
    print("  " + " → ".join(rules))

    print("== -O3: the same program optimized (inlining, folding, CSE, DCE, fusion) ==")
    import passes

    records: list = []
    optimized = passes.optimize(mod, 3, on_pass=records.append)
    print(relay.pretty(optimized["main"]))
    print(f"  {passes.count_primitive_functions(optimized)} fused kernel(s); passes run: "
          + ", ".join(r.name for r in records))
    again = relay.evaluate(optimized, x, w)
    same = all(np.array_equal(a, b) for a, b in zip(again, (dense, total, counter, fact)))
    print(f"  same result as the unoptimized program: {same}")

    print("== a type error, as a student sees it ==")
    try:
        relay.check(relay.parse("def @main(%x: float32) { add(%x, 1) }", source_name="bad.relay"))
    except relay.RelayTypeError as err:
        print(err)


if __name__ == "__main__":
    main()
