"""The wheel is the whole product: built from this checkout's files, installed in a fresh venv outside it, it runs
``lafuzz backends`` and a 20-second campaign from a temporary folder, and touches nothing of the checkout.

The wheel is built from a copy of the files git would commit (tracked and new, not ignored): a build inside the
checkout would leave ``build/`` there, whose stale files setuptools packs into later wheels. pip builds it in
isolation, so setuptools comes from the index or pip's cache. The fresh venv gets the wheel alone (``--no-deps``);
its dependencies come from this interpreter's site-packages through a ``.pth`` line, which adds that folder to
``sys.path`` without running the ``.pth`` files in it, so this checkout's editable install stays out: only the
wheel's ``fuzz``, ``kernels`` and ``oracles`` can be imported. That keeps the test offline and under a minute
instead of downloading about 300 MB of wheels. The same ``.pth`` file starts an audit hook in every Python process
of the venv (campaign workers too) that logs each file opened, folder listed or program started inside the
checkout, its ``.venv`` (those dependencies) aside; the log must stay empty.

``$LAFUZZ_DATA_DIR`` names an empty folder first, so the builds ``lafuzz setup`` installs are missing and say so;
then the ones this checkout has are lent to it (links to their ``node_modules`` and venv), so that ``ort-node``,
``ort-web`` and ``ort-webgpu-builtin`` run the wheel's own JS runner and worker.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from fuzz.backends import Unavailable
from fuzz.backends.ort_node import npm_folder
from fuzz.backends.ort_webgpu_builtin import VENV, interpreter
from fuzz.backends.swiftshader import DriverMissing, find_manifest

ROOT = Path(__file__).resolve().parents[2]
CAMPAIGN_EXITS = {0: "cases checked, nothing new"}
"""The campaign's statuses this run accepts (``lafuzz campaign --help`` lists them); oracle and wgpu agree."""

GUARD = '''\
"""Logs every use of a path inside $CHECKOUT_GUARD_ROOT (its .venv aside) to $CHECKOUT_GUARD_LOG."""
import os
import sys

_ROOTS = [os.environ["CHECKOUT_GUARD_ROOT"], os.path.realpath(os.environ["CHECKOUT_GUARD_ROOT"])]
_ALLOWED = [os.path.join(root, ".venv") for root in _ROOTS]
_LOG = os.environ["CHECKOUT_GUARD_LOG"]
_EVENTS = {"open", "os.listdir", "os.scandir", "os.chdir", "subprocess.Popen", "os.exec", "os.posix_spawn"}


def _paths(value):
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _paths(item)
    elif isinstance(value, (str, bytes, os.PathLike)):
        yield os.path.abspath(os.fsdecode(value))


def _inside(path):
    def under(folder):
        return path == folder or path.startswith(folder + os.sep)
    return any(under(root) for root in _ROOTS) and not any(under(venv) for venv in _ALLOWED)


def _hook(event, args):
    if event in _EVENTS:
        used = [path for path in _paths(list(args[:3])) if _inside(path)]
        if used and not _hook.writing:
            _hook.writing = True
            with open(_LOG, "a") as log:
                log.write(f"{os.getpid()} {event} {used}\\n")
            _hook.writing = False


_hook.writing = False
sys.addaudithook(_hook)
'''


def _copy_of_the_checkout(to: Path) -> Path:
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                                capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as err:
        pytest.skip(f"not a git checkout, or no git: {err}")
    for name in filter(None, listed.decode().split("\0")):
        if (ROOT / name).is_file():  # a tracked file deleted in the working tree is not copied
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, to / name)
    return to


def _fresh_venv(folder: Path, wheel: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel)],
                   check=True)
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "checkout_guard.py").write_text(GUARD)
    dependencies = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    (site / "lafuzz_test_dependencies.pth").write_text("\n".join([*dependencies, "import checkout_guard", ""]))
    return folder / "bin"


def _lend_the_installed_builds(data: Path) -> list[str]:
    """Link this checkout's npm packages and second venv into ``data``; the backends they make available."""
    lent = []
    try:
        packages = npm_folder("ort-node", "onnxruntime-node", "onnxruntime-web", "puppeteer-core")
        (data / "ortjs").mkdir(parents=True)
        (data / "ortjs" / "node_modules").symlink_to(packages / "node_modules")
        lent += ["ort-node", "ort-web", "wgpu-browser"]  # the browser's kernel page ships in the wheel
    except Unavailable:
        pass
    try:
        (data / VENV).symlink_to(interpreter("ort-webgpu-builtin").parents[1])
        lent.append("ort-webgpu-builtin")
    except Unavailable:
        pass
    try:
        find_manifest()
        lent.append("wgpu-swiftshader")  # the system's driver, no installed build: a worker of the wheel's code
    except DriverMissing:
        pass
    return lent


@pytest.mark.slow
def test_the_installed_wheel_runs_backends_and_a_campaign_outside_the_checkout(tmp_path: Path) -> None:
    source = _copy_of_the_checkout(tmp_path / "source")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"),
                    str(source)], check=True)
    (wheel,) = (tmp_path / "dist").glob("lafuzz-*.whl")
    bin_dir = _fresh_venv(tmp_path / "venv", wheel)
    work, log = tmp_path / "work", tmp_path / "checkout-used.log"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LAFUZZ_ORT", "PYTHON"))}
    env.update(LAFUZZ_DATA_DIR=str(tmp_path / "data"), CHECKOUT_GUARD_ROOT=str(ROOT), CHECKOUT_GUARD_LOG=str(log))

    def lafuzz(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(bin_dir / "lafuzz"), *args], cwd=work, env=env, capture_output=True, text=True,
                              timeout=300)

    where = subprocess.run([str(bin_dir / "python"), "-c", "import fuzz, kernels, oracles; "
                            "print(fuzz.__file__, kernels.__file__, oracles.__file__)"],
                           cwd=work, env=env, capture_output=True, text=True, check=True).stdout.split()
    assert all(path.startswith(str(tmp_path / "venv")) for path in where), where

    def listed(*args: str) -> tuple[dict[str, str], str]:
        run = lafuzz("backends", *args)
        said = run.stdout + run.stderr
        assert run.returncode == 0, said
        return {line.split()[0]: line for line in run.stdout.splitlines() if line and not line[0].isspace()}, said

    others = ("ort-node", "ort-web", "ort-webgpu-builtin")
    missing, said = listed("--names", ",".join(others))
    for name in others:
        if not any(system in missing[name] for system in ("Chromium not found", "Node.js not found")):
            assert "unavailable" in missing[name] and "lafuzz setup" in missing[name], missing[name]
            assert str(tmp_path / "data") in missing[name], missing[name]
    lent = _lend_the_installed_builds(tmp_path / "data")
    found, all_said = listed()
    for name in ["oracle", "wgpu", *lent]:
        assert "unavailable" not in found[name], found[name]

    out = tmp_path / "out"
    campaign = lafuzz("campaign", "--time", "20s", "--backends", "oracle,wgpu", "--out", str(out))
    assert campaign.returncode in CAMPAIGN_EXITS, campaign.stdout + campaign.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["checked_examples"] > 0 and summary["exit_status"] == campaign.returncode

    said += all_said + campaign.stdout + campaign.stderr
    for dependencies in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
        said = said.replace(dependencies, "<the dependencies' site-packages>")  # lent to the venv, as the guard allows
    assert str(ROOT) not in said, said
    assert not log.exists() or log.read_text() == "", log.read_text()
