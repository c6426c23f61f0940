"""The command line of the benchmark: ``python -m fuzz.bench`` and ``lafuzz bench``.

``add_subcommand(subparsers)`` adds ``bench`` to another parser (its handler is ``args.func``);
``main`` is the standalone entry point. Exit status: 0 when every gate passed, 1 when one failed,
2 for a usage error.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from fuzz import backend_options, environment
from fuzz.output import prepare_output
from fuzz.usage import EXIT_USAGE, UsageError
from kernels.options import KERNEL_PATHS

from . import gates
from .arguments import dtypes, ints
from .decoder_view import QUICK_WALL_SCHEDULE, WALL_SCHEDULE
from .protocol import FULL, QUICK
from .report import markdown, write_outputs
from .rollback import Acceptance
from .rounds import FULL_SCHEDULE, QUICK_SCHEDULE
from .runner import CHUNKED, Options, kernel_variant, run_benchmark
from .workload import QUICK_SHAPE, REFERENCE_SHAPE, Shape

EXIT_GATE_FAILED = 1
QUICK_GROWTH_CALLS = 10


def _shapes(text: str) -> tuple[Shape, ...]:
    try:
        return tuple(Shape.parse(part.strip()) for part in text.split(";") if part.strip())
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _paths(text: str) -> tuple[str, ...]:
    paths = tuple(part.strip() for part in text.split(","))
    try:
        for label in paths:
            kernel_variant(label)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return paths


def _acceptance(text: str) -> Acceptance:
    try:
        return Acceptance.parse(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The benchmark's options."""
    parser.add_argument("--out", type=Path, required=True, help="directory for results.json, report.md and the plot")
    parser.add_argument("--quick", action="store_true",
                        help=f"reduced protocol ({QUICK.warmups} warm-ups, {QUICK.iterations} iterations, "
                             f"{QUICK.repetitions} repetitions) at the small shape {QUICK_SHAPE.label}")
    parser.add_argument("--shapes", type=_shapes, help=f"'B,H,dk,dv;...' (default {REFERENCE_SHAPE.label}; "
                        f"with --quick {QUICK_SHAPE.label})")
    parser.add_argument("--dtypes", type=dtypes, default=("float16", "float32"), help="default fp16,fp32")
    parser.add_argument("--windows", type=ints, default=(0, 1, 4, 8), help="state_window values (0 is always added)")
    parser.add_argument("--seq-lens", type=ints, default=(1, 4, 8), help="draft lengths T (default 1,4,8)")
    parser.add_argument("--paths", type=_paths, default=("auto",),
                        help="kernel variants measured side by side in the same rounds (default auto; "
                             f"any of {', '.join((*KERNEL_PATHS, CHUNKED))}, each optionally @N to bound the row "
                             "groups per column and :generic for the pipeline that reads the sizes from its uniform "
                             "where the kernel would specialise on them, e.g. auto,scalar,auto@16, auto,chunked or "
                             "auto,auto:generic)")
    parser.add_argument("--template", type=Path, action="append", help="another WGSL template (e.g. the kernel "
                        "before a change, from git show REV:kernels/linear_attention.wgsl), measured beside the paths "
                        "as path 'template'; repeated, each as 'template:STEM' (its file name without the suffix)")
    parser.add_argument("--template-path", type=lambda t: _paths(t)[0], default="auto",
                        help="the variant the --template is compiled as (default auto; scalar for a kernel "
                             "from before vector columns)")
    parser.add_argument("--implementation", choices=("wgpu", "dawn"), default="wgpu",
                        help="wgpu-native (default; precise timestamps) or Dawn (timestamps quantized)")
    parser.add_argument("--acceptance", type=_acceptance, default=Acceptance(),
                        help="accepted-length distribution given a rejection: uniform (default) or geometric:R")
    parser.add_argument("--rounds", type=int, help=f"interleaved rounds of the kernel clock and of the decoder "
                        f"view's wall clock (default {FULL_SCHEDULE.rounds}; with --quick {QUICK_SCHEDULE.rounds})")
    parser.add_argument("--per-round", type=int, help=f"samples per series per round (default "
                        f"{FULL_SCHEDULE.per_round}; with --quick {QUICK_SCHEDULE.per_round})")
    parser.add_argument("--warmups", type=int, help="override the wall-clock protocol's warm-ups")
    parser.add_argument("--iterations", type=int, help="override the wall-clock protocol's measured iterations")
    parser.add_argument("--repetitions", type=int, help="override the wall-clock protocol's repetitions")
    parser.add_argument("--growth-calls", type=int, help="select-and-resume cycles of the memory growth check "
                        f"(default 100; with --quick {QUICK_GROWTH_CALLS})")
    parser.add_argument("--no-ort", action="store_true", help="skip the ORT WebGPU EP comparison")
    parser.add_argument("--floor", choices=gates.FLOORS, default=gates.SERIAL,
                        help="the floor the rollback gates judge the window's stores against: 'serial' (stored one "
                             "slot after another by the kernel's own workgroups, the default) or 'plain' (the extra "
                             "bytes stored at once: the memory limit, which the report prints either way)")
    parser.add_argument("--no-decoder-view", action="store_true",
                        help="skip the decoder's view: p* on the pipelined wall clock, where a rerun is an extra "
                             "dispatch (the headline p* gates go with it; the in-kernel p* gates stay)")
    backend_options.add_arguments(parser)


