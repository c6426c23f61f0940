"""The kernels in headless Chromium's WebGPU: what the browser grants, cases against the oracle, the page's errors.

Skipped, with the reason, where Chromium, Node or puppeteer-core is missing; where all are here the backends must
come up (a broken page is a failure, not a skip).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest
from support.platforms import check_ci_sample, required

from fuzz.backends import Backend, Unavailable
from fuzz.backends.chromium import chromium_path
from fuzz.backends.ort_node import node_command
from fuzz.backends.webgpu_plan import PlanError
from fuzz.backends.wgpu_browser import IMPLEMENTATION, open_page
from fuzz.model.ops import CAUSAL_CONV, LINEAR_ATTENTION
from kernels.device import GpuDevice

BACKENDS = {"wgpu-browser": LINEAR_ATTENTION, "wgpu-conv-browser": CAUSAL_CONV}

WEBGPU_DEFAULT_INVOCATIONS = 256
"""WebGPU's default ``maxComputeInvocationsPerWorkgroup``, which a device keeps unless asked for more."""


@pytest.fixture(scope="module")
def browser() -> str:
    """Chromium's path, or skip saying what is missing."""
    chromium = chromium_path()
    if chromium is None:
        pytest.skip("no Chromium here (Debian's chromium package, or $LAFUZZ_CHROMIUM)")
    try:
        node_command("wgpu-browser", "browser-worker.mjs", "puppeteer-core")
    except Unavailable as err:
        pytest.skip(str(err))
    return chromium


@pytest.fixture(scope="module")
def in_browser(browser: str, backend) -> Callable[[str], Backend]:
    """``in_browser(name)``: the backend, which must be available wherever the browser is."""
    return required(backend, browser)


@pytest.mark.parametrize("name", list(BACKENDS))
def test_a_backend_runs_in_the_browser_and_says_what_it_grants(name: str, in_browser) -> None:
    capabilities = in_browser(name).capabilities()
    notes = " ".join(capabilities.notes)
    assert "Chrome" in capabilities.device and capabilities.ops == (BACKENDS[name].name,)
    assert f"max-compute-invocations-per-workgroup {WEBGPU_DEFAULT_INVOCATIONS}" in notes
    assert "subgroups of " in notes and "the browser's adapter offers: " in notes
    granted = next(n for n in capabilities.notes if n.startswith("features granted: "))
    assert ("float16" in capabilities.dtypes) == ("shader-f16" in granted.split(": ")[1].split(", "))


@pytest.mark.parametrize("name", list(BACKENDS))
def test_cases_agree_with_the_oracle_and_the_rest_are_unsupported_for_a_reason(name: str, in_browser) -> None:
    check_ci_sample(in_browser(name), BACKENDS[name])


@pytest.fixture(scope="module")
def page_device(browser: str) -> Iterator[GpuDevice]:
    """A device of the browser's WebGPU in this process, through the page, as the backends' workers open it."""
    link = open_page("test-page")
    try:
        yield GpuDevice(IMPLEMENTATION)
    finally:
        link.stop(kill=True)


def test_a_shader_the_browser_refuses_comes_back_with_its_message(page_device: GpuDevice) -> None:
    module = page_device.device.create_shader_module(label="broken", code="fn main( {")
    page_device.device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
    with pytest.raises(PlanError, match="broken"):
        page_device.download(page_device.upload(np.zeros(4, np.float32), "x"))
    assert page_device.download(page_device.upload(np.arange(4, dtype=np.float32), "y")).tolist() == [0, 1, 2, 3]
