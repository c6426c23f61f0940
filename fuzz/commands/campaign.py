"""``lafuzz campaign``: run the properties for a budget, save findings, write a report."""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fuzz import backend_options, environment
from fuzz.commands.arguments import add_strict, backend_names, checked, listed, positive
from fuzz.commands.matrix import matrix_of
from fuzz.output import prepare_output
from fuzz.usage import EXIT_USAGE, UsageError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from fuzz.backends import Backend
    from fuzz.campaign.campaign import CampaignConfig
    from fuzz.campaign.focus import Focus
    from fuzz.campaign.shard import Shard
    from fuzz.campaign.summary import Summary
    from fuzz.campaign.worker import Probe
    from fuzz.corpus.entry import Entry

DEFAULT_BUDGET_S = 180.0
"""The campaign's time budget when neither ``--time`` nor ``--examples`` is given."""
AUTO_SHARD = "auto"
"""``--shard auto``: the shard from the environment of a CI or batch system (``Shard.from_environment``)."""


def _seconds(text: str) -> float:
    """``90``, ``90s``, ``3m`` or ``1h`` as seconds (argparse type)."""
    units = {"s": 1, "m": 60, "h": 3600}
    number, unit = (text[:-1], text[-1]) if text and text[-1] in units else (text, "s")
    try:
        value = float(number) * units[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad duration {text!r}: e.g. 90s, 3m, 1h") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"duration must be positive, got {text!r}")
    return value


def _shard(text: str) -> Shard | str:
    """``--shard``: ``i/n``, or ``auto`` (argparse type)."""
    from fuzz.campaign.shard import Shard

    if text == AUTO_SHARD:
        return text
    try:
        return Shard.parse(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _campaign_shard(spec: Shard | str, seeded: bool) -> Shard:
    """``--shard`` as given, or for ``auto`` the shard the environment names (printed with its source).

    ``auto`` needs ``--seed``: the shards of one campaign must share its seed, and shards that each
    drew their own would run parts of different campaigns.
    """

    from fuzz.campaign.shard import Shard

    if isinstance(spec, Shard):
        return spec
    if not seeded:
        raise UsageError("--shard auto needs --seed: every shard of a campaign must use the same seed "
                         "(the pipeline's id, for example), or each would draw its own")
    try:
        shard, source = Shard.from_environment(os.environ)
    except ValueError as err:
        raise UsageError(str(err)) from err
    print(f"[lafuzz] shard {shard} from {source}", file=sys.stderr)
    return shard


def _campaign_seed(seed: int | None) -> int:
    """``--seed``, or a fresh one so that two runs do different work; printed so a run can be repeated."""
    if seed is None:
        seed = secrets.randbelow(2**32)
    print(f"[lafuzz] seed {seed} (rerun with --seed {seed})", file=sys.stderr)
    return seed


def _add_matrix(summary: Summary, corpus: Path, names: list[str]) -> None:
    """Judge the corpus's documented findings on the campaign's builds, into its summary and report."""
    import time

    from fuzz.campaign.report import write_report
    from fuzz.export.matrix import builds, documented_findings

    entries = documented_findings(corpus)
    chosen = builds(names)
    if not entries or not chosen:
        return
    started = time.monotonic()
    with environment.native_output_to(Path(summary.config["out"]) / "native.log"):
        summary.matrix = matrix_of(entries, chosen).to_json()
    summary.matrix["seconds"] = round(time.monotonic() - started, 1)
    print(f"[lafuzz] findings matrix: {len(entries)} documented findings on {', '.join(chosen)} "
          f"({summary.matrix['seconds']} s)", file=sys.stderr)
    write_report(summary, Path(summary.config["out"]))


def _campaign_ops(requested: str | None, described: dict[str, dict[str, Any]]) -> list[str]:
    """``--ops`` (default: every op), less the ops fewer than two of the campaign's backends run (the oracle among
    them), each with a line on stderr; where no op has two, every op one of them runs (the oracle alone checks
    its window against its own prefix formulation)."""
    from fuzz.ops.registry import op_names

    known = op_names()
    ops = listed(requested, list(known))
    unknown = [op for op in ops if op not in known]
    if unknown:
        raise UsageError(f"--ops: unknown op(s) {', '.join(unknown)}; known: {', '.join(known)}")
    runners = {op: [name for name, caps in described.items() if op in caps.get("ops", ())] for op in ops}
    compared = [op for op in ops if len(runners[op]) >= 2]
    for op in ops:
        if compared and op not in compared:
            print(f"[lafuzz] not testing {op}: only {', '.join(runners[op]) or 'no backend'} of the selected "
                  "backends runs it (a comparison needs two)", file=sys.stderr)
    kept = compared or [op for op in ops if runners[op]]
    if not kept:
        raise UsageError(f"--ops: none of the selected backends runs {', '.join(ops)}")
    return kept


def _campaign_focus(args: argparse.Namespace, described: dict[str, dict[str, Any]], ops: list[str],
                    properties: list[str]) -> Focus | None:
    """What the campaign leans towards: ``--focus`` names, the files changed ``--since`` a revision, or else (a swarm
    campaign) those changed since the last clean campaign's record in ``--corpus``; said in one line on stderr,
    as is why there is none where one was looked for."""
    from dataclasses import replace

    from fuzz.campaign import memory
    from fuzz.campaign.focus import NoFocus, focus_of_files, parse_focus, within
    from fuzz.engine.properties import PROPERTIES

    if args.focus and args.since:
        raise UsageError("--focus and --since both say what to focus on: give one of them")
    if args.focus == "none" or (not args.focus and not args.since and args.limits != "swarm"):
        return None
    try:
        if args.focus:
            focus = parse_focus(args.focus, list(PROPERTIES))
            focus = replace(focus, reason=f"--focus {args.focus}")
        else:
            since = f"since {args.since}" if args.since else "since the last clean campaign"
            try:
                files = memory.changed_since(args.since) if args.since else memory.changed(
                    memory.recorded(Path(args.corpus)), memory.hashes())
            except memory.Unreadable as err:
                raise NoFocus(str(err)) from None
            if not files:
                return None
            focus = focus_of_files(files)
            shown = ", ".join(focus.changed[:3]) + (f" and {len(focus.changed) - 3} more" if len(focus.changed) > 3
                                                    else "")
            focus = replace(focus, reason=f"{shown} changed {since}")
        focus = within(focus, described, ops, properties)
    except NoFocus as err:
        print(f"[lafuzz] no focus: {err}", file=sys.stderr)
        return None
    except ValueError as err:
        raise UsageError(str(err)) from err
    print(f"[lafuzz] focus: {focus.reason} -> {focus.describe()} (--focus none turns it off)", file=sys.stderr)
    return focus


def _remember_implementation(args: argparse.Namespace, summary: Summary) -> None:
    """After a clean campaign of every property and op in swarm units, record the implementation's hashes in
    ``--corpus`` (``fuzz.campaign.memory``), so that a later plain campaign leans towards what changes."""
    from fuzz.campaign import memory

    corpus = Path(args.corpus)
    whole = args.properties in (None, "all") and args.ops in (None, "all") and args.limits == "swarm"
    if summary.exit_status != 0 or summary.interrupted or not whole or not corpus.is_dir():
        return
    if memory.record(corpus, memory.hashes()):
        print(f"[lafuzz] recorded the implementation's hashes in {corpus / memory.HASHES}: a later campaign "
              "leans towards what changes from here", file=sys.stderr)


def _checked_properties(requested: str | None) -> list[str]:
    from fuzz.engine.properties import PROPERTIES, resolve_property

    properties = listed(requested, list(PROPERTIES))
    for name in properties:
        checked(resolve_property, name)
    return properties


def _checked_backends(requested: str | None) -> list[str]:
    from fuzz.backends import REGISTRY

    names = backend_names(requested)
    unknown = [n for n in names if n not in REGISTRY and ":" not in n]
    if unknown:
        raise UsageError(f"unknown backend(s) {', '.join(unknown)}; known: {', '.join(REGISTRY)}")
    return names


def _checked_outputs(args: argparse.Namespace) -> None:
    """The example database, the output directory and the corpus's known-failure marks, each checked before any
    work (a bad entry is one line here, not an error in every worker)."""
    from fuzz.campaign.database import open_database
    from fuzz.corpus.entry import CorpusError, marks

    if args.database:
        checked(open_database, args.database)
    prepare_output(Path(args.out))
    try:
        marks(Path(args.corpus))
    except CorpusError as err:
        raise UsageError(f"--corpus: {err}") from err


def _probed(args: argparse.Namespace, names: list[str]) -> Probe | None:
    """The backends named that exist here (those that do not, each in a line), or None where none does."""
    from fuzz.backends.remembered import Remembered
    from fuzz.campaign.summary import NATIVE_LOG
    from fuzz.campaign.worker import probe

    remembered = Remembered()
    try:
        with environment.native_output_to(Path(args.out) / NATIVE_LOG):
            found = probe(names, remembered)
    except KeyError as err:
        raise UsageError(err.args[0]) from err
    for name, reason in found.missing.items():
        print(f"[lafuzz] skipping backend {name}: {reason}", file=sys.stderr)
    if found.recalled:
        age = (time.time() - (remembered.oldest(found.recalled) or time.time())) / 60
        print(f"[lafuzz] {len(found.recalled)} backend(s) as probed up to {age:.0f} min ago ({remembered.path}; "
              "`lafuzz backends` probes them afresh)", file=sys.stderr)
    return found if found.usable else None


def _forget_lost(found: Probe, lost: set[str]) -> None:
    """Forget the remembered probes of the backends the workers could not start or keep, so the next campaign
    probes them."""
    from fuzz.backends.remembered import Remembered

    if any(name in lost for name in found.recalled.values()):
        Remembered().forget(spec for spec, name in found.recalled.items() if name in lost)


def _with_cases_of(properties: list[str], ops: list[str]) -> list[str]:
    """The properties that have cases of one of ``ops``; each of the others named in a line."""
    from fuzz.engine.properties import resolve_property

    skipped = [name for name in properties if not any(resolve_property(name).applies_to(op) for op in ops)]
    for name in skipped:
        print(f"[lafuzz] not running {name}: it has no cases of {', '.join(ops)}", file=sys.stderr)
    return [name for name in properties if name not in skipped]


def _config(args: argparse.Namespace, found: Probe, *, shard: Shard, seed: int, properties: list[str],
            ops: list[str], focus: Focus | None) -> CampaignConfig:
    from fuzz.campaign.campaign import CampaignConfig
    from fuzz.campaign.resources import default_jobs

    return CampaignConfig(
        properties=properties,
        backends=found.usable,
        seed=seed,
        shard=shard,
        jobs=args.jobs or default_jobs(),
        time_budget=args.time or (None if args.examples else DEFAULT_BUDGET_S),
        example_budget=args.examples,
        examples_per_unit=args.examples_per_unit,
        limits=args.limits,
        ops=ops,
        out=Path(args.out),
        database=args.database,
        known_corpus=Path(args.corpus),
        isolate=args.isolate,
        strict=args.strict,
        unavailable=found.missing,
        focus=focus,
        follow_yield=args.schedule == "yield",
    )


def _export_upstream(entry: Entry, entry_dir: Path, backends: Sequence[Backend] | None = None) -> Path | None:
    """``fuzz.export.exporter.export_upstream``, imported when a campaign first saves a finding: it brings ONNX and
    ORT's session code into the campaign's own process, which a campaign without findings never needs."""
    from fuzz.export.exporter import export_upstream

    return export_upstream(entry, entry_dir, backends)


def run_campaign(args: argparse.Namespace) -> int:
    """Check the command line, run the campaign, save what follows it (hashes, matrix, JUnit, the job summary) and
    print its summary; the campaign's exit status."""
    from fuzz.campaign import github
    from fuzz.campaign.campaign import Campaign
    from fuzz.campaign.junit import write_junit

    shard = _campaign_shard(args.shard, seeded=args.seed is not None)
    seed = _campaign_seed(args.seed)
    properties = _checked_properties(args.properties)
    names = _checked_backends(args.backends)
    _checked_outputs(args)
    found = _probed(args, names)
    if found is None:
        print("lafuzz campaign: no backend is available here (see `lafuzz backends`)", file=sys.stderr)
        return EXIT_USAGE
    ops = _campaign_ops(args.ops, found.described)
    properties = _with_cases_of(properties, ops)
    focus = _campaign_focus(args, found.described, ops, properties)
    config = _config(args, found, shard=shard, seed=seed, properties=properties, ops=ops, focus=focus)
    campaign = Campaign(config, backend_info=found.described, on_saved=_export_upstream)
    summary = campaign.run()
    _forget_lost(found, campaign.lost_backends)
    campaign.saving("the implementation's hashes", Path(args.corpus), lambda: _remember_implementation(args, summary))
    if args.matrix:
        _add_matrix(summary, Path(args.corpus), found.usable)
    if args.junit:
        campaign.saving("the JUnit report", Path(args.junit), lambda: write_junit(summary, Path(args.junit)))
    campaign.saving("the GitHub job summary", Path(os.environ.get(github.STEP_SUMMARY, "")),
                    lambda: github.publish(summary, os.environ))
    print("\n".join(summary.console_lines(config.ops, Path(args.out), [Path(r.path) for r in campaign.not_saved])))
    return summary.exit_status


def add_subcommand(sub: Any) -> None:
    """Add ``campaign`` to ``lafuzz``'s subcommands."""
    p = sub.add_parser(
        "campaign", help="fuzz: run the properties for a budget, save findings, write a report",
        epilog="exit status: 0 cases checked, only known findings or none; 1 a new finding (or an error before a "
               "unit's first case); 3 nothing checked; 4 nothing new, but units went unchecked (a worker process died, "
               "or hung past the budget's grace); 5 nothing new, but the output disk filled up (ENOSPC or EDQUOT): "
               "the campaign stopped, what it wrote is kept, the summary too if it fitted (the last line says); 130 "
               "stopped by Ctrl-C or SIGTERM (running units finish, the summary is written), nothing new; 2 bad usage",
    )
    p.add_argument("--time", type=_seconds, help="time budget, e.g. 90s, 3m, 1h (default 3m)")
    p.add_argument("--examples", type=positive, help="example budget instead of time: a fixed amount of work")
    p.add_argument("--seed", type=int, help="campaign seed: same seed and shard, same work "
                   "(default: a fresh seed, printed at the start)")
    p.add_argument("--shard", type=_shard, default="1/1",
                   help="run shard i of n, e.g. 2/4, or auto: from the CI or batch system's variables "
                   "(LAFUZZ_SHARD, GitLab, CircleCI, Buildkite, Kubernetes Indexed Job); every shard of a "
                   "campaign needs the same --seed (default 1/1)")
    p.add_argument("-j", "--jobs", type=positive,
                   help="worker processes (default: one per usable CPU, as many as the available memory "
                   "holds; fuzz/campaign/resources.py)")
    p.add_argument("--backends", help="comma-separated backends, or all (default: all available here)")
    p.add_argument("--properties", help="comma-separated properties, or all (default)")
    p.add_argument("--ops", help="comma-separated ops, or all (default: every registered op: LinearAttention, "
                   "CausalConvWithState, GatedDeltaNet, GatedDeltaNetStateReplay; each where two of the backends "
                   "run it)")
    p.add_argument("--limits", choices=["swarm", "campaign", "ci", "default", "big"], default="swarm",
                   help="case sizes: swarm (default) draws a slice of the whole contract per work unit, "
                   "from tiny to real model sizes; the others are one fixed slice for every unit "
                   "(campaign: shapes from a small pool; big: head sizes up to 256)")
    p.add_argument("--focus", metavar="NAMES", help="give most units (80%%) to these backends, ops or properties, "
                   "comma-separated (a focused unit runs the focused backends and the oracle); none: no focus. "
                   "Default: what changed since the last clean campaign (its hashes in --corpus)")
    p.add_argument("--since", metavar="REV", help="focus on what the files changed since git revision REV serve "
                   "(committed, staged, unstaged and untracked; the table in fuzz/campaign/focus.py)")
    p.add_argument("--schedule", choices=["yield", "swarm"], default="yield",
                   help="yield (default): each unit's arm (op, size tier, kernel form) by what arms found per second; "
                   "swarm: each unit draws its own. With --examples or --shard the unit list stays a function of "
                   "the seed either way")
    p.add_argument("--examples-per-unit", type=positive, default=50,
                   help="Hypothesis examples per work unit (default 50; a swarm unit also stops drawing "
                   "examples after 8 s unless it is shrinking a failure)")
    p.add_argument("--out", default="lafuzz-out", help="output directory (report, summary, corpus, database)")
    p.add_argument("--database", help="example database: a directory or redis://HOST:PORT "
                   "(default OUT/hypothesis-db)")
    p.add_argument("--corpus", default="corpus", help="corpus whose known-failure marks apply (default corpus)")
    p.add_argument("--no-isolation", dest="isolate", action="store_false",
                   help="run ORT in the worker itself (faster; a native crash then ends the campaign)")
    p.add_argument("--matrix", action="store_true",
                   help="after the campaign, also judge the corpus's documented findings on the campaign's builds "
                   "(the report's findings matrix; minutes on a first run, outside the time budget; "
                   "`lafuzz matrix` does it alone)")
    p.add_argument("--junit", metavar="FILE", help="also write the result as JUnit XML: a test case per property "
                   "and per finding, new findings failed, known ones skipped with their issue (for CI)")
    add_strict(p)
    backend_options.add_arguments(p)
    p.set_defaults(func=run_campaign)

