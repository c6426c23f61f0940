"""``lafuzz matrix``: every documented finding of the corpus run on every build present."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fuzz import backend_options
from fuzz.commands.arguments import backend_names, open_backends
from fuzz.usage import UsageError

if TYPE_CHECKING:
    from fuzz.corpus.entry import Entry
    from fuzz.export.matrix import Matrix


MATRIX_BEGIN, MATRIX_END = "<!-- lafuzz matrix -->", "<!-- /lafuzz matrix -->"
"""The lines between which ``lafuzz matrix --update FILE`` writes the table."""


def matrix_of(entries: list[Entry], names: list[str]) -> Matrix:
    """The findings matrix of ``entries`` on the backends ``names`` that exist here (the others named on stderr)."""
    from fuzz.export.matrix import findings_matrix

    backends, missing = open_backends(names)
    for name, reason in missing.items():
        print(f"[lafuzz] backend {name} not available: {reason}", file=sys.stderr)
    try:
        return findings_matrix(entries, list(backends.values()))
    finally:
        for b in backends.values():
            b.close()


def findings_matrix(args: argparse.Namespace) -> int:
    """Print the findings matrix of ``--corpus`` as Markdown; also as JSON, or into a file, when asked."""
    import json
    import time

    from fuzz.export.matrix import builds, documented_findings

    entries = documented_findings(Path(args.corpus))
    if not entries:
        raise UsageError(f"--corpus {args.corpus}: no entry records a known failure")
    started = time.monotonic()
    matrix = matrix_of(entries, builds(backend_names(None)) if args.backends is None else
                        backend_names(args.backends))
    table = matrix.markdown()
    print(table)
    print(f"[lafuzz] {len(matrix.findings)} findings on {len(matrix.builds)} builds in "
          f"{time.monotonic() - started:.1f} s", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(matrix.to_json(), indent=1) + "\n")
    if args.update:
        target = Path(args.update)
        text = target.read_text()
        if MATRIX_BEGIN not in text or MATRIX_END not in text:
            raise UsageError(f"--update {target}: no {MATRIX_BEGIN} ... {MATRIX_END} section to replace")
        head, rest = text.split(MATRIX_BEGIN, 1)
        target.write_text(f"{head}{MATRIX_BEGIN}\n{table}\n{MATRIX_END}{rest.split(MATRIX_END, 1)[1]}")
    return 0


def add_subcommand(sub: Any) -> None:
    """Add ``matrix`` to ``lafuzz``'s subcommands."""
    matrix_help = ("run every documented finding of the corpus on every build present: wrong results, crash "
                   "(signal), hang, refused, accepted invalid, fixed or cannot load, as a Markdown table")
    p = sub.add_parser("matrix", help=matrix_help, description=matrix_help)
    p.add_argument("--corpus", default="corpus")
    p.add_argument("--backends", help="comma-separated backends, or all (default: all available here)")
    p.add_argument("--json", metavar="FILE", help="also write the verdicts as JSON")
    p.add_argument("--update", metavar="FILE", help=f"write the table into FILE between {MATRIX_BEGIN} and "
                   f"{MATRIX_END} (e.g. docs/findings/README.md)")
    backend_options.add_arguments(p)
    p.set_defaults(func=findings_matrix)
