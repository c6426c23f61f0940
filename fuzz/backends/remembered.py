"""What the last probe of each backend found, kept between campaigns so that a campaign need not start every backend
before its first case.

Starting the backends to learn what they can do took about 5 s of a campaign's start on a 2-core machine, most of it
in the backends of a process of their own (two headless browsers, SwiftShader, Node); the campaign's workers start
them again anyway (`docs/results/2026-12-06-time-to-bug`). What a backend can do depends on its code and on what
is installed, not on the kernels' WGSL or their host code: an edit there, the usual one before a campaign, keeps
what was remembered.

An entry is used only while its fingerprint holds: the spec, the interpreter, the backends' own code
(``fuzz/backends``, ``kernels/device.py``, ``kernels/options.py``), the Python packages installed (their
``*-info`` folders), the other builds ``lafuzz setup`` installs (the ORT environments, the npm packages), Node and
Chromium as found, and the variables that choose devices and drivers. Entries older than ``MAX_AGE_S`` are probed
again. Only backends that could be created are remembered; one found missing is tried every time. A remembered
backend that then fails to start in a campaign worker is reported lost, as any backend that stops, and forgotten.
``lafuzz backends`` probes afresh and remembers what it found.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from fuzz import data_dir
from fuzz.backends.chromium import chromium_path
from fuzz.compile_cache import cache_root

FILE = "backends.json"
"""Under the cache root (``fuzz.compile_cache.cache_root``), beside the shader cache."""

MAX_AGE_S = 24 * 3600.0
"""One day: a driver or browser updated outside what the fingerprint sees is probed again by the next day."""

CODE = ("fuzz/backends", "kernels/device.py", "kernels/options.py")
"""The code a backend's capabilities come from (paths under ``data_dir.ROOT``)."""

CODE_SUFFIXES = (".py", ".mjs", ".js", ".html", ".json", ".txt")
ENVIRONMENT_PREFIXES = ("LAFUZZ_", "VK_", "WGPU_", "DAWN_", "MESA_", "__EGL", "__GLX", "LD_LIBRARY_PATH", "DISPLAY",
                        "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")
"""Variables that choose devices, drivers and builds; those naming a cache directory are left out."""


def _digest(parts: Iterable[str]) -> str:
    sha = hashlib.sha256()
    for part in parts:
        sha.update(part.encode())
        sha.update(b"\0")
    return sha.hexdigest()


def _stat(path: Path | str | None) -> str:
    """The size and modification time of ``path``, or that it is missing (not its name: a copy of the tree, as
    the hunt makes, has the same installed parts under another path)."""
    if path is None:
        return "none"
    try:
        info = os.stat(path)
    except OSError:
        return "missing"
    return f"{info.st_size} {info.st_mtime_ns}"


def code_digest(root: Path = data_dir.ROOT) -> str:
    """The content of the backends' own code (``CODE``), node_modules and caches left out."""
    files: list[Path] = []
    for part in CODE:
        path = root / part
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files += [f for f in path.rglob("*") if f.is_file() and f.suffix in CODE_SUFFIXES
                      and "node_modules" not in f.parts and "__pycache__" not in f.parts]
    return _digest(f"{f.relative_to(root)}\0{f.read_bytes().hex()}" for f in sorted(files))


def environment_digest(env: Mapping[str, str]) -> str:
    """What is installed and chosen here that a backend's capabilities depend on."""
    parts = [sys.executable, sys.version]
    parts += sorted(f"{k}={v}" for k, v in env.items() if k.startswith(ENVIRONMENT_PREFIXES) and "CACHE" not in k)
    for folder in sys.path:
        with contextlib.suppress(OSError):
            parts += sorted(name for name in os.listdir(folder or ".") if name.endswith(("-info", ".egg-link")))
    for home in data_dir.homes():
        parts.append(_stat(home / "ortjs" / "node_modules" / ".package-lock.json"))
        parts += sorted(str(p.relative_to(home)) for p in home.glob(".venv-ort-*/lib/python*/site-packages/*-info"))
    node, chromium = env.get("LAFUZZ_NODE") or shutil.which("node"), chromium_path()
    parts += [f"node {node} {_stat(node)}", f"chromium {chromium} {_stat(chromium)}"]
    return _digest(parts)


class Remembered:
    """The remembered probes of one cache root: ``recall`` and ``remember`` by spec, ``forget`` what failed."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        self.path = cache_root(dict(env)) / FILE
        self._fingerprint = _digest([code_digest(), environment_digest(env)])
        self.entries: dict[str, dict[str, Any]] = self._load()

    def _load(self) -> dict[str, dict[str, Any]]:
        try:
            entries = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return entries if isinstance(entries, dict) else {}

    def recall(self, spec: str, now: float | None = None) -> tuple[str, dict[str, Any]] | None:
        """The backend's name and ``Capabilities.to_json()`` as last probed, where still current; else None."""
        entry = self.entries.get(spec)
        now = time.time() if now is None else now
        if (not isinstance(entry, dict) or entry.get("fingerprint") != self._fingerprint
                or not 0 <= now - float(entry.get("probed", 0)) <= MAX_AGE_S):
            return None
        return str(entry["name"]), dict(entry["capabilities"])

    def oldest(self, specs: Iterable[str]) -> float | None:
        """When the oldest of ``specs``' entries was probed (seconds since the epoch), None for none."""
        times = [float(self.entries[s]["probed"]) for s in specs if s in self.entries]
        return min(times) if times else None

    def remember(self, found: Mapping[str, tuple[str, dict[str, Any]]]) -> None:
        """Keep spec -> (name, capabilities) as probed now. Specs naming a class (``module:Class``, tests' fakes)
        are not kept. A cache that cannot be written is left as it was."""
        now = time.time()
        for spec, (name, capabilities) in found.items():
            if ":" not in spec:
                self.entries[spec] = {"name": name, "capabilities": capabilities, "probed": now,
                                      "fingerprint": self._fingerprint}
        self._save()

    def forget(self, specs: Iterable[str]) -> None:
        """Drop ``specs``' entries (a backend remembered as available that then failed to start)."""
        dropped = [s for s in specs if self.entries.pop(s, None) is not None]
        if dropped:
            self._save()

    def _save(self) -> None:
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            partial = self.path.with_name(f"{FILE}.{os.getpid()}")
            partial.write_text(json.dumps(self.entries, indent=1, sort_keys=True))
            partial.replace(self.path)
