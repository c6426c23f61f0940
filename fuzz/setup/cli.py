"""``lafuzz setup``: check the system packages, install the missing parts into their home, list the backends.

Exit status 0 when every part it could install is in place (a missing system package is a line naming its install
command, not a failure: the backends that need it are listed as unavailable); 1 when an install failed.
"""

from __future__ import annotations

import argparse
import subprocess
from collections.abc import Callable

from fuzz import data_dir
from fuzz.setup import system

EXIT_INSTALL_FAILED = 1

ListBackends = Callable[[argparse.Namespace], int]
"""``lafuzz backends``'s handler, which setup ends with (passed in: the command line sits above this package)."""


def log(line: str) -> None:
    print(f"[setup] {line}", flush=True)


def missing_system_packages() -> set[system.SystemPackage]:
    """Check each system package, one line each; the missing ones."""
    missing = set()
    for package in system.PACKAGES:
        there = package.found()
        if there is None:
            missing.add(package)
            log(f"missing {package.what}, for {package.needed_for}; as root: {package.install}")
        else:
            log(f"found {there}")
    return missing


def set_up(list_backends: ListBackends) -> int:
    home = data_dir.setup_home()
    log(f"lafuzz's own parts go to {home}")
    missing = missing_system_packages()
    from fuzz.setup.parts import PARTS  # the other builds' modules, imported only when set up

    parts = [make(home) for make in PARTS]
    if all(part.in_place() for part in parts):
        log("nothing to do: " + " and ".join(f"{part.name} ({part.folder})" for part in parts) + " in place")
    failed = False
    for part in parts:
        if part.in_place():
            continue
        if part.needs in missing:
            log(f"skipping {part.name}: it needs {part.needs.what}, missing (above)")
            continue
        try:
            part.install(log)
        except (OSError, subprocess.CalledProcessError) as err:
            log(f"ERROR: {part.name} not installed in {part.folder}: {err}")
            failed = True
    log("the backends found:")
    list_backends(argparse.Namespace(names=None))
    return EXIT_INSTALL_FAILED if failed else 0


def add_subcommand(subparsers: argparse._SubParsersAction, list_backends: ListBackends) -> argparse.ArgumentParser:
    """Add ``setup`` to a subcommand parser; the handler is ``args.func(args) -> exit status``."""
    parser = subparsers.add_parser(
        "setup", description=__doc__,
        help="install what the other builds need and pip cannot bring (npm packages, a second venv) and say which "
             "system packages are missing; then list the backends")
    parser.set_defaults(func=lambda args: set_up(list_backends))
    return parser
