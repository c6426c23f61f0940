"""``lafuzz import-cuda``: the CUDA EP reference cases written as corpus entries."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fuzz.output import prepare_output


def import_cuda(args: argparse.Namespace) -> int:
    """Write the reference cases under ``--corpus``."""
    from fuzz.corpus.cuda_reference import import_reference

    root = prepare_output(Path(args.corpus), "--corpus")
    written = import_reference(root, Path(args.source) if args.source else None)
    print(f"wrote {len(written)} reference entries under {args.corpus}")
    return 0


def add_subcommand(sub: Any) -> None:
    """Add ``import-cuda`` to ``lafuzz``'s subcommands."""
    p = sub.add_parser("import-cuda", help="write the CUDA EP reference cases as corpus entries")
    p.add_argument("--corpus", default="corpus")
    p.add_argument("--source", help="directory of cuda_reference.json/.npz (default: shared/cuda-reference)")
    p.set_defaults(func=import_cuda)
