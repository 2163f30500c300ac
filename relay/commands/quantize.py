"""``relay quantize FILE [--params P.npz] --bits 8/32 --calibrate global_scale|mse|kl
[--data X.npz] [--global-scale S] [--rounding MODE] [-o OUT.relay]``.

Quantizes ``main`` with :func:`passes.quantize.quantize` and prints the integer program (or
writes it to ``OUT.relay``). ``--bits m/n``: m-bit inputs and weights, an n-bit accumulator
(``docs/quantization.md``). ``--data``: the calibration inputs — a ``.npz`` (or ``.npy``)
whose every array is either one whole value of ``main``'s first parameter or a stack of
such values along a leading axis. Without ``--data`` only ``global_scale`` works (the scale
``--global-scale`` itself). A malformed ``--bits`` is a usage error (exit 2); a bad
configuration, archive or program is a user error (exit 1, the ``RelayError`` message).
"""

from __future__ import annotations

import argparse
import re
from typing import Any

import numpy as np


def _bits(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"\s*(\d{1,3})\s*/\s*(\d{1,3})\s*", text)
    if match is None:
        raise argparse.ArgumentTypeError(f"expected m/n such as 8/32, got {text!r}")
    return int(match.group(1)), int(match.group(2))


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("quantize", help="quantize a program (annotate, calibrate, realize)")
    p.add_argument("file", help="a .relay file ('-' for standard input)")
    p.add_argument("--params", metavar="P.npz", default=None,
                   help="main's weights by parameter name (bound as constants)")
    p.add_argument("--bits", type=_bits, default=(8, 32), metavar="M/N",
                   help="m-bit inputs and weights, n-bit accumulators (default 8/32)")
    p.add_argument("--calibrate", choices=("global_scale", "mse", "kl"),
                   default="global_scale", help="the calibrator (default: global_scale)")
    p.add_argument("--data", metavar="X.npz", default=None,
                   help="calibration inputs for main's first parameter")
    p.add_argument("--global-scale", type=float, default=8.0, metavar="S",
                   help="the range the global_scale sweep starts from (default 8.0)")
    p.add_argument("--rounding", choices=("round", "floor", "ceil", "stochastic"),
                   default="round", help="simQ rounding (default: round)")
    p.add_argument("-o", "--output", metavar="OUT.relay", default=None,
                   help="write the program here instead of standard output")
    p.set_defaults(func=quantize_command)


def load_dataset(path: str, mod: Any) -> list[np.ndarray]:
    """The calibration inputs in ``path`` for ``mod``'s ``main`` (see the module docstring).

    Raises:
        QuantizeError: an unreadable archive, or arrays of the wrong shape.
    """
    from passes.quantize import QuantizeError
    from passes.quantize.simq import static_shape

    try:
        if path.endswith(".npy"):
            arrays = [np.load(path, allow_pickle=False)]
        else:
            with np.load(path, allow_pickle=False) as archive:
                arrays = [np.array(archive[name]) for name in archive.files]
    except (OSError, ValueError, AttributeError, EOFError) as exc:
        raise QuantizeError(f"--data: cannot read {path}: {exc}") from None
    main = mod["main"]
    if not main.params:
        raise QuantizeError("--data: main takes no input")
    shape = static_shape(main.params[0].type_annotation)
    if shape is None:
        raise QuantizeError("--data: main's first parameter is not a tensor of known shape")
    out: list[np.ndarray] = []
    for arr in arrays:
        if arr.shape == shape:
            out.append(arr)
        elif arr.shape[1:] == shape:
            out.extend(arr[i] for i in range(arr.shape[0]))
        else:
            raise QuantizeError(f"--data: an array of shape {arr.shape} is neither a value "
                                f"of shape {shape} nor a stack of them")
    if not out:
        raise QuantizeError(f"--data: {path} holds no array")
    return out


def quantize_command(args: argparse.Namespace) -> int:
    from passes.quantize import QConfig, quantize
    from relay.cli import read_source
    from relay.commands.build import load_params
    from semantics import parse, pretty

    m, n = args.bits
    config = QConfig(nbit_input=m, nbit_weight=m, nbit_activation=n,
                     calibrate=args.calibrate, global_scale=args.global_scale,
                     rounding=args.rounding)
    mod = parse(read_source(args.file), source_name=args.file)
    data = None if args.data is None else load_dataset(args.data, mod)
    out = pretty(quantize(mod, load_params(args.params), config, data))
    if not out.endswith("\n"):
        out += "\n"
    if args.output is None:
        print(out, end="")
    else:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(out)
    return 0
