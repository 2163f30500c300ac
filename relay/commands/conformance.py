"""``relay conformance``: run the conformance kit against a pass or an external implementation.

Usage::

    relay conformance --pass NAME [--pass NAME ...]   # registered transforms
    relay conformance --pass MODULE:FUNCTION          # any callable IRModule -> IRModule
    relay conformance --pass path/to/file.py:FUNCTION
    relay conformance --impl "CMD"                    # another implementation
    relay conformance --coverage                      # which rules/operators the generator reaches,
                                                      # per operator: argument kinds, value classes
    relay conformance --list                          # the registered transforms

Without ``--pass``/``--impl``/``--coverage`` every registered transform is checked.
Exit status: 0 when everything agrees with the oracle, 1 on a disagreement (the
shrunk counterexample is printed as Relay text with its inputs and both
outcomes), 2 for usage errors (an unknown transform name, a ``--pass`` that cannot be
loaded). ``--shrink-time S`` bounds the time spent minimising a counterexample;
``--json OUT`` writes a machine-readable report (each check: pass/fail, time, the
counterexample), ``--gradescope OUT`` the same results in the shape of Gradescope's
autograder ``results.json`` (docs/assignments.md).

An external implementation that hangs, crashes or breaks the protocol is a
disagreement too, reported with a one-line verdict (``timeout after 1 s on
request 1``, ``crashed with exit code 3``, ``invalid UTF-8 at byte 20``, ...)
and the program; the run never ends in a traceback and its wall time is bounded
(see ``conformance.external`` and docs/conformance.md).
"""

from __future__ import annotations

import argparse
import sys
import time


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("conformance", help="differential-test a pass or an implementation "
                                           "against the oracle with generated programs")
    p.add_argument("--pass", dest="passes", action="append", default=[], metavar="NAME",
                   help="a registered transform (see --list), MODULE:FUNCTION or "
                        "path/to/file.py:FUNCTION (a callable IRModule -> IRModule); "
                        "repeatable")
    p.add_argument("--impl", metavar="CMD",
                   help="an external implementation speaking the JSON-lines protocol "
                        "(docs/conformance.md)")
    p.add_argument("--coverage", action="store_true",
                   help="report which evaluation rules and operators generated programs reach "
                        "and, per operator, the argument kinds and value classes exercised")
    p.add_argument("--list", action="store_true", help="list the registered transforms")
    p.add_argument("--max-examples", type=int, default=100, metavar="N",
                   help="generated programs per check (default 100)")
    p.add_argument("--seed", type=int, default=None, help="generator seed (default: fixed)")
    p.add_argument("--float", dest="float_mode", action="store_true",
                   help="float-heavy programs compared with tolerances")
    p.add_argument("--exact-floats", action="store_true",
                   help="compare floats bitwise instead of with tolerances")
    p.add_argument("--timeout", type=float, default=20.0, metavar="S",
                   help="seconds an external implementation may take per program (per "
                        "request, not per session); a timeout stops the run at once")
    p.add_argument("--startup-timeout", type=float, default=5.0, metavar="S",
                   help="extra seconds for the first program after the implementation "
                        "(re)starts (default 5)")
    p.add_argument("--max-failures", type=int, default=30, metavar="N",
                   help="crashes/malformed answers of an external implementation tolerated "
                        "while shrinking before the latest one is reported (default 30)")
    p.add_argument("--shrink-time", type=float, default=15.0, metavar="S",
                   help="seconds spent minimising a counterexample once found (Hypothesis's "
                        "shrinking, then the program reducer); the smallest so far is "
                        "reported when they are spent (default 15)")
    p.add_argument("--json", dest="json_out", metavar="OUT",
                   help="also write a JSON report to OUT (each check: status, time, "
                        "counterexample)")
    p.add_argument("--gradescope", metavar="OUT",
                   help="also write the results as a Gradescope autograder results.json")
    p.set_defaults(func=run)


def _transforms() -> list:
    """The kit's registered transforms, then every pass of ``passes`` (by its function name)."""
    import passes
    from conformance.transforms import Transform, list_transforms

    out = list(list_transforms())
    known = {t.name for t in out}
    for p in passes.list_passes():
        if p.func_name not in known:
            out.append(Transform(p.func_name, p, p.doc))
    return out


def _transform(name: str) -> object:
    """The transform or pass called ``name`` (a pass by TVM's name or ours), or the callable
    ``MODULE:FUNCTION`` / ``path/to/file.py:FUNCTION`` names (``TransformLoadError``)."""
    import passes
    from conformance.transforms import Transform, get_transform, load_transform
    from semantics.errors import RelayError

    if ":" in name:
        return load_transform(name)

    try:
        return get_transform(name)
    except KeyError:
        try:
            p = passes.get_pass(name)
        except RelayError:
            known = ", ".join(t.name for t in _transforms())
            raise KeyError(f"unknown transform or pass {name!r} (known: {known})") from None
        return Transform(p.func_name, p, p.doc)


def _usage_error(args: argparse.Namespace) -> str | None:
    """The message of a usage error in the numeric options, or ``None``."""
    if args.max_examples < 1:
        return "--max-examples must be at least 1"
    if args.timeout <= 0 or args.startup_timeout < 0 or args.max_failures < 1:
        return ("--timeout must be positive, --startup-timeout not negative and "
                "--max-failures at least 1")
    return None


