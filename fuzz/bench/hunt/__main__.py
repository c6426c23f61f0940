"""``python -m fuzz.bench.hunt``: the time-to-bug benchmark (see ``fuzz.bench.hunt.cli``)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
