"""``lafuzz promote``: a campaign's near miss copied into the regression corpus."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fuzz.output import prepare_output
from fuzz.usage import UsageError


def promote_candidate(args: argparse.Namespace) -> int:
    """Copy the candidate entry into ``--corpus``."""
    from fuzz.corpus.candidates import promote
    from fuzz.corpus.entry import CorpusError

    try:
        path = promote(Path(args.candidate), prepare_output(Path(args.corpus), "--corpus"))
    except (CorpusError, FileExistsError) as err:
        raise UsageError(str(err)) from err
    print(f"promoted to {path}: replay now checks it (lafuzz repro {path})")
    return 0


def add_subcommand(sub: Any) -> None:
    """Add ``promote`` to ``lafuzz``'s subcommands."""
    p = sub.add_parser("promote", help="copy a corpus candidate (a campaign's OUT/near-misses/<property>/<id>) "
                       "into the regression corpus")
    p.add_argument("candidate", help="the candidate's entry directory")
    p.add_argument("--corpus", default="corpus", help="the corpus to add it to (default corpus)")
    p.set_defaults(func=promote_candidate)
