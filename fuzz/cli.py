"""``lafuzz``: the command-line tool of the suite (one entry point, one subcommand per job).

Each subcommand adds its own parser beside its command (``add_subcommand`` of ``fuzz/commands/<name>.py``,
``fuzz.bench.cli`` and ``fuzz.setup.cli``); this module puts them under one parser and runs the one asked for.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

from fuzz import backend_options, environment
from fuzz.bench import cli as bench
from fuzz.commands import (
    backends,
    campaign,
    export,
    import_cuda,
    matrix,
    merge,
    promote,
    replay,
    report,
    repro,
)
from fuzz.export import gtest_cli as gtest
from fuzz.setup import cli as setup
from fuzz.usage import EXIT_USAGE, UsageError

EXIT_GRACE_S = 5.0
"""How long ``lafuzz campaign`` gives the interpreter to shut down once its last line is out (it takes well under a
second) before the process ends itself: a thread of a library that never ends must not keep a CI job waiting."""


def build_parser() -> argparse.ArgumentParser:
    """``lafuzz`` and its subcommands, in the order its help lists them."""
    parser = argparse.ArgumentParser(
        prog="lafuzz",
        description="Differential fuzzing of LinearAttention's state_window across the oracle, "
        "the WGSL kernel and ONNX Runtime's execution providers.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for command in (backends, campaign, replay, repro, matrix, export, gtest, promote, merge, report, import_cuda,
                    bench):
        command.add_subcommand(sub)
    setup.add_subcommand(sub, list_backends=backends.list_backends)
    return parser


def _end_promptly(status: int) -> None:
    """Flush the output, and end the process with ``status`` ``EXIT_GRACE_S`` from now if it has not ended by then
    (a daemon thread: the interpreter's shutdown, which joins threads, does not wait for it)."""
    sys.stdout.flush()
    sys.stderr.flush()

    def end() -> None:
        time.sleep(EXIT_GRACE_S)
        os._exit(status)

    threading.Thread(target=end, name="lafuzz-exit", daemon=True).start()


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
