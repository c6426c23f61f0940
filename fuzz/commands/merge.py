"""``lafuzz merge``: campaign outputs (shards) merged into one corpus, database and report."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fuzz.output import prepare_output
from fuzz.usage import UsageError


def merge(args: argparse.Namespace) -> int:
    """Merge the campaign outputs named into ``--out``."""
    from fuzz.campaign.merge import merge_runs

    prepare_output(Path(args.out))
    try:
        merged = merge_runs([Path(p) for p in args.runs], Path(args.out))
    except ValueError as err:
        raise UsageError(str(err)) from err
    print(f"merged {merged.merged_from} runs: {merged.examples} cases, {len(merged.findings)} finding(s) "
          f"-> {args.out}/report.html")
    return 0


def add_subcommand(sub: Any) -> None:
    """Add ``merge`` to ``lafuzz``'s subcommands."""
    p = sub.add_parser("merge", help="merge campaign outputs (shards) into one corpus, database and report")
    p.add_argument("runs", nargs="+", help="campaign output directories")
    p.add_argument("--out", required=True)
    p.set_defaults(func=merge)
