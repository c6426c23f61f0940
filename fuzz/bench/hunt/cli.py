"""``python -m fuzz.bench.hunt``: plant each catalogued bug in a copy of the tree, run the default campaign there
for a budget, and report whether and when it found the bug (docs/hunt.md).

Exit status: 0 every bug selected was found (``--check``: every targeted case proven); 1 some were not; 2 bad
usage. Arguments after ``--`` go to every campaign (``-- --jobs 8``).
"""

from __future__ import annotations

import argparse
import platform
import random
import signal
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from tempfile import TemporaryDirectory

from fuzz import atomic
from fuzz.bench.hunt import checking, results
from fuzz.bench.hunt.catalogue import CATALOGUE, Bug, CatalogueError, load, select
from fuzz.bench.hunt.hunting import HuntResult, hunt, stop_all
from fuzz.bench.hunt.mutants import blind_bugs
from fuzz.bench.hunt.targeted import parse_swap
from fuzz.bench.hunt.tree import planted_copy, root_of_tree

DEFAULT_BUDGET_S = 90.0
"""The budget of each campaign: the 2-core machine's goal is every bug found within it."""

EXIT_INTERRUPTED = 130
"""Stopped by Ctrl-C or SIGTERM, as a shell reports SIGINT."""

DEFAULT_SEED = 1
"""One seed for every bug by default, so that two runs (before and after a change) draw the same units."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m fuzz.bench.hunt", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bugs", help="comma-separated bug ids (default: the whole catalogue)")
    p.add_argument("--time", type=float, default=DEFAULT_BUDGET_S, help="seconds of campaign per bug (default 90)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="campaign seed of every bug (default 1); "
                   "0 draws one per bug")
    p.add_argument("--out", default="hunt-out", help="output directory: hunt.json, hunt.md, hunt.png, a folder "
                   "per bug with its campaign's log and output")
    p.add_argument("--cold-cache", action="store_true", help="an empty shader cache for each bug (default: the "
                   "user's, so only the planted kernel's pipelines compile anew)")
    p.add_argument("--run-on", action="store_true", help="let each campaign run its whole budget (default: "
                   "stop it, gracefully, at its first new finding)")
    p.add_argument("--parallel", type=int, default=1, help="bugs hunted at once (default 1: one after another)")
    p.add_argument("--compare", help="a hunt.json of another run, drawn under this one in the plot")
    p.add_argument("--check", action="store_true", help="no campaign: check each bug's targeted case fails "
                   "planted and passes unplanted (validates the catalogue)")
    p.add_argument("--catalogue", default=str(CATALOGUE), help="the catalogue (default: the shipped bugs.toml)")
    p.add_argument("--swap", help="with --check: OLD=NEW,... backends each targeted case runs in place of those its "
                   "entry names (the same cases on another platform: wgpu=wgpu-swiftshader)")
    p.add_argument("--blind", type=int, metavar="N", help="hunt N random single-point mutants of the WGSL kernels "
                   "instead of the catalogue (drawn with --seed; some may change nothing, so a miss needs reading)")
    return p


def _commit(root: Path) -> str:
    done = subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty"], capture_output=True,
                          text=True, check=False)
    return done.stdout.strip() or "unknown"


def _hunt_one(bug: Bug, args: argparse.Namespace, extra: Sequence[str], source: Path, out: Path) -> HuntResult:
    seed = args.seed or random.randrange(1, 2**32)
    print(f"[hunt] {bug.id} ({bug.component}): planted in {bug.edit.file}, campaign of {args.time:g} s, seed {seed}",
          flush=True)
    with ExitStack() as stack:
        root = stack.enter_context(planted_copy(bug, source))
        cache = Path(stack.enter_context(TemporaryDirectory(prefix="hunt-cache-"))) if args.cold_cache else None
        result = hunt(bug, root, out / bug.id, budget_s=args.time, seed=seed, extra=extra,
                      stop_at_first=not args.run_on, cache_dir=cache)
    found = f"found in {result.seconds:.1f} s: {result.minimal_case}" if result.found and result.seconds \
        else "found" if result.found else "NOT found"
    print(f"[hunt] {bug.id} ({bug.component}): {found}" + (f" [{result.note}]" if result.note else ""), flush=True)
    return result


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM ends a hunt as Ctrl-C does."""
    raise KeyboardInterrupt


def _run(bugs: Sequence[Bug], args: argparse.Namespace, extra: Sequence[str], source: Path, out: Path) -> int:
    run = results.HuntRun(budget_s=args.time, seed=args.seed, cache="cold" if args.cold_cache else "warm",
                          campaign_args=list(extra), commit=_commit(source), host=platform.node(),
                          started=datetime.now(UTC).isoformat(timespec="seconds"))
    print(f"[hunt] {len(bugs)} bug(s), {args.time:g} s each, seed {args.seed}, shader cache {run.cache}", flush=True)
    order = {bug.id: number for number, bug in enumerate(bugs)}
    pool = ThreadPoolExecutor(max_workers=max(1, args.parallel))
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        hunts = [pool.submit(_hunt_one, bug, args, extra, source, out) for bug in bugs]
        for done in as_completed(hunts):  # the table so far after every bug: an interrupted run keeps its rows
            run.results = sorted([*run.results, done.result()], key=lambda result: order[result.id])
            results.write_json(run, out / "hunt.json")
            atomic.write_text(out / "hunt.md", results.markdown(run))
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)
        stopped = stop_all()
        print(f"[hunt] interrupted: {stopped} running campaign(s) killed; the {len(run.results)} bug(s) hunted "
              f"so far are in {out / 'hunt.md'}", flush=True)
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)
        pool.shutdown(wait=True)
    other = results.read_json(Path(args.compare)) if args.compare else None
    results.plot(run, out / "hunt.png", other, (str(out), str(args.compare)))
    print(f"[hunt] {run.summary_line()}; table {out / 'hunt.md'}, plot {out / 'hunt.png'}", flush=True)
    return 0 if len(run.found) == len(run.results) else 1


def _check(bugs: Sequence[Bug], source: Path, out: Path, catalogue: Path, swap: str | None) -> int:
    checks = checking.check_bugs(bugs, source, lambda line: print(f"[hunt] {line}", flush=True), catalogue, swap)
    checking.write_checks(checks, out / "check.json")
    proven = sum(c.proven for c in checks)
    print(f"[hunt] {proven} of {len(checks)} targeted cases proven (fail planted, pass unplanted); "
          f"{out / 'check.json'}", flush=True)
    return 0 if proven == len(checks) else 1


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    ours = argv[:argv.index("--")] if "--" in argv else argv
    parser = _parser()
    args = parser.parse_args(ours)
    if args.blind is not None and (args.blind < 1 or args.check or args.bugs):
        parser.error("--blind takes a positive count, and neither --check (a mutant has no targeted case) nor --bugs")
    source = root_of_tree()
    try:
        bugs = (blind_bugs(source, args.blind, args.seed or DEFAULT_SEED) if args.blind
                else select(load(Path(args.catalogue)), args.bugs))
    except (CatalogueError, OSError) as err:
        parser.error(str(err))
    if args.parallel < 1 or args.time <= 0:
        parser.error("--parallel and --time must be positive")
    try:
        parse_swap(args.swap)
    except ValueError as err:
        parser.error(str(err))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.check:
        return _check(bugs, source, out, Path(args.catalogue), args.swap)
    return _run(bugs, args, extra, source, out)
