"""The parts ``lafuzz setup`` installs itself, into one home (``fuzz.data_dir``): the JS runner's npm packages and
the second Python environment. Each is stamped with a digest of what it was installed from (``package-lock.json``,
the requirements file; the stamps ``scripts/setup.sh`` wrote before), so a part already in place is left alone and
a changed pin reinstalls it."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path

from fuzz.backends.ort_node import NPM_FOLDER, RUNNER
from fuzz.backends.ort_webgpu_builtin import REQUIREMENTS, VENV
from fuzz.setup import system

NPM_PROJECT = ("package.json", "package-lock.json", ".npmrc")
"""What ``npm ci`` reads, copied from the runner into the npm folder; ``.npmrc`` keeps install scripts off
(onnxruntime-node's would download CUDA binaries)."""


def run(command: list[str], cwd: Path | None = None) -> None:
    """Run an install command, its output passed on (npm's stdout dropped: a progress summary); raise
    ``CalledProcessError`` when it fails."""
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL if command[0] == "npm" else None)


def stamp_name(source: Path) -> str:
    """``.installed-`` and the first 16 hex digits of the file's SHA-256 (``sha256sum | cut -c1-16``)."""
    return ".installed-" + hashlib.sha256(source.read_bytes()).hexdigest()[:16]


class Part(ABC):
    """One part: where it goes in a home, whether it is in place, what it needs from the system, how it is made."""

    name: str
    relative: str
    """Its folder in a home."""
    stamped: str
    """The folder in it that holds the stamp (the one its installer makes)."""
    source: Path
    """The file its stamp is a digest of."""
    needs: system.SystemPackage

    def __init__(self, home: Path) -> None:
        self.home = home
        self.folder = home / self.relative
        self.stamp_folder = self.folder / self.stamped

    def in_place(self) -> bool:
        return (self.stamp_folder / stamp_name(self.source)).is_file()

    def install(self, log: Callable[[str], None]) -> None:
        """Make the part (``CalledProcessError`` if a command fails), then stamp it, older stamps removed."""
        self._make(log)
        for old in self.stamp_folder.glob(".installed-*"):
            old.unlink()
        (self.stamp_folder / stamp_name(self.source)).touch()

    @abstractmethod
    def _make(self, log: Callable[[str], None]) -> None: ...


class NpmPackages(Part):
    """The pinned npm packages of the JS runner (onnxruntime-node, onnxruntime-web, puppeteer-core): ``npm ci``."""

    name = "the JS runner's npm packages"
    relative, stamped = NPM_FOLDER, "node_modules"
    source = RUNNER / "package-lock.json"
    needs = system.NODE

    def _make(self, log: Callable[[str], None]) -> None:
        log(f"installing {self.name} in {self.folder} (npm ci, install scripts off)")
        self.folder.mkdir(parents=True, exist_ok=True)
        for name in NPM_PROJECT:
            shutil.copyfile(RUNNER / name, self.folder / name)
        run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"], cwd=self.folder)


class BuiltinEnvironment(Part):
    """The virtual environment of onnxruntime-webgpu 1.27.0, apart from this one's onnxruntime."""

    name = "the onnxruntime-webgpu 1.27.0 environment"
    relative, stamped = VENV, ""
    source = REQUIREMENTS
    needs = system.PYTHON_VENV

    def _make(self, log: Callable[[str], None]) -> None:
        log(f"creating {self.folder} ({self.name})")
        shutil.rmtree(self.folder, ignore_errors=True)
        run([sys.executable, "-m", "venv", str(self.folder)])
        run([str(self.folder / "bin" / "python"), "-m", "pip", "install", "-q", "-r", str(REQUIREMENTS)])


PARTS: tuple[type[Part], ...] = (NpmPackages, BuiltinEnvironment)