def options_from_args(args: argparse.Namespace) -> Options:
    """The run's ``Options`` from parsed arguments (``ValueError`` for an inconsistent choice; the
    kernel's adapter is the one ``--device``/``--adapter`` chose, ``fuzz.backend_options``)."""
    from fuzz.backends.kernel_backend import chosen_adapter

    protocol = QUICK if args.quick else FULL
    overrides = {name: getattr(args, name) for name in ("warmups", "iterations", "repetitions")
                 if getattr(args, name) is not None}
    schedule = QUICK_SCHEDULE if args.quick else FULL_SCHEDULE
    wall_schedule = QUICK_WALL_SCHEDULE if args.quick else WALL_SCHEDULE
    rounds = {name: getattr(args, name) for name in ("rounds", "per_round") if getattr(args, name) is not None}
    wall_rounds = {"rounds": args.rounds} if args.rounds is not None else {}
    default_shapes = (QUICK_SHAPE,) if args.quick else (REFERENCE_SHAPE,)
    growth = args.growth_calls if args.growth_calls is not None else (QUICK_GROWTH_CALLS if args.quick else 100)
    return Options(
        shapes=args.shapes or default_shapes,
        dtypes=args.dtypes,
        windows=tuple(sorted({0, *args.windows})),
        seq_lens=args.seq_lens,
        paths=args.paths,
        templates=tuple(args.template or ()),
        template_path=args.template_path,
        implementation=args.implementation,
        adapter=chosen_adapter(args.implementation, args.implementation)[1],
        acceptance=args.acceptance,
        protocol=replace(protocol, **overrides),
        schedule=replace(schedule, **rounds),
        wall_schedule=replace(wall_schedule, **wall_rounds),
        decoder_view=not args.no_decoder_view,
        growth_calls=growth,
        ort=not args.no_ort,
        floor=args.floor,
    )


def run_from_args(args: argparse.Namespace) -> int:
    """Run the benchmark, write the outputs, print the report; 1 if a gate failed (``UsageError`` for
    inconsistent options, which each entry point's ``main`` prints as one line, exit 2)."""
    environment.prepare()
    try:
        options = options_from_args(args)
    except ValueError as err:
        raise UsageError(str(err)) from err
    prepare_output(args.out)
    results = run_benchmark(options, log=lambda line: print(line, file=sys.stderr, flush=True))
    written = write_outputs(results, args.out)
    print(markdown(results))
    print("\n".join(written))
    return 0 if results["all_passed"] else EXIT_GATE_FAILED


def add_subcommand(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``bench`` to a subcommand parser; the handler is ``args.func(args) -> exit status``."""
    parser = subparsers.add_parser("bench", description=__doc__,
                                   help="performance and memory gates of docs/spec.md §5 (kernel, rollback, ORT)")
    add_arguments(parser)
    parser.set_defaults(func=run_from_args)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz.bench", description=__doc__)
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        backend_options.apply(args)
        return run_from_args(args)
    except UsageError as err:
        print(f"fuzz.bench: {err}", file=sys.stderr)
        return EXIT_USAGE
