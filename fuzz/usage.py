"""Bad command-line input: one error type and one exit status for ``lafuzz`` and ``python -m fuzz.bench``.

Commands raise ``UsageError`` at the boundary; each entry point's ``main`` prints it as one line and
exits with ``EXIT_USAGE``, never with a traceback.
"""

EXIT_USAGE = 2


class UsageError(Exception):
    """A command was given something it cannot use (unknown name, bad URL, missing path, bad data): exit 2."""
