"""Regenerate ``docs/ops.md`` from the operator registry (the output of ``relay ops --markdown``).

Usage::

    python tools/gen_ops_doc.py            # rewrite docs/ops.md
    python tools/gen_ops_doc.py --check    # exit 1 if docs/ops.md is out of date

``tests/relay/test_ops_command.py`` runs the check, so a registry change that is
not reflected in the document fails the test suite.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "ops.md"


def render() -> str:
    """The current Markdown table of every registered operator."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from relay.commands.ops import markdown

    return markdown()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="do not write; exit 1 if docs/ops.md differs from the registry")
    args = parser.parse_args(argv)
    text = render()
    current = DOC.read_text(encoding="utf-8") if DOC.exists() else None
    if args.check:
        if current != text:
            print(f"{DOC.relative_to(ROOT)} is out of date: run python tools/gen_ops_doc.py",
                  file=sys.stderr)
            return 1
        return 0
    if current != text:
        DOC.parent.mkdir(parents=True, exist_ok=True)
        DOC.write_text(text, encoding="utf-8")
        print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
