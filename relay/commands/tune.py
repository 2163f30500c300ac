"""``relay tune FILE [--params P.npz] [--target T] [--trials N] [--kernels K] [--db DIR]
[--rpc HOST:PORT:KEY] [-O0..-O3]``: tune a program's slowest kernels with MetaSchedule.

Runs :func:`backends.tvm.tune.tuner.tune`: the program's kernels are compiled and timed, the
``K`` kernels furthest from the machine's peak are searched with MetaSchedule (``N`` measured
candidates each; on the devices of a TVM RPC tracker with ``--rpc``), and a tuned kernel is
recorded as a winner only when it computes our kernel's results and beats it in the same run.
The records go to the tuning database ``DIR`` (default ``$RELAY_TUNING_DIR``, else
``~/.cache/relay-ref/tuning``), one sub-directory per target; ``backends.tvm.build(...,
tuning=DIR)`` and ``relay build --tuning DIR`` use the winners. Prints one line per tuned kernel.
``--target`` is as ``relay build``'s (``llvm``: this machine; an LLVM CPU name; ``"llvm
-mcpu=..."``): the records go to that target's sub-directory, and only builds for the same
target read them. Our kernels and the candidates are timed on this machine, so a target with
an instruction set extension this machine lacks is refused.
A malformed ``--rpc`` or a non-positive count is a usage error (exit 2); a damaged database,
an unknown or unusable target or a bad program a user error (exit 1, the message).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from relay.commands.profile import positive_int


def _rpc(text: str) -> Any:
    """``HOST:PORT:KEY`` as an ``RPCSpec`` (a usage error otherwise)."""
    from backends.tvm.tune.search import RPCSpec

    host, sep, rest = text.rpartition(":")
    host, sep2, port = host.rpartition(":")
    key = rest
    if not (sep and sep2 and host and key and port.isdigit() and 0 < int(port) < 65536):
        raise argparse.ArgumentTypeError(f"expected HOST:PORT:KEY (a TVM RPC tracker and the "
                                         f"device key), got {text!r}")
    return RPCSpec(host, int(port), key)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tune", help="tune a program's slowest kernels with MetaSchedule into "
                                    "a tuning database")
    p.add_argument("file", help="a .relay file ('-' for standard input)")
    p.add_argument("--params", metavar="P.npz", default=None,
                   help="main's weights by parameter name (bound as constants)")
    p.add_argument("--target", default="llvm", metavar="TARGET",
                   help="llvm: this machine (default); an LLVM CPU name (znver3, haswell, "
                        "...) or \"llvm -mcpu=CPU [-mattr=...]\": tune for that CPU (its "
                        "kernels must run here)")
    p.add_argument("--trials", type=positive_int, default=32, metavar="N",
                   help="MetaSchedule candidates measured per tuned kernel (default 32)")
    p.add_argument("--kernels", type=positive_int, default=3, metavar="K",
                   help="how many kernels to tune: those furthest from peak (default 3)")
    p.add_argument("--db", metavar="DIR", default=None,
                   help="the tuning database (default $RELAY_TUNING_DIR, else "
                        "~/.cache/relay-ref/tuning)")
    p.add_argument("--rpc", type=_rpc, metavar="HOST:PORT:KEY", default=None,
                   help="measure candidates on the devices of a TVM RPC tracker")
    for level in range(4):
        p.add_argument(f"-O{level}", dest="opt_level", action="store_const", const=level,
                       help=f"optimization level {level}" + (" (default)" if level == 3 else ""))
    p.set_defaults(func=tune_command, opt_level=3)


def tune_command(args: argparse.Namespace) -> int:
    from relay.cli import read_source
    from relay.commands.build import load_params, target_option
    from semantics.errors import RelayError
    from semantics.parser import parse

    mod = parse(read_source(args.file), source_name=args.file)
    params = load_params(args.params)
    try:
        from backends.tvm.tune.tuner import tune
    except ImportError as exc:
        raise RelayError(f"relay tune needs apache-tvm (the 'tvm' extra): {exc}") from None
    target = target_option(args.target)
    _quiet_metaschedule()
    report = tune(mod, params, target=target, trials=args.trials, kernels=args.kernels,
                  db=args.db, rpc=args.rpc, opt_level=args.opt_level,
                  log=lambda line: print(line, file=sys.stderr, flush=True))
    print(report.summary())
    return 0


def _quiet_metaschedule() -> None:
    """MetaSchedule's per-round tables go to its log files only, not to the terminal."""
    import logging

    logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.WARNING)
