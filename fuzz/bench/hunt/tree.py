"""A copy of the tree for one planted bug: only what a campaign needs, every backend still available.

The copy holds ``oracles/``, ``kernels/``, ``fuzz/``, ``corpus/``, ``scripts/`` (which marks a checkout,
whose own ``ortjs/`` and environments lafuzz looks in first) and ``pyproject.toml``, the small files of ``ortjs/``
with a link to its ``node_modules``, and links to the ``.venv-ort-webgpu-*`` environments, so that the campaign
run there (cwd and ``PYTHONPATH`` the copy) imports the copy's code and finds the Node, browser and
older-release backends of the original. A bug is planted in the copy only; the original is never written.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from tempfile import TemporaryDirectory

from fuzz.bench.hunt.catalogue import Bug

COPIED = ("oracles", "kernels", "fuzz", "corpus", "scripts", "pyproject.toml")
"""What a campaign imports or reads, copied."""

LINKED_GLOBS = (".venv-ort-webgpu-*",)
"""Environments of other builds, linked (large, and never written by a campaign)."""

IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".mypy_cache")


def root_of_tree() -> Path:
    """The root of the tree this module was imported from (where ``fuzz/`` lies)."""
    return Path(__file__).resolve().parents[3]


def copy_tree(source: Path, destination: Path) -> Path:
    """Copy what a campaign needs from the tree at ``source`` into ``destination`` (created); returns it."""
    destination.mkdir(parents=True, exist_ok=True)
    for name in COPIED:
        path = source / name
        if path.is_dir():
            shutil.copytree(path, destination / name, ignore=IGNORED)
        elif path.exists():
            shutil.copy2(path, destination / name)
    ortjs = source / "ortjs"
    if ortjs.is_dir():
        (destination / "ortjs").mkdir()
        for item in ortjs.iterdir():
            if item.name == "node_modules":
                (destination / "ortjs" / item.name).symlink_to(item.resolve())
            elif item.is_dir():
                shutil.copytree(item, destination / "ortjs" / item.name)
            else:
                shutil.copy2(item, destination / "ortjs" / item.name)
    for pattern in LINKED_GLOBS:
        for env in source.glob(pattern):
            (destination / env.name).symlink_to(env.resolve())
    return destination


def environment(root: Path) -> dict[str, str]:
    """This process's environment for a command run in the tree at ``root``: ``root`` first on ``PYTHONPATH``, so
    its code is what is imported, with the entries already there kept behind it (packages installed outside a
    virtual environment, as on a GPU machine)."""
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), *([path] if path else [])])}


@contextmanager
def planted_copy(bug: Bug, source: Path, parent: Path | None = None) -> Iterator[Path]:
    """A copy of ``source`` with ``bug`` planted, removed on exit (made under ``parent``, else the temp dir)."""
    with TemporaryDirectory(prefix=f"hunt-{bug.id}-", dir=parent) as where:
        root = copy_tree(source, Path(where) / "tree")
        bug.edit.plant(root, bug.id)
        yield root
