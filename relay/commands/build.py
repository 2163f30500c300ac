"""``relay build FILE -o DIR [-O0..-O3] [--executor vm|graph|aot] [--params P.npz]
[--target T] [--show-kernels] [--tuning DIR]`` and the TVM side of ``relay run FILE
--backend tvm [--params P.npz]`` (docs/architecture.md#cli).

``relay build`` compiles a program with ``backends.tvm.build`` (optimization at the
chosen level — ``-O3`` by default, as ``relay opt`` —, fusion, one kernel per fused group,
the numpy fallback where a group does not lower) and saves the build to ``DIR``
(``Executable.save``: the fused program, the kernels, and for ``--executor aot`` the
generated Python module). While kernels compile, a progress bar (``tqdm``, on standard
error) counts them — only when standard output and standard error are terminals. It ends
with a summary: the kernels compiled now and those found in the kernel cache, the time of
each phase, and every fused group that runs on the numpy references with the reason.
``--show-kernels`` lists each fused kernel: its operators and the schedule recipe it got,
with every recipe that declined or failed and every schedule step TVM refused.

``--target`` (:func:`target_option`) is ``llvm`` (the machine running ``relay``, the
default), an LLVM CPU name (``znver3``, ``haswell``, ``skylake-avx512``, ``cascadelake``),
TVM's ``"llvm -mcpu=CPU -mattr=+f,..."`` form, or ``vta``; the build is compiled for that
:class:`~backends.tvm.target.Target` record (and runs on machines with its instruction set
extensions). A CPU name LLVM does not know is a user error (exit 1) naming the closest ones.
With ``--tuning`` the records of that target are read.

``relay run --backend tvm`` builds in memory (the VM executor) and runs the entry on the
arguments, printing the result as the interpreter's ``relay run`` does. ``--params``
names a ``.npz`` archive of ``main``'s weights by parameter name.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("build", help="compile a Relay program with the TVM backend")
    p.add_argument("file", help="a .relay file ('-' for standard input)")
    p.add_argument("-o", "--output", default=None, metavar="DIR",
                   help="the directory to write the build to (required but for --target vta)")
    p.add_argument("--target", default="llvm", metavar="TARGET",
                   help="llvm: the TVM backend for this machine (default); an LLVM CPU name "
                        "(znver3, skylake-avx512, ...) or \"llvm -mcpu=CPU [-mattr=...]\": "
                        "the TVM backend for that CPU; vta: the VTA accelerator (simulated), "
                        "printing its statistics")
    p.add_argument("--vta-config", nargs="+", metavar="K=V", default=None,
                   help="--target vta: vta_config.json keys, e.g. TARGET=ultra96 LOG_BLOCK=4")
    for level in range(4):
        p.add_argument(f"-O{level}", dest="opt_level", action="store_const", const=level,
                       help=f"optimization level {level}" + (" (default)" if level == 3 else ""))
    p.add_argument("--executor", choices=("vm", "graph", "aot"), default="vm",
                   help="vm: the whole language; graph: first-order dataflow with memory "
                        "planning; aot: a generated Python module (default: vm)")
    p.add_argument("--params", metavar="P.npz", default=None,
                   help="main's weights by parameter name (bound as constants)")
    p.add_argument("--show-kernels", action="store_true",
                   help="list every fused kernel with its operators and schedule")
    p.add_argument("--tuning", metavar="DIR", default=None,
                   help="a tuning database made by `relay tune`: kernels whose tuned "
                        "schedule won compile from it")
    p.set_defaults(func=build_command, opt_level=3)


def load_params(path: str | None) -> dict[str, np.ndarray] | None:
    """The arrays of a ``.npz`` archive by name (None without a path).

    Raises:
        RelayRuntimeError: the file is not a readable ``.npz`` archive.
    """
    from semantics.errors import RelayRuntimeError

    if path is None:
        return None
    import zipfile

    try:
        with np.load(path, allow_pickle=False) as archive:
            if not hasattr(archive, "files"):
                raise ValueError("not an .npz archive (a single .npy array)")
            return {name: np.array(archive[name]) for name in archive.files}
    except (OSError, ValueError, AttributeError, EOFError, zipfile.BadZipFile, KeyError,
            TypeError) as exc:
        # an empty file is EOFError, a truncated archive BadZipFile (or OSError/ValueError)
        reason = str(exc) or type(exc).__name__
        raise RelayRuntimeError(f"--params: cannot read {path}: {reason}") from None


def target_option(text: str) -> Any:
    """``--target``'s value (``relay build``, ``relay tune``) as a
    :class:`~backends.tvm.target.Target`: ``llvm`` is the host; a value starting with
    ``llvm `` is TVM's command-line form; anything else an LLVM CPU name.

    Raises:
        TargetError: an unknown CPU, a malformed ``llvm ...`` form (a ``RelayError``).
    """
    from backends.tvm.target import Target

    text = text.strip()
    if text == "llvm" or text.startswith("llvm "):
        return Target.of(text)
    return Target.of({"kind": "llvm", "mcpu": text})


def build_command(args: argparse.Namespace) -> int:
    from backends.tvm import build
    from relay.cli import read_source
    from semantics.parser import parse

    start = time.perf_counter()
    mod = parse(read_source(args.file), source_name=args.file)
    parsed = time.perf_counter() - start
    if args.target == "vta":
        from backends.vta.cli import build_vta

        return build_vta(mod, load_params(args.params), args.vta_config, args.output)
    if args.output is None:
        print("relay build: error: -o DIR is required", file=sys.stderr)
        return 2
    target = target_option(args.target)
    with ProgressBar("compiling kernels") as progress:
        exe = build(mod, params=load_params(args.params), target=target,
                    opt_level=args.opt_level, executor=args.executor, progress=progress,
                    tuning=args.tuning)
    start = time.perf_counter()
    exe.save(args.output)
    saved = time.perf_counter() - start
    phases = {"parse": parsed, **(exe.report.phases if exe.report else {}), "save": saved}
    print(summary(exe, args.output, phases))
    if args.show_kernels:
        print(kernel_listing(exe))
    return 0


class ProgressBar:
    """A context manager giving a ``progress(done, total)`` callback for ``build``: a
    ``tqdm`` bar on standard error when standard output and standard error are terminals
    and ``tqdm`` is installed, else None (no output at all)."""

    def __init__(self, title: str):
        self.title = title
        self.bar: Any = None

    def __enter__(self) -> Callable[[int, int], None] | None:
        if not (_is_terminal(sys.stdout) and _is_terminal(sys.stderr)):
            return None
        try:
            import tqdm
        except ImportError:
            return None
        tqdm_cls = tqdm.tqdm

        def progress(done: int, total: int) -> None:
            if self.bar is None:
                # A terminal that reports no size (0 x 0, as some pseudo-terminals do; tqdm
                # then draws nothing) counts as 80 x 24.
                size = shutil.get_terminal_size()
                self.bar = tqdm_cls(total=total, desc=self.title, unit="kernel",
                                    file=sys.stderr, leave=False,
                                    ncols=min(100, size.columns), nrows=size.lines)
            self.bar.update(done - self.bar.n)

        return progress

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def summary(exe: Any, output: str, phases: dict[str, float]) -> str:
    """``relay build``'s closing summary (see the module docstring)."""
    report = exe.report
    compiled = exe.kernels.compiled
    lines = [f"built {output}: executor {exe.executor}, -O{exe.opt_level}, "
             f"{compiled} compiled kernel{'s' if compiled != 1 else ''}, "
             f"{len(exe.fallbacks)} numpy fallback{'s' if len(exe.fallbacks) != 1 else ''}"]
    if report is not None:
        failed = (f", {report.kernels_failed} TVM could not compile"
                  if report.kernels_failed else "")
        lines.append(f"  kernels: {report.kernels_compiled} compiled now, "
                     f"{report.kernels_cached} from the kernel cache{failed}")
    total = sum(phases.values())
    lines.append("  time: " + ", ".join(f"{name} {secs:.2f} s" for name, secs in phases.items())
                 + f" (total {total:.2f} s)")
    if exe.fallbacks:
        lines.append("  fell back to the numpy references:")
        counts: dict[tuple[str, str], int] = {}
        for name, reason in exe.fallbacks:
            counts[(name, reason)] = counts.get((name, reason), 0) + 1
        for (name, reason), n in counts.items():
            lines.append(f"    {name}{f' (x{n})' if n > 1 else ''}: {reason}")
    return "\n".join(lines)


