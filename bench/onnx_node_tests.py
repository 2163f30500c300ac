"""Run every ONNX node test case (``onnx.backend.test.case.node.collect_testcases()``)
through ``frontends.onnx.from_onnx`` and the reference interpreter.

Prints the pass rate over the supported cases (those whose operators the importer knows),
the acceptance scope (every node in the default domain, a model of default opset 9–21: its
count, how many pass, and each that does not with the reason), the failures grouped by
operator with their reasons, and the cases that are not supported grouped by operator.
``--write-list`` rewrites ``tests/frontends/onnx_node_passing.txt``, the checked-in list
of passing cases that ``tests/frontends/test_onnx_node_cases.py`` keeps from regressing. Usage::

    PYTHONPATH=. python bench/onnx_node_tests.py [--write-list] [--only SUBSTRING]
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import sys
import time
import warnings

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

LIST = pathlib.Path(__file__).resolve().parents[1] / "tests/frontends/onnx_node_passing.txt"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write-list", action="store_true")
    ap.add_argument("--only", default="", help="run only cases whose name contains this")
    ap.add_argument("--light", action="store_true",
                    help="also run the light real models (onnx/backend/test/data/light) and "
                         "time the import of a ResNet-50 with real initializers")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    if args.light:
        light()
    from frontends.onnx.node_tests import SCOPE, collect, run_case

    start = time.perf_counter()
    outcomes = [run_case(c) for c in collect() if args.only in c.name]
    total = time.perf_counter() - start
    by_status = collections.Counter(o.status for o in outcomes)
    supported = [o for o in outcomes if o.status != "unsupported"]
    passed = [o for o in supported if o.status == "pass"]
    print(f"{len(outcomes)} cases in {total:.1f} s: {dict(by_status)}")
    if supported:
        print(f"supported: {len(supported)}; passing: {len(passed)} "
              f"({100.0 * len(passed) / len(supported):.1f}%); "
              f"of them with inputs frozen as constants: {sum(o.frozen for o in passed)}")
    scoped = [o for o in outcomes if o.in_scope]
    scoped_pass = [o for o in scoped if o.status == "pass"]
    print(f"in scope (default domain, model opset {SCOPE[0]}-{SCOPE[1]}): {len(scoped)} "
          f"cases; passing: {len(scoped_pass)}; not passing:")
    for o in sorted(scoped, key=lambda o: (o.op, o.name)):
        if o.status != "pass":
            print(f"    {o.op}: {o.name} [{o.status}] {o.reason[:160]}")
    failing: dict[str, list[str]] = collections.defaultdict(list)
    for o in supported:
        if o.status != "pass":
            failing[o.op].append(f"{o.name} [{o.status}] {o.reason}")
    print("\nsupported operators, failing cases:")
    for op in sorted(failing):
        print(f"  {op} ({len(failing[op])})")
        for line in failing[op]:
            print(f"    {line}")
    unsupported = collections.Counter(o.op for o in outcomes if o.status == "unsupported")
    reasons = {}
    for o in outcomes:
        if o.status == "unsupported":
            reasons.setdefault(o.op, o.reason)
    print("\nunsupported (by operator: cases, first reason):")
    for op, n in sorted(unsupported.items()):
        print(f"  {op} ({n}): {reasons[op]}")
    if args.write_list:
        LIST.write_text("".join(f"{o.name}\n" for o in sorted(passed, key=lambda o: o.name)))
        print(f"\nwrote {len(passed)} names to {LIST}")
    return 0


def resnet50_with_initializers() -> object:
    """light_resnet50 with its ``ConstantOfShape`` weights turned into real (random)
    initializers: a ResNet-50-sized ONNX model as exporters write them."""
    import numpy as np
    from onnx import helper, numpy_helper

    from frontends.onnx.light_models import load

    model, _, _ = load("resnet50")
    g = model.graph
    shapes = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    rng = np.random.default_rng(0)
    shape_inputs = {n.input[0] for n in g.node if n.op_type == "ConstantOfShape"}
    nodes = []
    inits = [i for i in g.initializer if i.name not in shape_inputs]
    for n in g.node:
        if n.op_type == "ConstantOfShape":
            shape = tuple(int(d) for d in shapes[n.input[0]])
            inits.append(numpy_helper.from_array(
                (rng.standard_normal(shape) * 0.01).astype(np.float32), n.output[0]))
        else:
            nodes.append(n)
    made = {n.output[0] for n in g.node if n.op_type == "ConstantOfShape"}
    kept = {i.name for i in inits}
    data = [vi for vi in g.input if vi.name not in shapes and vi.name not in made
            and vi.name not in kept]
    graph = helper.make_graph(nodes, "resnet50", data, list(g.output), inits)
    return helper.make_model(graph, opset_imports=list(model.opset_import))


def light() -> None:
    from frontends.onnx import from_onnx
    from frontends.onnx.light_models import NAMES, run, run_randomized

    m = resnet50_with_initializers()
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        mod, params = from_onnx(m)
        times.append(time.perf_counter() - t0)
    print(f"ResNet-50 (real initializers, {len(m.graph.node)} nodes, {len(params)} params): "
          f"import {min(times):.2f} s (best of 3; runs {', '.join(f'{t:.2f}' for t in times)})")
    import tempfile

    import onnx

    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/resnet50.onnx"
        onnx.save(m, path)
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            from_onnx(path)
            times.append(time.perf_counter() - t0)
    print(f"ResNet-50 from its .onnx file (load + import): {min(times):.2f} s (best of 3; runs "
          f"{', '.join(f'{t:.2f}' for t in times)})")
    for name in NAMES:
        try:
            r = run(name)
            print(f"light {name}: ok  import {r['import_s']:.2f} s  check {r['check_s']:.2f} s  "
                  f"oracle {r['eval_s']:.1f} s  max |err| {r['max_abs_err']:.2g}")
        except Exception as err:  # noqa: BLE001 - report and go on
            print(f"light {name}: FAILED {type(err).__name__}: {str(err)[:300]}")
        try:
            r = run_randomized(name)
            print(f"light {name} (random weights) vs onnxruntime: ok  max |err| "
                  f"{r['max_abs_err']:.2g}  output spread {r['output_spread']:.3g}")
        except Exception as err:  # noqa: BLE001 - report and go on
            print(f"light {name} (random weights): FAILED {type(err).__name__}: "
                  f"{str(err)[:300]}")


if __name__ == "__main__":
    sys.exit(main())
