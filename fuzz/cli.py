"""``lafuzz``: the command-line tool of the suite (one entry point, one subcommand per job)."""

from __future__ import annotations

import argparse
import os
import sys


def _prepare_environment() -> None:
    """Settings every WebGPU stack here needs before it loads (see ENVIRONMENT notes in the README)."""
    runtime = os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/xdg-runtime-{os.getuid()}")
    os.makedirs(runtime, exist_ok=True)
    os.environ.setdefault("ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER", "1")


def _cmd_backends(args: argparse.Namespace) -> int:
    from fuzz.backends import probe_all

    for item in probe_all(args.names.split(",") if args.names else None):
        if item.capabilities is None:
            print(f"{item.name:<12} unavailable: {item.reason}")
            continue
        caps = item.capabilities
        versions = ", ".join(f"{k} {v}" for k, v in caps.versions.items())
        print(f"{item.name:<12} {caps.device}")
        print(f"{'':<12} dtypes={','.join(caps.dtypes)} window={caps.window} aliasing={caps.aliasing}"
              f" [{versions}]")
        for note in caps.notes:
            print(f"{'':<12} note: {note}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lafuzz",
        description="Differential fuzzing of LinearAttention's state_window across the oracle, "
        "the WGSL kernel and ONNX Runtime's execution providers.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("backends", help="list the backends this machine has and what they can do")
    p.add_argument("--names", help="comma-separated backend names (default: all)")
    p.set_defaults(func=_cmd_backends)
    return parser


def main(argv: list[str] | None = None) -> int:
    _prepare_environment()
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