def _coverage(args: argparse.Namespace) -> int:
    """``--coverage``: print the generator's coverage report; 1 when a rule or an operator
    is never reached."""
    from conformance.coverage import coverage
    from conformance.strategies.programs import ProgramConfig as CoverageConfig

    report = coverage(max_examples=args.max_examples,
                      config=CoverageConfig(float_mode=True) if args.float_mode else None)
    print(report)
    return 0 if not report.rules_missing and not report.ops_missing else 1


def run(args: argparse.Namespace) -> int:

    problem = _usage_error(args)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    if args.list:
        for t in _transforms():
            print(f"{t.name:<26} {t.doc}")
        return 0
    if args.coverage:
        return _coverage(args)

    from conformance.strategies.programs import ProgramConfig
    from semantics.errors import RelayError

    config = ProgramConfig(float_mode=args.float_mode)
    seed = args.seed if args.seed is not None else 0
    checks: list[tuple[str, object]] = []  # (label, transform)
    try:
        for name in args.passes:
            t = _transform(name)
            checks.append((f"pass {t.name}", t))  # type: ignore[attr-defined]
    except KeyError as err:
        print(f"error: {err.args[0]}", file=sys.stderr)
        return 2
    except RelayError as err:
        print(f"error: {err.message}", file=sys.stderr)
        return 2
    if args.shrink_time < 0:
        print("error: --shrink-time must not be negative", file=sys.stderr)
        return 2
    impl = None
    if args.impl:
        from conformance.external import ExternalImpl

        impl = ExternalImpl(args.impl, timeout=args.timeout,
                            startup_timeout=args.startup_timeout,
                            max_failures=args.max_failures)
        checks.append((f"implementation {args.impl!r}", impl.transform))
    if not checks:
        checks = [(f"pass {t.name}", t) for t in _transforms()]
    results: list[dict] = []
    started = time.monotonic()
    try:
        for label, transform in checks:
            result = _check(label, transform, args, config, seed)
            results.append(result)
            if result["status"] == "fail":
                print(f"FAIL {label}\n\n{result['report']}\n")
            else:
                print(f"ok   {label}: {args.max_examples} generated programs agree "
                      "with the oracle")
            sys.stdout.flush()
    finally:
        if impl is not None:
            impl.close()
    failed = sum(r["status"] == "fail" for r in results)
    summary = {"ok": not failed, "passed": len(results) - failed, "failed": failed,
               "seed": seed, "max_examples": args.max_examples,
               "seconds": round(time.monotonic() - started, 3), "checks": results}
    if not _write_reports(args, summary):
        return 2
    return 1 if failed else 0


def _check(label: str, transform: object, args: argparse.Namespace, config: object,
           seed: int) -> dict:
    """One check of the run: ``transform`` against the oracle on generated programs; its
    result (name, status, counterexample, report, seconds) as the JSON report holds it."""
    from hypothesis.errors import HypothesisException

    from conformance.external import ImplementationAborted
    from conformance.harness import Disagreement, assert_equivalent

    t0 = time.monotonic()
    result: dict = {"name": label, "status": "pass", "counterexample": None}
    try:
        assert_equivalent(transform, config=config,  # type: ignore[arg-type]
                          max_examples=args.max_examples, name=label,
                          exact_floats=args.exact_floats, seed=seed,
                          shrink_time=args.shrink_time)
    except Disagreement as err:
        result["status"] = "fail"
        result["counterexample"] = err.to_json()
        result["report"] = str(err)
    except AssertionError as err:
        result["status"] = "fail"
        result["report"] = str(err)
    except ImplementationAborted as abort:
        result["status"] = "fail"
        result["report"] = abort.report()
    except HypothesisException as err:
        # e.g. Flaky: a failure that did not happen again on replay.
        inner = getattr(err, "exceptions", None) or ()
        first = f"\n\nthe first failure:\n{inner[0]}" if inner else ""
        result["status"] = "fail"
        result["report"] = (
            "the outcome is not reproducible (a nondeterministic or time-dependent "
            "implementation?): a failure did not happen again when replayed "
            f"({type(err).__name__}){first}")
    result["seconds"] = round(time.monotonic() - t0, 3)
    return result


def _write_reports(args: argparse.Namespace, summary: dict) -> bool:
    """Write the ``--json`` and ``--gradescope`` reports asked for; ``False`` (after an
    error message) when one cannot be written."""
    try:
        if args.json_out:
            _write_json(args.json_out, summary)
        if args.gradescope:
            _write_json(args.gradescope, gradescope_results(summary))
    except OSError as err:
        print(f"error: cannot write the report: {err}", file=sys.stderr)
        return False
    return True


def _write_json(path: str, data: dict) -> None:
    import json

    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2)
        f.write("\n")


def gradescope_results(summary: dict) -> dict:
    """The summary of a run in the shape of Gradescope's autograder ``results.json``:
    one test per check (score 1 when it passes), the counterexample as its output."""
    tests = []
    for r in summary["checks"]:
        passed = r["status"] == "pass"
        tests.append({"name": r["name"], "score": 1 if passed else 0, "max_score": 1,
                      "status": "passed" if passed else "failed",
                      "execution_time": r["seconds"],
                      "output": (f"{summary['max_examples']} generated programs agree with "
                                 "the oracle") if passed else r.get("report", "")})
    return {"score": sum(t["score"] for t in tests), "max_score": len(tests),
            "execution_time": summary["seconds"], "tests": tests,
            "output": f"seed {summary['seed']}, {summary['max_examples']} programs per check"}
