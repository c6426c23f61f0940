"""Argument types the benchmarks' command lines share: comma-separated integers and dtype names."""

from __future__ import annotations

import argparse

DTYPE_NAMES = {"fp16": "float16", "float16": "float16", "fp32": "float32", "float32": "float32"}


def ints(text: str) -> tuple[int, ...]:
    """``"1,4,8"`` as ``(1, 4, 8)``."""
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def dtypes(text: str) -> tuple[str, ...]:
    """``"fp16,fp32"`` (or the NumPy names) as NumPy dtype names."""
    try:
        return tuple(DTYPE_NAMES[part.strip()] for part in text.split(","))
    except KeyError:
        raise argparse.ArgumentTypeError(f"dtypes are fp16/float16 and fp32/float32, got {text!r}") from None
