"""Where compiled shaders persist between runs: one directory a user or a CI cache can keep.

On a software adapter (lavapipe) almost all of a first run's time goes into compiling shaders: the WGSL
kernel's pipelines through wgpu-native and Dawn, and ORT's WebGPU EP's own shaders, all three lowered by
Mesa's LLVM back end. Mesa keeps what it compiled in an on-disk cache keyed by the shader's content, which
every process shares (a campaign's workers, pytest's workers): a pipeline it has seen before costs
tens of milliseconds instead of seconds. Tint, naga and Dawn keep nothing on disk, so this one cache holds
everything worth carrying.

``configure`` points Mesa's cache (``MESA_SHADER_CACHE_DIR``) at ``<cache root>/mesa`` unless the caller
chose another place; the cache root is ``$LAFUZZ_CACHE_DIR``, else ``$XDG_CACHE_HOME/lafuzz``, else
``~/.cache/lafuzz``. Mesa's own size bound applies (``MESA_SHADER_CACHE_MAX_SIZE``, 1 GiB by default; a
default campaign and the test suite together write a few tens of MiB).
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path

ROOT_ENV = "LAFUZZ_CACHE_DIR"
"""The directory lafuzz keeps its compile caches under (default: ``$XDG_CACHE_HOME/lafuzz``)."""

MESA_DIR_ENV = "MESA_SHADER_CACHE_DIR"
MESA_DISABLE_ENV = "MESA_SHADER_CACHE_DISABLE"
MESA_SUBDIR = "mesa"
"""Under the cache root: Mesa's shader cache (Mesa adds its own ``mesa_shader_cache_db`` inside)."""


def cache_root(env: MutableMapping[str, str]) -> Path:
    """``$LAFUZZ_CACHE_DIR``, else ``$XDG_CACHE_HOME/lafuzz``, else ``~/.cache/lafuzz``."""
    if env.get(ROOT_ENV):
        return Path(env[ROOT_ENV]).expanduser()
    xdg = env.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache") / "lafuzz"


@dataclass(frozen=True)
class ShaderCache:
    """Where Mesa's shader cache is for this process and its children, and who chose it."""

    path: Path | None
    """The directory (None: Mesa's cache is off)."""
    chosen_by: str
    """``"lafuzz"`` (the default under the cache root), ``MESA_SHADER_CACHE_DIR`` (the caller's), or why it is off."""

    def size_bytes(self) -> int:
        """Bytes in the cache's files now (0 where there is none)."""
        if self.path is None or not self.path.is_dir():
            return 0
        return sum(f.stat().st_size for f in self.path.rglob("*") if f.is_file())

    def describe(self) -> str:
        """One line for ``lafuzz backends`` and the logs."""
        if self.path is None:
            return f"shader cache: off ({self.chosen_by})"
        return f"shader cache: {self.path} ({self.size_bytes() / 2**20:.1f} MiB; set by {self.chosen_by})"


def configure(env: MutableMapping[str, str]) -> ShaderCache:
    """Point Mesa's shader cache at ``<cache root>/mesa`` in ``env`` unless ``MESA_SHADER_CACHE_DIR`` is already
    set, creating the directory; where it cannot be created, Mesa is left to its own default."""
    if env.get(MESA_DISABLE_ENV, "").lower() in ("1", "true", "yes"):
        return ShaderCache(None, f"{MESA_DISABLE_ENV}={env[MESA_DISABLE_ENV]}")
    if env.get(MESA_DIR_ENV):
        return ShaderCache(Path(env[MESA_DIR_ENV]), MESA_DIR_ENV)
    path = cache_root(env) / MESA_SUBDIR
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        return ShaderCache(None, f"cannot create {path}: {err.strerror}; Mesa's own default applies")
    env[MESA_DIR_ENV] = str(path)
    return ShaderCache(path, "lafuzz")


def current(env: MutableMapping[str, str] | None = None) -> ShaderCache:
    """The shader cache ``configure`` left in ``env`` (default: this process's environment)."""
    env = os.environ if env is None else env
    if env.get(MESA_DISABLE_ENV, "").lower() in ("1", "true", "yes"):
        return ShaderCache(None, f"{MESA_DISABLE_ENV}={env[MESA_DISABLE_ENV]}")
    if not env.get(MESA_DIR_ENV):
        return ShaderCache(None, "not configured: Mesa's own default applies")
    chosen = "lafuzz" if Path(env[MESA_DIR_ENV]) == cache_root(env) / MESA_SUBDIR else MESA_DIR_ENV
    return ShaderCache(Path(env[MESA_DIR_ENV]), chosen)
