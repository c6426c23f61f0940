"""``python -m fuzz.bench``: the benchmark's standalone entry point (see ``fuzz.bench.cli``)."""

import sys

from .cli import add_subcommand, main

__all__ = ["add_subcommand", "main"]

if __name__ == "__main__":
    sys.exit(main())
