"""Bad command-line input: one error type and one exit status for ``lafuzz`` and ``python -m fuzz.bench``.

Commands raise ``UsageError`` at the boundary; each entry point's ``main`` prints it as one line and
exits with ``EXIT_USAGE``, never with a traceback.
"""

import argparse
from collections.abc import Callable

EXIT_USAGE = 2


class UsageError(Exception):
    """A command was given something it cannot use (unknown name, bad URL, missing path, bad data): exit 2."""


def whole_number(minimum: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number of at least ``minimum`` (else argparse's one-line error, exit 2)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected a number >= {minimum}, got {text!r}")
        return value

    return parse
