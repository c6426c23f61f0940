"""``lafuzz repro``: re-run one corpus entry and explain it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from fuzz import backend_options
from fuzz.commands.arguments import EXIT_REGRESSION, add_strict, backend_names, listed, open_backends
from fuzz.usage import EXIT_USAGE, UsageError


def repro(args: argparse.Namespace) -> int:
    """Re-run the entry at ``args.path`` on its backends (or those named) and print each verdict."""
    from fuzz.corpus import entry as corpus
    from fuzz.corpus.replay import FAILED, REFUSED, STILL_FAILING, recorded_backends, replay_entry

    path = Path(args.path)
    if not (path / corpus.DOCUMENT_KEY).is_file():
        print(f"lafuzz repro: {path} is not a corpus entry directory (no entry.json)", file=sys.stderr)
        return EXIT_USAGE
    try:
        entry = corpus.read_entry(path)
    except corpus.CorpusError as err:
        raise UsageError(str(err)) from err
    if args.property:
        entry.finding = entry.finding.with_(property=args.property)
    if args.backends:
        names = listed(args.backends, [])
    elif entry.expected_arrays:
        names = backend_names(None)
    else:
        names = list(recorded_backends(entry)[0])
    backends, missing = open_backends(names)
    print(f"case: {entry.finding.case.summary()}")
    for name, reason in missing.items():
        print(f"backend {name} not available: {reason}")
    try:
        verdicts = replay_entry(entry, backends, strict=args.strict)
    finally:
        for b in backends.values():
            b.close()
    for v in verdicts:
        if v.verdict == REFUSED:
            print(f"lafuzz repro: {v.detail}", file=sys.stderr)
        else:
            print(v.line())
    if any(v.verdict in (*FAILED, STILL_FAILING) for v in verdicts):
        return EXIT_REGRESSION
    return EXIT_USAGE if any(v.verdict == REFUSED for v in verdicts) else 0


def add_subcommand(sub: Any) -> None:
    """Add ``repro`` to ``lafuzz``'s subcommands."""
    p = sub.add_parser("repro", help="re-run one corpus entry (a campaign's, a test failure's, the corpus's) and "
                       "explain it; exit 2 when it cannot be read")
    p.add_argument("path")
    p.add_argument("--property", help="check this property instead of the entry's")
    p.add_argument("--backends", help="comma-separated backends instead of the entry's")
    add_strict(p)
    backend_options.add_arguments(p)
    p.set_defaults(func=repro)
