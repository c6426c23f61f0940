"""An exported ``repro.py`` imported as a module, so that a test can call its reader and its verdict directly."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def load_repro(path: Path) -> ModuleType:
    """The module of the script at ``path`` (its ``main`` not run)."""
    spec = importlib.util.spec_from_file_location("exported_repro", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
