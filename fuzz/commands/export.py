"""``lafuzz export``: a corpus entry as a standalone upstream bug report."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fuzz.commands.arguments import backend_names, open_backends
from fuzz.output import prepare_output
from fuzz.usage import UsageError


def export(args: argparse.Namespace) -> int:
    """Write the entry at ``args.path`` to ``--out`` as an upstream report, cross-checked on the backends here."""
    from fuzz.corpus import entry as corpus
    from fuzz.export.exporter import export_entry
    from fuzz.export.plan import ExportError

    try:
        entry = corpus.read_entry(Path(args.path))
    except corpus.CorpusError as err:
        raise UsageError(str(err)) from err
    backends, missing = open_backends(backend_names(args.backends))
    for name, reason in missing.items():
        print(f"backend {name} not available: {reason}")
    try:
        out = export_entry(entry, prepare_output(Path(args.out), "--out"), backends=list(backends.values()),
                           check=not args.no_run)
    except ExportError as err:
        raise UsageError(str(err)) from err
    finally:
        for b in backends.values():
            b.close()
    print(f"exported {entry.finding.property}/{entry.id} to {out}: {', '.join(sorted(p.name for p in out.iterdir()))}")
    return 0


def add_subcommand(sub: Any) -> None:
    """Add ``export`` to ``lafuzz``'s subcommands."""
    p = sub.add_parser("export", help="write a corpus entry as a standalone upstream bug report: model.onnx, "
                       "ONNX test data, repro.py (numpy and onnxruntime only) and ISSUE.md")
    p.add_argument("path", help="a corpus entry directory")
    p.add_argument("--out", required=True, help="the folder to write (replaced if it holds an earlier export)")
    p.add_argument("--backends", help="backends to cross-check the case on, or all (default: all available here)")
    p.add_argument("--no-run", action="store_true", help="do not run the written repro.py once to record its output")
    p.set_defaults(func=export)
