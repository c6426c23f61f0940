"""``lafuzz setup`` and where the backends find what it installs: the checkout first, then the per-user data
directory (XDG); a second run changes nothing and says so; a changed pin reinstalls only its part; a missing
system package is one line with its install command. The commands it would run (npm ci, venv, pip) are recorded
here instead of run: the wheel test and docs/results/2026-12-06-wheel run them for real."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from fuzz import data_dir
from fuzz.backends import Unavailable
from fuzz.backends.ort_node import node_command, npm_folder
from fuzz.backends.ort_webgpu_builtin import interpreter
from fuzz.setup import cli, parts, system


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A checkout and a per-user data directory, both empty; the lookup's overrides unset."""
    checkout, data = tmp_path / "checkout", tmp_path / "data"
    monkeypatch.setattr(data_dir, "checkout", lambda: checkout)
    monkeypatch.setenv(data_dir.DATA_DIR_ENV, str(data))
    for name in ("LAFUZZ_ORTJS", "LAFUZZ_ORT_WEBGPU_PYTHON"):
        monkeypatch.delenv(name, raising=False)
    return checkout, data


def _npm_package(home: Path, name: str) -> None:
    (home / "ortjs" / "node_modules" / name).mkdir(parents=True, exist_ok=True)
    (home / "ortjs" / "node_modules" / name / "package.json").write_text("{}")


def _python(home: Path) -> Path:
    python = home / ".venv-ort-webgpu-1.27" / "bin" / "python"
    python.parent.mkdir(parents=True, exist_ok=True)
    python.touch()
    return python


