"""``lafuzz``: the command-line tool of the suite (one entry point, one subcommand per job)."""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fuzz import backend_options, compile_cache, environment
from fuzz.output import prepare_output
from fuzz.usage import EXIT_USAGE, UsageError, whole_number

if TYPE_CHECKING:

    from fuzz.campaign.focus import Focus
    from fuzz.campaign.shard import Shard
    from fuzz.campaign.summary import Summary
    from fuzz.corpus.entry import CorpusError, Entry
    from fuzz.export.matrix import Matrix

EXIT_REGRESSION = 1
EXIT_UNREADABLE = EXIT_USAGE
"""``lafuzz replay``'s status when an entry could not be read (the others are still replayed)."""
DEFAULT_BUDGET_S = 180.0
"""The campaign's time budget when neither ``--time`` nor ``--examples`` is given."""
AUTO_SHARD = "auto"
"""``--shard auto``: the shard from the environment of a CI or batch system (``Shard.from_environment``)."""
EXIT_GRACE_S = 5.0
"""How long ``lafuzz campaign`` gives the interpreter to shut down once its last line is out (it takes well under a
second) before the process ends itself: a thread of a library that never ends must not keep a CI job waiting."""


def _cmd_backends(args: argparse.Namespace) -> int:
    import tempfile

    from fuzz.backends import probe_all

    log = Path(tempfile.gettempdir()) / f"lafuzz-backends-{os.getuid()}.log"
    log.unlink(missing_ok=True)
    with environment.native_output_to(log):  # Dawn's limit warnings, once per device made
        found = probe_all(args.names.split(",") if args.names else None)
    if log.exists() and log.stat().st_size:
        print(f"(messages of the native libraries: {log})")
    for item in found:
        if item.capabilities is None:
            print(f"{item.name:<12} unavailable: {item.reason}")
            continue
        caps = item.capabilities
        versions = ", ".join(f"{k} {v}" for k, v in caps.versions.items())
        print(f"{item.name:<12} {caps.device}")
        print(f"{'':<12} ops={','.join(caps.ops)} dtypes={','.join(caps.dtypes)} window={caps.window} "
              f"aliasing={caps.aliasing} [{versions}]")
        if caps.implementation is not None:
            print(f"{'':<12} implementation: {caps.implementation}")
        if caps.devices:
            print(f"{'':<12} devices: " + "; ".join(f"{i}: {d}" for i, d in enumerate(caps.devices)))
        for note in caps.notes:
            print(f"{'':<12} note: {note}")
    print(compile_cache.current().describe())
    return 0


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


_positive = whole_number(1)


