"""The shader cache lafuzz points Mesa at (``fuzz.compile_cache``): where it goes, whose choice wins, and that
compiled pipelines really land there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fuzz import compile_cache, environment
from fuzz.compile_cache import MESA_DIR_ENV, MESA_DISABLE_ENV, ROOT_ENV


def test_the_default_is_under_the_xdg_cache_home(tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    cache = compile_cache.configure(env)
    assert cache.path == tmp_path / "lafuzz" / "mesa" and cache.chosen_by == "lafuzz"
    assert env[MESA_DIR_ENV] == str(tmp_path / "lafuzz" / "mesa") and cache.path.is_dir()
    assert compile_cache.current(env) == cache


def test_the_project_variable_wins_over_xdg(tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg"), ROOT_ENV: str(tmp_path / "ci-cache")}
    assert compile_cache.configure(env).path == tmp_path / "ci-cache" / "mesa"
    assert not (tmp_path / "xdg").exists()


def test_a_relative_xdg_cache_home_is_ignored(tmp_path: Path) -> None:
    """The XDG specification: a relative path is invalid and must be ignored."""
    assert compile_cache.cache_root({"XDG_CACHE_HOME": "relative"}) == Path.home() / ".cache" / "lafuzz"


def test_the_callers_own_mesa_directory_is_kept(tmp_path: Path) -> None:
    env = {MESA_DIR_ENV: str(tmp_path / "mine"), ROOT_ENV: str(tmp_path / "ours")}
    cache = compile_cache.configure(env)
    assert cache.path == tmp_path / "mine" and cache.chosen_by == MESA_DIR_ENV
    assert env[MESA_DIR_ENV] == str(tmp_path / "mine") and not (tmp_path / "ours").exists()


def test_a_disabled_cache_stays_disabled(tmp_path: Path) -> None:
    env = {MESA_DISABLE_ENV: "true", ROOT_ENV: str(tmp_path)}
    cache = compile_cache.configure(env)
    assert cache.path is None and MESA_DIR_ENV not in env and "off" in cache.describe()


def test_an_uncreatable_directory_leaves_mesas_default(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    env = {ROOT_ENV: str(blocker)}
    cache = compile_cache.configure(env)
    assert cache.path is None and MESA_DIR_ENV not in env and "cannot create" in cache.chosen_by


_PROCESS = """
import sys
import numpy as np
from fuzz import environment
environment.prepare()
from kernels.device import get_device
from kernels.linear_attention import linear_attention
get_device("wgpu")
if sys.argv[1] == "compile":
    x = np.ones((1, 1, 2), np.float32)
    linear_attention(x, x, x, q_num_heads=1, kv_num_heads=1, update_rule="linear")
"""


def _entries_bytes(root: Path) -> int:
    """Bytes in Mesa's cache files of entries (its preallocated index left out)."""
    return sum(f.stat().st_size for f in root.rglob("mesa_cache.db"))


def test_a_compiled_pipeline_lands_in_the_project_cache(tmp_path: Path, need) -> None:
    """A process that compiles one pipeline writes Mesa's cache under ``$LAFUZZ_CACHE_DIR``, which its children
    and later runs then read. (On an adapter whose driver has no disk cache nothing is written: skipped.)"""
    wgpu = need("wgpu")
    if "llvmpipe" not in wgpu.capabilities().device:
        pytest.skip(f"Mesa's lavapipe is not the adapter here ({wgpu.capabilities().device})")
    env = {k: v for k, v in os.environ.items() if k not in (MESA_DIR_ENV, MESA_DISABLE_ENV)}
    env[ROOT_ENV] = str(tmp_path)
    sizes = []
    for step in ("device", "compile"):
        subprocess.run([sys.executable, "-c", _PROCESS, step], env=env, check=True, capture_output=True, timeout=300)
        sizes.append(_entries_bytes(tmp_path / "mesa"))
    assert sizes[1] > sizes[0], f"compiling a pipeline wrote nothing under {tmp_path / 'mesa'}: {sizes}"


def test_prepare_narrows_llvmpipe_unless_told_otherwise(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(ROOT_ENV, str(tmp_path))
    monkeypatch.delenv(environment.SOFTWARE_VECTOR_ENV, raising=False)
    environment.prepare()
    assert os.environ[environment.SOFTWARE_VECTOR_ENV] == environment.SOFTWARE_VECTOR_BITS
    monkeypatch.setenv(environment.SOFTWARE_VECTOR_ENV, "256")
    environment.prepare()
    assert os.environ[environment.SOFTWARE_VECTOR_ENV] == "256"


def test_the_software_adapter_compiles_for_the_narrow_width(need) -> None:
    """The variable reaches lavapipe: the suite's own adapter (set up by ``environment.prepare`` in conftest)
    reports the narrow SIMD width."""
    device = need("wgpu").capabilities().device
    if "llvmpipe" not in device:
        pytest.skip(f"Mesa's lavapipe is not the adapter here ({device})")
    if os.environ.get(environment.SOFTWARE_VECTOR_ENV) != environment.SOFTWARE_VECTOR_BITS:
        pytest.skip(f"{environment.SOFTWARE_VECTOR_ENV} was set by the caller to "
                    f"{os.environ.get(environment.SOFTWARE_VECTOR_ENV)}")
    assert f"{environment.SOFTWARE_VECTOR_BITS} bits" in device, device
