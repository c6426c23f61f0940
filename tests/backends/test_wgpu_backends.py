"""The WGSL kernel backends: which kernel path each takes on the adapter it has."""

from __future__ import annotations

import pytest

from fuzz.implementation import Implementation


@pytest.mark.parametrize(("name", "on_software"), [("wgpu", "workgroup"), ("wgpu-dawn", "auto")])
def test_kernel_path_follows_the_adapter(name: str, on_software: str, need) -> None:
    """On a software adapter wgpu-native takes the workgroup reduction (its subgroup kernel compiles 6x
    slower there) and Dawn the subgroup one, so a campaign on a CPU runs both; on a GPU both take ``auto``."""
    backend = need(name)
    expected = on_software if backend.kernel.device.software else "auto"
    assert backend.options.path == expected and backend.kernel.options.path == expected
    assert any("kernel path" in note for note in backend.capabilities().notes) == (expected != "auto")


@pytest.mark.parametrize(("name", "module"), [("wgpu", "wgpu"), ("wgpu-dawn", "wgpudawn")])
def test_a_kernel_backend_says_what_it_runs(name: str, module: str, need) -> None:
    """``Backend.implementation`` (the key of known issues) is the WebGPU package and its version, as for every
    backend; the WebGPU implementation the kernel runs on is ``webgpu``, a name of its own."""
    backend = need(name)
    assert isinstance(backend.implementation, Implementation)
    assert backend.implementation == backend.capabilities().implementation
    assert backend.implementation.name == module and backend.options.implementation == backend.webgpu
