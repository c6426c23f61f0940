"""The WGSL kernel backends: which kernel path each takes on the adapter it has."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(("name", "on_software"), [("wgpu", "workgroup"), ("wgpu-dawn", "auto")])
def test_kernel_path_follows_the_adapter(name: str, on_software: str, need) -> None:
    """On a software adapter wgpu-native takes the workgroup reduction (its subgroup kernel compiles 6x
    slower there) and Dawn the subgroup one, so a campaign on a CPU runs both; on a GPU both take ``auto``."""
    backend = need(name)
    expected = on_software if backend.kernel.device.software else "auto"
    assert backend.options.path == expected and backend.kernel.options.path == expected
    assert any("kernel path" in note for note in backend.capabilities().notes) == (expected != "auto")
