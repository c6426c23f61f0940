"""``lafuzz report``: report.html regenerated from a summary.json."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fuzz.output import prepare_output
from fuzz.usage import UsageError


def report(args: argparse.Namespace) -> int:
    """Regenerate the report of ``args.summary``; also each plot as a PNG, when asked."""
    from fuzz.campaign.report import regenerate, write_pngs
    from fuzz.campaign.summary import Summary

    path = Path(args.summary)
    path = path / "summary.json" if path.is_dir() else path
    try:
        print(regenerate(path))
        if args.png:
            print("\n".join(map(str, write_pngs(Summary.read(path), prepare_output(Path(args.png), "--png")))))
    except ValueError as err:
        raise UsageError(str(err)) from err
    return 0


def add_subcommand(sub: Any) -> None:
    """Add ``report`` to ``lafuzz``'s subcommands."""
    p = sub.add_parser("report", help="regenerate report.html from a summary.json (or its directory)")
    p.add_argument("summary")
    p.add_argument("--png", help="also write each plot as DIR/report-<name>.png")
    p.set_defaults(func=report)
