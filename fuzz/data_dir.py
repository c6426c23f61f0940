"""Where the parts of the other builds live that ``lafuzz setup`` installs (npm packages, a second venv).

Two places, looked in this order: the repository, when lafuzz runs from a checkout (``ortjs/`` and
``.venv-ort-webgpu-1.27`` beside ``pyproject.toml``, where ``scripts/setup.sh`` has always put them), then the
per-user data directory (``$LAFUZZ_DATA_DIR``, else ``$XDG_DATA_HOME/lafuzz``, else ``~/.local/share/lafuzz``),
which is where an installed package keeps them. Both hold the same layout, so one name finds a part in either.
"""

from __future__ import annotations

import os
from pathlib import Path

DATA_DIR_ENV = "LAFUZZ_DATA_DIR"
ROOT = Path(__file__).resolve().parents[1]
"""The folder that holds the ``fuzz`` package: a checkout's root, or an environment's site-packages."""


def checkout() -> Path | None:
    """The repository lafuzz runs from, or None for an installed package (a wheel has no ``scripts/``)."""
    return ROOT if (ROOT / "scripts" / "setup.sh").is_file() else None


def data_dir() -> Path:
    """The per-user data directory (XDG Base Directory: ``$XDG_DATA_HOME``, or ``~/.local/share``)."""
    if os.environ.get(DATA_DIR_ENV):
        return Path(os.environ[DATA_DIR_ENV])
    xdg = os.environ.get("XDG_DATA_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".local" / "share") / "lafuzz"  # relative: ignored


def homes() -> list[Path]:
    """Where a part is looked for, in order: the checkout (if any), then the per-user data directory."""
    found = checkout()
    return [found, data_dir()] if found is not None else [data_dir()]


def places(env: str, relative: str) -> list[Path]:
    """Where to look for one part: the path in ``$env`` alone when it is set, else ``relative`` in each home."""
    return [Path(os.environ[env])] if os.environ.get(env) else [home / relative for home in homes()]


def setup_home() -> Path:
    """Where ``lafuzz setup`` installs: the first of ``homes()``, so a checkout stays self-contained."""
    return homes()[0]
