"""``lafuzz gtest``: write ONNX Runtime C++ ``OpTester`` tests of LinearAttention and CausalConvWithState from the
built-in cases and corpus entries, or replay the same tests through ORT's Python API (``--replay``).

Writing: one ``.cc`` file per op in ``--out`` (default ``docs/upstream``). Replaying: one line per test and EP,
then a total; exit status 0 when nothing failed but as documented (a corpus entry's known defect, ``KNOWN``),
1 when a test failed, 2 for bad usage.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from fuzz import atomic
from fuzz.export.gtest_cases import DEFAULT_ENTRIES, GtestCase, builtin_cases, entry_cases
from fuzz.export.gtest_expected import expectations
from fuzz.export.gtest_render import render_file
from fuzz.export.gtest_replay import FAIL, KNOWN, PASS, PROVIDERS, SKIP, available, replay
from fuzz.model.ops import CAUSAL_CONV, LINEAR_ATTENTION, op_named
from fuzz.output import prepare_output
from fuzz.usage import UsageError

FILES = {LINEAR_ATTENTION.name: "linear_attention_window_op_test.cc",
         CAUSAL_CONV.name: "causal_conv_with_state_window_op_test.cc"}
EXIT_FAILED = 1


def selected(args: argparse.Namespace) -> dict[str, list[GtestCase]]:
    """The tests by op: the built-in set unless ``--no-builtin``, then the corpus entries asked for."""
    tests: dict[str, list[GtestCase]] = builtin_cases() if not args.no_builtin else {name: [] for name in FILES}
    entries = args.entry if args.entry is not None else list(DEFAULT_ENTRIES)
    try:
        from_corpus = entry_cases(args.corpus, entries)
    except ValueError as error:
        raise UsageError(str(error)) from error
    for op_name, cases in from_corpus.items():
        tests[op_name] += cases
    if args.only:
        tests = {op: [t for t in cases if args.only in f"{op}/{t.name}"] for op, cases in tests.items()}
    return tests


def write(tests: dict[str, list[GtestCase]], out: Path, source: str) -> list[Path]:
    """Write each op's file into ``out`` (``UsageError`` for an ``out`` that cannot be written); the paths."""
    prepare_output(out)
    return [atomic.write_text(out / FILES[op_name],
                              render_file(op_named(op_name), [(t, expectations(t)) for t in cases], source))
            for op_name, cases in tests.items()]


def run_replay(tests: dict[str, list[GtestCase]], names: Sequence[str]) -> int:
    """Replay every test on every EP present; one line each, then the total."""
    providers, missing = available(names)
    for line in missing:
        print(line, flush=True)
    counts: dict[str, int] = {}
    for verdict in replay([t for cases in tests.values() for t in cases], providers):
        print(verdict.line(), flush=True)
        counts[verdict.status] = counts.get(verdict.status, 0) + 1
    total = sum(counts.values())
    on = ", ".join(p.name for p in providers) or "no EP"
    print(f"{total} test runs on {on}: {counts.get(PASS, 0)} passed, {counts.get(FAIL, 0)} failed, "
          f"{counts.get(KNOWN, 0)} failed as documented, {counts.get(SKIP, 0)} skipped")
    return EXIT_FAILED if counts.get(FAIL) else 0


def run_from_args(args: argparse.Namespace) -> int:
    tests = selected(args)
    if args.replay:
        names = [name.strip() for name in args.ep.split(",")]
        unknown = [name for name in names if name not in PROVIDERS]
        if unknown:
            raise UsageError(f"--ep: unknown {', '.join(unknown)}; known: {', '.join(PROVIDERS)}")
        return run_replay(tests, names)
    from_corpus = sum(t.origin != "built-in" for cases in tests.values() for t in cases)
    total = sum(len(cases) for cases in tests.values())
    for path in write(tests, args.out, f"{total - from_corpus} built-in cases, {from_corpus} from corpus entries"):
        print(path)
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=Path("docs/upstream"), help="where the .cc files go "
                        "(default docs/upstream)")
    parser.add_argument("--corpus", type=Path, default=Path("corpus"), help="the corpus the entries are read from")
    parser.add_argument("--entry", action="append", help="a corpus entry (relative to --corpus) to add as a "
                        f"regression test; repeated (default: the {len(DEFAULT_ENTRIES)} documented defects)")
    parser.add_argument("--no-builtin", action="store_true", help="leave the built-in cases out")
    parser.add_argument("--only", help="only the tests whose 'Op/Name' contains this text")
    parser.add_argument("--replay", action="store_true", help="run the tests through ORT's Python API instead of "
                        "writing them: one line per test and EP, then a total")
    parser.add_argument("--ep", default="cpu,cuda", help=f"the EPs to replay on, of {', '.join(PROVIDERS)} "
                        "(default cpu,cuda; one this onnxruntime lacks is skipped with a line)")


def add_subcommand(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``gtest`` to a subcommand parser; the handler is ``args.func(args) -> exit status``."""
    parser = subparsers.add_parser("gtest", description=__doc__, help="write (or --replay) ONNX Runtime C++ OpTester "
                                   "tests of both ops from built-in cases and corpus entries")
    add_arguments(parser)
    parser.set_defaults(func=run_from_args)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz.export.gtest_cli", description=__doc__)
    add_arguments(parser)
    try:
        return run_from_args(parser.parse_args(argv))
    except UsageError as error:
        print(f"gtest: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
