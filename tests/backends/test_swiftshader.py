"""Finding SwiftShader's Vulkan driver: a manifest counts only where it parses and its library exists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fuzz.backends.swiftshader import ICD_ENV, DriverMissing, driver_environment, find_manifest


def _manifest(folder: Path, library: str, *, make_library: bool = True) -> Path:
    manifest = folder / "icd.json"
    manifest.write_text(json.dumps({"file_format_version": "1.0.0", "ICD": {"library_path": library}}))
    if make_library:
        (folder / Path(library).name).write_bytes(b"")
    return manifest


def test_the_variable_names_the_manifest_and_a_relative_library_is_beside_it(tmp_path, monkeypatch) -> None:
    manifest = _manifest(tmp_path, "./libvk_swiftshader.so")
    monkeypatch.setenv(ICD_ENV, str(manifest))
    assert find_manifest() == manifest


@pytest.mark.parametrize(("library", "made", "why"), [
    ("./libvk_swiftshader.so", False, "names ./libvk_swiftshader.so, which is not at"),
    (None, False, "not a readable ICD manifest"),
])
def test_a_manifest_without_its_library_is_missing(tmp_path, monkeypatch, library, made, why) -> None:
    manifest = _manifest(tmp_path, library or "", make_library=made)
    if library is None:
        manifest.write_text("{not json")
    monkeypatch.setenv(ICD_ENV, str(manifest))
    with pytest.raises(DriverMissing, match=why):
        find_manifest()


def test_no_manifest_says_where_it_looked(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(ICD_ENV, str(tmp_path / "absent.json"))
    with pytest.raises(DriverMissing, match=f"no SwiftShader Vulkan ICD manifest at \\${ICD_ENV} = {tmp_path}"):
        find_manifest()


def test_the_worker_environment_loads_that_driver_alone(tmp_path) -> None:
    manifest = _manifest(tmp_path, "./libvk_swiftshader.so")
    env = driver_environment(manifest)
    assert env["VK_DRIVER_FILES"] == env["VK_ICD_FILENAMES"] == str(manifest.resolve())
    assert env["VK_ADD_DRIVER_FILES"] == ""
