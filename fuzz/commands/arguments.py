"""What the subcommands of ``lafuzz`` share: name lists, backends opened for a command, usage errors, ``--strict``."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from fuzz.usage import EXIT_USAGE, UsageError, whole_number

EXIT_REGRESSION = 1
"""``lafuzz replay``'s and ``lafuzz repro``'s status when a case fails."""
EXIT_UNREADABLE = EXIT_USAGE
"""``lafuzz replay``'s status when an entry could not be read (the others are still replayed)."""

positive = whole_number(1)


def listed(text: str | None, known: list[str]) -> list[str]:
    """Comma-separated names, or ``known`` for none or ``all``."""
    return known if text in (None, "all") else [n.strip() for n in text.split(",") if n.strip()]


def backend_names(text: str | None) -> list[str]:
    """``--backends``: comma-separated backend names, or every registry name for none or ``all``."""
    from fuzz.backends import REGISTRY

    return listed(text, list(REGISTRY))


def open_backends(names: list[str]) -> tuple[dict, dict[str, str]]:
    """Create the named backends that exist here, keyed by their own names; and why the others do not.

    Crash-prone backends run isolated (``fuzz.backends.isolation``): the corpus holds inputs that crash them.
    A device chosen on the command line that a backend does not have is a usage error (``NoSuchDevice``).
    """
    from fuzz.backends import NoSuchDevice, Unavailable, create

    found, missing = {}, {}
    for name in names:
        try:
            backend = create(name, isolate=True)
        except NoSuchDevice:
            raise
        except Unavailable as err:
            missing[name] = str(err)
        except KeyError as err:
            raise UsageError(err.args[0]) from err
        else:
            found[backend.name] = backend
    return found, missing


def checked(check: Callable[..., Any], *args: object) -> None:
    """Run a validating call; its ``KeyError``/``ValueError`` becomes a ``UsageError``."""
    try:
        check(*args)
    except (KeyError, ValueError) as err:
        raise UsageError(err.args[0] if err.args else str(err)) from err


def add_strict(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--strict", action="store_true",
                        help="treat known issues as new: a known failure is a finding (exit 1), and no "
                        "backend sits out the cases a known issue affects")
