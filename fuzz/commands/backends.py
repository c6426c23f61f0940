"""``lafuzz backends``: the backends this machine has, what they can do and their devices."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from fuzz import backend_options, compile_cache, environment


def list_backends(args: argparse.Namespace) -> int:
    """Probe every backend named (default: all) and print what each can do, or why it is unavailable; what was
    found is remembered for the next campaigns (``fuzz.backends.remembered``)."""
    import tempfile

    from fuzz.backends import probe_all
    from fuzz.backends.remembered import Remembered

    log = Path(tempfile.gettempdir()) / f"lafuzz-backends-{os.getuid()}.log"
    log.unlink(missing_ok=True)
    with environment.native_output_to(log):  # Dawn's limit warnings, once per device made
        found = probe_all(args.names.split(",") if args.names else None)
    Remembered().remember({item.name: (item.name, item.capabilities.to_json())
                           for item in found if item.capabilities is not None})
    if log.exists() and log.stat().st_size:
        print(f"(messages of the native libraries: {log})")
    for item in found:
        if item.capabilities is None:
            print(f"{item.name:<12} unavailable: {item.reason}")
            continue
        caps = item.capabilities
        versions = ", ".join(f"{k} {v}" for k, v in caps.versions.items())
        print(f"{item.name:<12} {caps.device}")
        print(f"{'':<12} ops={','.join(caps.ops)} dtypes={','.join(caps.dtypes)} window={caps.window} "
              f"aliasing={caps.aliasing} [{versions}]")
        if caps.implementation is not None:
            print(f"{'':<12} implementation: {caps.implementation}")
        if caps.devices:
            print(f"{'':<12} devices: " + "; ".join(f"{i}: {d}" for i, d in enumerate(caps.devices)))
        for note in caps.notes:
            print(f"{'':<12} note: {note}")
    print(compile_cache.current().describe())
    return 0


def add_subcommand(sub: Any) -> None:
    """Add ``backends`` to ``lafuzz``'s subcommands."""
    p = sub.add_parser("backends", help="list the backends this machine has, what they can do and their devices")
    p.add_argument("--names", help="comma-separated backend names (default: all)")
    backend_options.add_arguments(p)
    p.set_defaults(func=list_backends)
