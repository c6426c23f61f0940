"""The kernels on SwiftShader: in a worker that sees SwiftShader alone, beside the other backends' adapters here.

Skipped, with the reason, where this machine has no SwiftShader ICD (Debian's chromium package installs one).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from support.platforms import check_ci_sample, required

from fuzz.backends import Backend, Unavailable, create
from fuzz.backends.swiftshader import ICD_ENV, DriverMissing, driver_environment, find_manifest
from fuzz.model.ops import CAUSAL_CONV, LINEAR_ATTENTION

BACKENDS = {"wgpu-swiftshader": LINEAR_ATTENTION, "wgpu-conv-swiftshader": CAUSAL_CONV}

_PROBE = """
import json, wgpu
a = next(a for a in wgpu.gpu.enumerate_adapters_sync() if "SwiftShader" in a.info["device"])
print(json.dumps({"limit": a.limits["max-compute-invocations-per-workgroup"], "f16": "shader-f16" in a.features}))
"""


@pytest.fixture(scope="module")
def manifest() -> Path:
    """SwiftShader's ICD manifest here, or skip saying why there is none."""
    try:
        return find_manifest()
    except DriverMissing as err:
        pytest.skip(str(err))


@pytest.fixture(scope="module")
def adapter(manifest: Path) -> dict:
    """SwiftShader's adapter as wgpu-py reports it in a process of its own (not through the backends)."""
    done = subprocess.run([sys.executable, "-c", _PROBE], env={**os.environ, **driver_environment(manifest)},
                          capture_output=True, text=True, timeout=120, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def swiftshader(manifest: Path, backend) -> Callable[[str], Backend]:
    """``swiftshader(name)``: the backend, which must be available wherever the manifest is."""
    return required(backend, str(manifest))


@pytest.mark.parametrize("name", list(BACKENDS))
def test_a_backend_runs_on_swiftshader_and_says_what_it_grants(name: str, adapter: dict, swiftshader) -> None:
    """The device is SwiftShader's, its limits and features are in the notes, float16 follows ``shader-f16``."""
    capabilities = swiftshader(name).capabilities()
    assert "SwiftShader" in capabilities.device and capabilities.ops == (BACKENDS[name].name,)
    assert f"max-compute-invocations-per-workgroup {adapter['limit']}" in " ".join(capabilities.notes)
    assert any(note.startswith("subgroups of ") for note in capabilities.notes)
    assert ("float16" in capabilities.dtypes) == adapter["f16"]


def test_the_other_kernel_backends_keep_their_adapter(swiftshader, need) -> None:
    """The SwiftShader worker changes nothing of this process: wgpu-native still lists and picks its own adapters."""
    on_swiftshader, native = swiftshader("wgpu-swiftshader"), need("wgpu")
    assert "SwiftShader" not in native.capabilities().device
    assert not any("SwiftShader" in d for d in native.capabilities().devices)
    assert on_swiftshader.capabilities().device != native.capabilities().device


@pytest.mark.parametrize("name", list(BACKENDS))
def test_cases_agree_with_the_oracle_and_float16_is_unsupported_without_the_feature(name: str, swiftshader) -> None:
    check_ci_sample(swiftshader(name), BACKENDS[name])


def test_without_a_manifest_the_backends_are_unavailable_saying_why(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(ICD_ENV, str(tmp_path / "absent.json"))
    for name in BACKENDS:
        with pytest.raises(Unavailable, match=f"{name}: no SwiftShader Vulkan ICD manifest"):
            create(name)


def test_a_driver_that_is_not_swiftshader_is_refused_by_name(monkeypatch) -> None:
    """The adapter is chosen by name: a manifest of another driver (lavapipe's) gives no SwiftShader adapter."""
    other = Path("/usr/share/vulkan/icd.d/lvp_icd.json")
    if not other.is_file():
        pytest.skip(f"no other Vulkan driver's manifest at {other}")
    monkeypatch.setenv(ICD_ENV, str(other))
    with pytest.raises(Unavailable, match="no SwiftShader adapter"):
        create("wgpu-swiftshader")