def kernel_listing(exe: Any) -> str:
    """``--show-kernels``: each kernel of the build, its operators and its schedule."""
    lines = [f"{len(exe.kernels.records)} kernels:"]
    for i, rec in enumerate(exe.kernels.records):
        ops = " + ".join(rec.ops) or "(no operator)"
        if rec.fallback is not None:
            lines.append(f"  {i:3} {rec.name}  {ops}\n        numpy fallback: {rec.fallback}")
            continue
        sched = rec.schedule
        if sched is None:
            lines.append(f"  {i:3} {rec.name}  {ops}\n        schedule: not recorded (a kernel "
                         f"cached before schedules were recorded)")
            continue
        lines.append(f"  {i:3} {rec.name}  {ops}\n        schedule: {_short_rule(sched.chosen)}")
        for rule, reason in sched.declined:
            lines.append(f"        not {_short_rule(rule)}: {reason}")
        for step, reason in sched.refused:
            lines.append(f"        TVM refused {step}: {reason}")
    return "\n".join(lines)


def _short_rule(name: str) -> str:
    prefix = "backends.tvm.sched."
    return name[len(prefix):] if name.startswith(prefix) else name


def run_tvm(mod: Any, values: list[Any], entry: str, params_path: str | None) -> Any:
    """``relay run --backend tvm``: build ``mod`` (VM executor) and run ``entry``."""
    from backends.tvm import build

    exe = build(mod, params=load_params(params_path), executor="vm")
    return exe.run(entry, *values)
