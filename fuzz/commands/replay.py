"""``lafuzz replay``: re-check corpus entries, exit 1 on any regression."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fuzz import backend_options
from fuzz.commands.arguments import EXIT_REGRESSION, EXIT_UNREADABLE, add_strict, backend_names, open_backends
from fuzz.usage import UsageError

if TYPE_CHECKING:
    from fuzz.corpus.entry import CorpusError, Entry


def _entry_dirs(paths: list[str], default_root: str) -> list[Path]:
    """Entry directories named by entry directories or corpus roots (default: the whole corpus)."""
    from fuzz.corpus.entry import DOCUMENT_KEY, entry_dirs

    found = []
    for path in map(Path, paths or [default_root]):
        if (path / DOCUMENT_KEY).is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(entry_dirs(path))
            found.extend(entry_dirs(path / "corpus"))
        else:
            raise UsageError(f"{path}: neither a corpus entry nor a corpus directory")
    return found


def _read_entries(directories: list[Path]) -> tuple[list[Entry], list[CorpusError]]:
    """The entries that could be read, and the error of each one that could not."""
    from fuzz.corpus.entry import CorpusError, read_entry

    entries, unreadable = [], []
    for directory in directories:
        try:
            entries.append(read_entry(directory))
        except CorpusError as err:
            unreadable.append(err)
    return entries, unreadable


def replay_entries(args: argparse.Namespace) -> int:
    """Replay the entries named (default: ``--corpus``); print regressions, fixes and refusals, and a count."""
    from fuzz.corpus.replay import FAILED, NOW_FIXED, REFUSED, STILL_FAILING, replay, unreadable_line

    entries, unreadable = _read_entries(_entry_dirs(args.paths, args.corpus))
    for error in unreadable:
        print(unreadable_line(error))
    entries = [e for e in entries if not args.property or e.finding.property == args.property]
    backends, missing = open_backends(backend_names(args.backends))
    for name, reason in missing.items():
        print(f"[lafuzz] backend {name} not available: {reason}", file=sys.stderr)
    try:
        verdicts = replay(entries, backends, strict=args.strict)
    finally:
        for b in backends.values():
            b.close()
    counts: dict[str, int] = {}
    for v in verdicts:
        counts[v.verdict] = counts.get(v.verdict, 0) + 1
        if args.verbose or v.verdict in (*FAILED, STILL_FAILING, NOW_FIXED, REFUSED):
            print(v.line())
    print(f"replayed {len(entries)} entries ({len(unreadable)} unreadable), {len(verdicts)} checks: "
          + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    if unreadable or counts.get(REFUSED):
        return EXIT_UNREADABLE
    return EXIT_REGRESSION if any(counts.get(v) for v in FAILED) else 0


def add_subcommand(sub: Any) -> None:
    """Add ``replay`` to ``lafuzz``'s subcommands."""
    replay_help = ("re-check corpus entries; exit 1 on any regression, 2 when an entry could not be read or "
                   "names a backend that is neither a registry name nor given with --backends (each is named in "
                   "one line; the others, and the entry's other backends, are still replayed)")
    p = sub.add_parser("replay", help=replay_help, description=replay_help)
    p.add_argument("paths", nargs="*", help="entry directories or corpus roots (default: --corpus)")
    p.add_argument("--corpus", default="corpus")
    p.add_argument("--backends", help="comma-separated backends, or all (default: all available here)")
    p.add_argument("--property", help="only entries of this property")
    p.add_argument("-v", "--verbose", action="store_true", help="print every verdict, passes included")
    add_strict(p)
    backend_options.add_arguments(p)
    p.set_defaults(func=replay_entries)