def test_the_data_directory_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(data_dir.DATA_DIR_ENV, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    assert data_dir.data_dir() == tmp_path / ".local" / "share" / "lafuzz"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/ignored")
    assert data_dir.data_dir() == tmp_path / ".local" / "share" / "lafuzz"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert data_dir.data_dir() == tmp_path / "xdg" / "lafuzz"
    monkeypatch.setenv(data_dir.DATA_DIR_ENV, str(tmp_path / "override"))
    assert data_dir.data_dir() == tmp_path / "override"


def test_this_checkout_is_a_checkout_and_installs_into_itself() -> None:
    assert data_dir.checkout() == Path(__file__).resolve().parents[2]
    assert data_dir.setup_home() == data_dir.checkout()


def test_the_npm_packages_are_found_in_the_checkout_first_then_the_data_directory(homes) -> None:
    checkout, data = homes
    with pytest.raises(Unavailable, match=r"not installed in .*checkout/ortjs or .*data/ortjs \(lafuzz setup"):
        npm_folder("ort-node", "onnxruntime-node")
    _npm_package(data, "onnxruntime-node")
    assert npm_folder("ort-node", "onnxruntime-node") == data / "ortjs"
    _npm_package(checkout, "onnxruntime-node")
    assert npm_folder("ort-node", "onnxruntime-node") == checkout / "ortjs"
    _npm_package(data, "puppeteer-core")
    assert npm_folder("ort-web", "onnxruntime-node", "puppeteer-core") == data / "ortjs"


def test_the_node_worker_runs_the_packaged_script_with_the_packages_found(homes) -> None:
    _, data = homes
    _npm_package(data, "onnxruntime-node")
    command = node_command("ort-node", "node-worker.mjs", "onnxruntime-node")
    assert Path(command[1]).is_file() and command[1].endswith("fuzz/backends/ortjs/node-worker.mjs")
    assert command[2:] == ["--packages", str(data / "ortjs")]


def test_the_second_environment_is_found_in_the_checkout_first_then_the_data_directory(homes) -> None:
    checkout, data = homes
    with pytest.raises(Unavailable, match=r"no interpreter at .*checkout/.* or .*data/.* \(lafuzz setup makes"):
        interpreter("ort-webgpu-builtin")
    in_data = _python(data)
    assert interpreter("ort-webgpu-builtin") == in_data
    in_checkout = _python(checkout)
    assert interpreter("ort-webgpu-builtin") == in_checkout


class Commands:
    """``fuzz.setup.parts.run``: each command recorded instead of run, and what it would leave made."""

    def __init__(self) -> None:
        self.run: list[list[str]] = []

    def __call__(self, command: list[str], cwd: Path | None = None) -> None:
        self.run.append(command)
        if command[0] == "npm":
            assert cwd is not None
            _npm_package(cwd.parent, "onnxruntime-node")
        elif command[1:3] == ["-m", "venv"]:
            _python(Path(command[3]).parent)


@pytest.fixture
def commands(monkeypatch: pytest.MonkeyPatch) -> Commands:
    fake = Commands()
    monkeypatch.setattr(parts, "run", fake)
    return fake


def _set_up(capsys: pytest.CaptureFixture[str]) -> tuple[int, str, list[argparse.Namespace]]:
    listed: list[argparse.Namespace] = []
    status = cli.set_up(lambda args: listed.append(args) or 0)
    return status, capsys.readouterr().out, listed


def test_a_second_setup_changes_nothing_and_says_so(homes, commands, capsys) -> None:
    checkout, _ = homes
    status, out, listed = _set_up(capsys)
    assert status == 0 and len(listed) == 1, out
    assert len(commands.run) == 3 and commands.run[0][:2] == ["npm", "ci"], commands.run
    assert commands.run[1][1:] == ["-m", "venv", str(checkout / ".venv-ort-webgpu-1.27")]
    assert commands.run[2][-2:] == ["-r", str(parts.REQUIREMENTS)]
    assert (checkout / "ortjs" / "package-lock.json").read_bytes() == parts.NpmPackages.source.read_bytes()
    assert "nothing to do" not in out
    commands.run.clear()
    status, out, listed = _set_up(capsys)
    assert status == 0 and commands.run == [] and len(listed) == 1
    assert f"nothing to do: the JS runner's npm packages ({checkout / 'ortjs'}) and" in out, out


def test_a_changed_pin_reinstalls_only_its_part(homes, commands, capsys, monkeypatch, tmp_path) -> None:
    _set_up(capsys)
    commands.run.clear()
    lock = tmp_path / "package-lock.json"
    lock.write_text(parts.NpmPackages.source.read_text().replace("1.30.0", "1.30.1"))
    monkeypatch.setattr(parts.NpmPackages, "source", lock)
    status, out, _ = _set_up(capsys)
    assert status == 0 and [c[:2] for c in commands.run] == [["npm", "ci"]], out
    assert [p.name for p in (homes[0] / "ortjs" / "node_modules").glob(".installed-*")] == [parts.stamp_name(lock)]


def test_a_missing_system_package_is_a_line_with_its_command_and_its_part_waits(homes, commands, capsys,
                                                                                  monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no node, no npm, no chromium
    monkeypatch.delenv("LAFUZZ_NODE", raising=False)
    monkeypatch.delenv("LAFUZZ_CHROMIUM", raising=False)
    status, out, listed = _set_up(capsys)
    assert status == 0 and len(listed) == 1, out
    assert "missing Node.js >= 18 with npm, for ort-node, ort-web, wgpu-browser and their npm packages; as root: " \
           "sudo apt-get install nodejs npm" in out, out
    assert "missing Chromium, for ort-web, wgpu-browser and SwiftShader's Vulkan (wgpu-swiftshader); as root: sudo " \
           "apt-get install chromium" in out, out
    assert "skipping the JS runner's npm packages: it needs Node.js >= 18 with npm, missing (above)" in out, out
    assert [c[0] for c in commands.run] == [sys.executable, str(homes[0] / ".venv-ort-webgpu-1.27/bin/python")]


def test_a_failed_install_is_exit_1_and_the_other_part_is_still_installed(homes, commands, capsys,
                                                                        monkeypatch) -> None:
    def npm_fails(command: list[str], cwd: Path | None = None) -> None:
        if command[0] == "npm":
            raise subprocess.CalledProcessError(1, command)
        commands(command, cwd)

    monkeypatch.setattr(parts, "run", npm_fails)
    status, out, listed = _set_up(capsys)
    assert status == cli.EXIT_INSTALL_FAILED and len(listed) == 1, out
    assert "ERROR: the JS runner's npm packages not installed in" in out, out
    assert parts.BuiltinEnvironment(homes[0]).in_place()
    assert not parts.NpmPackages(homes[0]).in_place()


@pytest.mark.parametrize(("version", "found"), [("25.0.7-2~bpo12+1", True), ("1:25.2.0-1", True),
                                                ("22.3.6-1+deb12u1", False)])
def test_lavapipe_counts_from_mesa_25(monkeypatch, version: str, found: bool) -> None:
    monkeypatch.setattr(system.glob, "glob", lambda pattern: [pattern])
    monkeypatch.setattr(system.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(system, "_output", lambda command: version)
    assert (system.lavapipe() is not None) is found


@pytest.mark.parametrize(("version", "found"), [("v20.20.2", True), ("v18.19.0", True), ("v16.20.2", False)])
def test_node_counts_from_18(monkeypatch, version: str, found: bool) -> None:
    monkeypatch.setattr(system.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.delenv("LAFUZZ_NODE", raising=False)
    monkeypatch.setattr(system, "_output", lambda command: version)
    assert (system.node() is not None) is found