def _shard(text: str) -> Shard | str:

    from fuzz.campaign.shard import Shard

    if text == AUTO_SHARD:
        return text
    try:
        return Shard.parse(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _names(text: str | None, known: list[str]) -> list[str]:
    return known if text in (None, "all") else [n.strip() for n in text.split(",") if n.strip()]


def _backend_names(text: str | None) -> list[str]:
    from fuzz.backends import REGISTRY

    return _names(text, list(REGISTRY))


def _open_backends(names: list[str]) -> tuple[dict, dict[str, str]]:
    """Create the named backends that exist here, keyed by their own names; and why the others do not.

    Crash-prone backends run isolated (``fuzz.backends.isolation``): the corpus holds inputs that crash them.
    A device chosen on the command line that a backend does not have is a usage error (``NoSuchDevice``).
    """
    from fuzz.backends import NoSuchDevice, Unavailable, create

    found, missing = {}, {}
    for name in names:
        try:
            backend = create(name, isolate=True)
        except NoSuchDevice:
            raise
        except Unavailable as err:
            missing[name] = str(err)
        except KeyError as err:
            raise UsageError(err.args[0]) from err
        else:
            found[backend.name] = backend
    return found, missing


def _checked(check, *args: object) -> None:
    """Run a validating call; its ``KeyError``/``ValueError`` becomes a ``UsageError``."""
    try:
        check(*args)
    except (KeyError, ValueError) as err:
        raise UsageError(err.args[0] if err.args else str(err)) from err


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
        summary.matrix = _matrix_of(entries, chosen).to_json()
    summary.matrix["seconds"] = round(time.monotonic() - started, 1)
    print(f"[lafuzz] findings matrix: {len(entries)} documented findings on {', '.join(chosen)} "
          f"({summary.matrix['seconds']} s)", file=sys.stderr)
    write_report(summary, Path(summary.config["out"]))


def _campaign_ops(requested: str | None, described: dict[str, dict[str, Any]]) -> list[str]:
    """``--ops`` (default: every op), less the ops fewer than two of the campaign's backends run (the oracle among
    them), each with a line on stderr; where no op has two, every op one of them runs (the oracle alone checks
    its window against its own prefix formulation)."""
    from fuzz.model.ops import OPS

    ops = _names(requested, list(OPS))
    unknown = [op for op in ops if op not in OPS]
    if unknown:
        raise UsageError(f"--ops: unknown op(s) {', '.join(unknown)}; known: {', '.join(OPS)}")
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


def _cmd_campaign(args: argparse.Namespace) -> int:
    from fuzz.backends import REGISTRY
    from fuzz.campaign import github
    from fuzz.campaign.campaign import Campaign, CampaignConfig
    from fuzz.campaign.database import LOCAL, open_database
    from fuzz.campaign.junit import write_junit
    from fuzz.campaign.report import REPORT, SUMMARY
    from fuzz.campaign.resources import default_jobs
    from fuzz.campaign.worker import NATIVE_LOG, probe
    from fuzz.corpus.entry import CorpusError, marks
    from fuzz.engine.properties import PROPERTIES, resolve_property
    from fuzz.export.exporter import export_upstream

    shard = _campaign_shard(args.shard, seeded=args.seed is not None)
    seed = _campaign_seed(args.seed)
    properties = _names(args.properties, list(PROPERTIES))
    for name in properties:
        _checked(resolve_property, name)
    names = _backend_names(args.backends)
    unknown = [n for n in names if n not in REGISTRY and ":" not in n]
    if unknown:
        raise UsageError(f"unknown backend(s) {', '.join(unknown)}; known: {', '.join(REGISTRY)}")
    if args.database:
        _checked(open_database, args.database)
    prepare_output(Path(args.out))
    try:
        marks(Path(args.corpus))  # the known-failure marks every worker reads: a bad entry is one line here
    except CorpusError as err:
        raise UsageError(f"--corpus: {err}") from err
    try:
        with environment.native_output_to(Path(args.out) / NATIVE_LOG):
            found = probe(names)
    except KeyError as err:
        raise UsageError(err.args[0]) from err
    for name, reason in found.missing.items():
        print(f"[lafuzz] skipping backend {name}: {reason}", file=sys.stderr)
    if not found.usable:
        print("lafuzz campaign: no backend is available here (see `lafuzz backends`)", file=sys.stderr)
        return EXIT_USAGE
    ops = _campaign_ops(args.ops, found.described)
    skipped = [name for name in properties if not any(resolve_property(name).applies_to(op) for op in ops)]
    for name in skipped:
        print(f"[lafuzz] not running {name}: it has no cases of {', '.join(ops)}", file=sys.stderr)
    properties = [name for name in properties if name not in skipped]
    focus = _campaign_focus(args, found.described, ops, properties)
    config = CampaignConfig(
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
    campaign = Campaign(config, backend_info=found.described, on_saved=export_upstream)
    summary = campaign.run()
    campaign.saving("the implementation's hashes", Path(args.corpus), lambda: _remember_implementation(args, summary))
    if args.matrix:
        _add_matrix(summary, Path(args.corpus), found.usable)
    if args.junit:
        campaign.saving("the JUnit report", Path(args.junit), lambda: write_junit(summary, Path(args.junit)))
    campaign.saving("the GitHub job summary", Path(os.environ.get(github.STEP_SUMMARY, "")),
                    lambda: github.publish(summary, os.environ))
    out = Path(args.out)
    print("calls per backend: " + ", ".join(
        f"{name} {calls} ({summary.window_calls.get(name, 0)} with W > 0, "
        f"{summary.backends.get(name, {}).get('window', '?')}; {summary.backend_seconds.get(name, 0):g} s"
        + _compiled(summary, name) + ")" for name, calls in summary.backend_calls.items()))
    print("coverage by op: " + ", ".join(f"{op} {hit} of {total} buckets" for op, (hit, total)
                                         in summary.coverage_by_op.items() if op in config.ops))
    new = len(summary.new_findings)
    if summary.units_lost:
        print(f"{summary.units_lost} unit(s) lost with a worker process that died: their cases went unchecked "
              f"(see {out / NATIVE_LOG} for what native code printed)")
    if summary.database_outages:
        spans = ", ".join(f"{start:g}-{end:g} s" for start, end in summary.database_outages)
        print(f"the shared example database was unreachable for {summary.database_unreachable_s:g} s ({spans} "
              f"from the start); {out / LOCAL} stood in")
    refused = {Path(r.path) for r in campaign.not_saved}
    where = ", ".join(f"{name}: {'NOT written (disk full)' if path in refused else path}"
                      for name, path in (("report", out / REPORT), ("summary", out / SUMMARY)))
    disk = f"; the disk filled up: {len(campaign.not_saved)} thing(s) not saved" if campaign.not_saved else ""
    print(f"{new} new and {len(summary.findings) - new} known finding(s) in {summary.checked_examples} "
          f"checked examples, {summary.checked_cases} cases ({summary.cases_per_second} examples/s, "
          f"peak {summary.peak_rss_mib} MiB, "
          f"exit {summary.exit_status}{disk}{_unchecked(summary)}); {where}, corpus: {out / 'corpus'}")
    return summary.exit_status


def _unchecked(summary: Summary) -> str:
    """For the last line: the units whose cases went unchecked, and the errors no case could report."""
    said = [f"{count} {what}" for count, what in (
        (summary.units_lost, "unit(s) lost with a worker process that died"),
        (summary.units_abandoned, "unit(s) abandoned with a worker that hung past the budget"),
        (len(summary.unit_errors), "error(s) with no case to report them by (summary.json: unit_errors)"),
    ) if count]
    return "".join(f"; {line}" for line in said)


def _end_promptly(status: int) -> None:
    """Flush the output, and end the process with ``status`` ``EXIT_GRACE_S`` from now if it has not ended by then
    (a daemon thread: the interpreter's shutdown, which joins threads, does not wait for it)."""
    sys.stdout.flush()
    sys.stderr.flush()

    def end() -> None:
        time.sleep(EXIT_GRACE_S)
        os._exit(status)

    threading.Thread(target=end, name="lafuzz-exit", daemon=True).start()


def _compiled(summary: Summary, name: str) -> str:
    """``", N pipelines compiled in S s"`` for a backend that says what it compiled, else nothing."""
    if name not in summary.backend_compiles:
        return ""
    return f", {summary.backend_compiles[name]} pipelines compiled in {summary.compile_seconds.get(name, 0):g} s"


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


def _cmd_replay(args: argparse.Namespace) -> int:
    from fuzz.corpus.replay import FAILED, NOW_FIXED, REFUSED, STILL_FAILING, replay, unreadable_line

    entries, unreadable = _read_entries(_entry_dirs(args.paths, args.corpus))
    for error in unreadable:
        print(unreadable_line(error))
    entries = [e for e in entries if not args.property or e.finding.property == args.property]
    backends, missing = _open_backends(_backend_names(args.backends))
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


def _matrix_of(entries: list[Entry], names: list[str]) -> Matrix:
    """The findings matrix of ``entries`` on the backends ``names`` that exist here (the others named on stderr)."""
    from fuzz.export.matrix import findings_matrix

    backends, missing = _open_backends(names)
    for name, reason in missing.items():
        print(f"[lafuzz] backend {name} not available: {reason}", file=sys.stderr)
    try:
        return findings_matrix(entries, list(backends.values()))
    finally:
        for b in backends.values():
            b.close()


MATRIX_BEGIN, MATRIX_END = "<!-- lafuzz matrix -->", "<!-- /lafuzz matrix -->"
"""The lines between which ``lafuzz matrix --update FILE`` writes the table."""


def _cmd_matrix(args: argparse.Namespace) -> int:
    import json
    import time

    from fuzz.export.matrix import builds, documented_findings

    entries = documented_findings(Path(args.corpus))
    if not entries:
        raise UsageError(f"--corpus {args.corpus}: no entry records a known failure")
    started = time.monotonic()
    matrix = _matrix_of(entries, builds(_backend_names(None)) if args.backends is None else
                        _backend_names(args.backends))
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


def _cmd_repro(args: argparse.Namespace) -> int:
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
        names = _names(args.backends, [])
    elif entry.expected_arrays:
        names = _backend_names(None)
    else:
        names = list(recorded_backends(entry)[0])
    backends, missing = _open_backends(names)
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


def _cmd_promote(args: argparse.Namespace) -> int:
    from fuzz.corpus.candidates import promote
    from fuzz.corpus.entry import CorpusError

    try:
        path = promote(Path(args.candidate), prepare_output(Path(args.corpus), "--corpus"))
    except (CorpusError, FileExistsError) as err:
        raise UsageError(str(err)) from err
    print(f"promoted to {path}: replay now checks it (lafuzz repro {path})")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from fuzz.corpus import entry as corpus
    from fuzz.export.exporter import export_entry
    from fuzz.export.plan import ExportError

    try:
        entry = corpus.read_entry(Path(args.path))
    except corpus.CorpusError as err:
        raise UsageError(str(err)) from err
    backends, missing = _open_backends(_backend_names(args.backends))
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


def _cmd_merge(args: argparse.Namespace) -> int:
    from fuzz.campaign.merge import merge_runs

    prepare_output(Path(args.out))
    try:
        merged = merge_runs([Path(p) for p in args.runs], Path(args.out))
    except ValueError as err:
        raise UsageError(str(err)) from err
    print(f"merged {merged.merged_from} runs: {merged.examples} cases, {len(merged.findings)} finding(s) "
          f"-> {args.out}/report.html")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
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


def _cmd_import_cuda(args: argparse.Namespace) -> int:
    from fuzz.corpus.cuda_reference import import_reference

    root = prepare_output(Path(args.corpus), "--corpus")
    written = import_reference(root, Path(args.source) if args.source else None)
    print(f"wrote {len(written)} reference entries under {args.corpus}")
    return 0


def _add_strict(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--strict", action="store_true",
                        help="treat known issues as new: a known failure is a finding (exit 1), and no "
                        "backend sits out the cases a known issue affects")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lafuzz",
        description="Differential fuzzing of LinearAttention's state_window across the oracle, "
        "the WGSL kernel and ONNX Runtime's execution providers.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("backends", help="list the backends this machine has, what they can do and their devices")
    p.add_argument("--names", help="comma-separated backend names (default: all)")
    backend_options.add_arguments(p)
    p.set_defaults(func=_cmd_backends)

    p = sub.add_parser(
        "campaign", help="fuzz: run the properties for a budget, save findings, write a report",
        epilog="exit status: 0 cases checked, only known findings or none; 1 a new finding (or an error before a "
               "unit's first case); 3 nothing checked; 4 nothing new, but units went unchecked (a worker process died, "
               "or hung past the budget's grace); 5 nothing new, but the output disk filled up (ENOSPC or EDQUOT): "
               "the campaign stopped, what it wrote is kept, the summary too if it fitted (the last line says); 130 "
               "stopped by Ctrl-C or SIGTERM (running units finish, the summary is written), nothing new; 2 bad usage",
    )
    p.add_argument("--time", type=_seconds, help="time budget, e.g. 90s, 3m, 1h (default 3m)")
    p.add_argument("--examples", type=_positive, help="example budget instead of time: a fixed amount of work")
    p.add_argument("--seed", type=int, help="campaign seed: same seed and shard, same work "
                   "(default: a fresh seed, printed at the start)")
    p.add_argument("--shard", type=_shard, default="1/1",
                   help="run shard i of n, e.g. 2/4, or auto: from the CI or batch system's variables "
                   "(LAFUZZ_SHARD, GitLab, CircleCI, Buildkite, Kubernetes Indexed Job); every shard of a "
                   "campaign needs the same --seed (default 1/1)")
    p.add_argument("-j", "--jobs", type=_positive,
                   help="worker processes (default: one per usable CPU, as many as the available memory "
                   "holds; fuzz/campaign/resources.py)")
    p.add_argument("--backends", help="comma-separated backends, or all (default: all available here)")
    p.add_argument("--properties", help="comma-separated properties, or all (default)")
    p.add_argument("--ops", help="comma-separated ops, or all (default: LinearAttention and CausalConvWithState, "
                   "each where two of the backends run it)")
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
    p.add_argument("--examples-per-unit", type=_positive, default=50,
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
    _add_strict(p)
    backend_options.add_arguments(p)
    p.set_defaults(func=_cmd_campaign)

    replay_help = ("re-check corpus entries; exit 1 on any regression, 2 when an entry could not be read or "
                   "names a backend that is neither a registry name nor given with --backends (each is named in "
                   "one line; the others, and the entry's other backends, are still replayed)")
    p = sub.add_parser("replay", help=replay_help, description=replay_help)
    p.add_argument("paths", nargs="*", help="entry directories or corpus roots (default: --corpus)")
    p.add_argument("--corpus", default="corpus")
    p.add_argument("--backends", help="comma-separated backends, or all (default: all available here)")
    p.add_argument("--property", help="only entries of this property")
    p.add_argument("-v", "--verbose", action="store_true", help="print every verdict, passes included")
    _add_strict(p)
    backend_options.add_arguments(p)
    p.set_defaults(func=_cmd_replay)

    p = sub.add_parser("repro", help="re-run one corpus entry (a campaign's, a test failure's, the corpus's) and "
                       "explain it; exit 2 when it cannot be read")
    p.add_argument("path")
    p.add_argument("--property", help="check this property instead of the entry's")
    p.add_argument("--backends", help="comma-separated backends instead of the entry's")
    _add_strict(p)
    backend_options.add_arguments(p)
    p.set_defaults(func=_cmd_repro)

    matrix_help = ("run every documented finding of the corpus on every build present: wrong results, crash "
                   "(signal), hang, refused, accepted invalid, fixed or cannot load, as a Markdown table")
    p = sub.add_parser("matrix", help=matrix_help, description=matrix_help)
    p.add_argument("--corpus", default="corpus")
    p.add_argument("--backends", help="comma-separated backends, or all (default: all available here)")
    p.add_argument("--json", metavar="FILE", help="also write the verdicts as JSON")
    p.add_argument("--update", metavar="FILE", help=f"write the table into FILE between {MATRIX_BEGIN} and "
                   f"{MATRIX_END} (e.g. docs/findings/README.md)")
    backend_options.add_arguments(p)
    p.set_defaults(func=_cmd_matrix)

    p = sub.add_parser("export", help="write a corpus entry as a standalone upstream bug report: model.onnx, "
                       "ONNX test data, repro.py (numpy and onnxruntime only) and ISSUE.md")
    p.add_argument("path", help="a corpus entry directory")
    p.add_argument("--out", required=True, help="the folder to write (replaced if it holds an earlier export)")
    p.add_argument("--backends", help="backends to cross-check the case on, or all (default: all available here)")
    p.add_argument("--no-run", action="store_true", help="do not run the written repro.py once to record its output")
    p.set_defaults(func=_cmd_export)

    p = sub.add_parser("promote", help="copy a corpus candidate (a campaign's OUT/near-misses/<property>/<id>) "
                       "into the regression corpus")
    p.add_argument("candidate", help="the candidate's entry directory")
    p.add_argument("--corpus", default="corpus", help="the corpus to add it to (default corpus)")
    p.set_defaults(func=_cmd_promote)

    p = sub.add_parser("merge", help="merge campaign outputs (shards) into one corpus, database and report")
    p.add_argument("runs", nargs="+", help="campaign output directories")
    p.add_argument("--out", required=True)
    p.set_defaults(func=_cmd_merge)

    p = sub.add_parser("report", help="regenerate report.html from a summary.json (or its directory)")
    p.add_argument("summary")
    p.add_argument("--png", help="also write each plot as DIR/report-<name>.png")
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("import-cuda", help="write the CUDA EP reference cases as corpus entries")
    p.add_argument("--corpus", default="corpus")
    p.add_argument("--source", help="directory of cuda_reference.json/.npz (default: shared/cuda-reference)")
    p.set_defaults(func=_cmd_import_cuda)

    from fuzz.bench.cli import add_subcommand as add_bench

    add_bench(sub)
    from fuzz.setup.cli import add_subcommand as add_setup

    add_setup(sub, list_backends=_cmd_backends)
    __import__("fuzz.export.gtest_cli", fromlist=["add_subcommand"]).add_subcommand(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The command line (``argv``: the arguments; None: the process's own, when it runs as ``lafuzz``, and a
    campaign's process then ends promptly after its last line: ``_end_promptly``)."""
    environment.prepare()
    args = build_parser().parse_args(argv)
    try:
        if hasattr(args, "ep_library"):
            backend_options.apply(args)
        status: int = args.func(args)
        if argv is None and args.command == "campaign":
            _end_promptly(status)
        return status
    except UsageError as err:
        print(f"lafuzz {args.command}: {err}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as err:  # a full disk in any command: one line, not a traceback
        from fuzz.atomic import OutOfSpace, out_of_space
        from fuzz.campaign.summary import EXIT_OUT_OF_SPACE

        if not out_of_space(err):
            raise
        print(f"lafuzz {args.command}: {OutOfSpace.of(err, 'its output').line()}", file=sys.stderr)
        return EXIT_OUT_OF_SPACE


if __name__ == "__main__":
    sys.exit(main())
