"""The suite's WGSL kernels in headless Chromium's WebGPU: Dawn and Tint as a browser ships them, with the browser's
own validation and limits (on a machine without a GPU, over SwiftShader).

The kernels' Python runs unchanged; their WebGPU calls are recorded as plans and replayed by a page
(``fuzz.backends.webgpu_plan``), which the ort-web backend's machinery serves: ``ortjs/browser-worker.mjs`` with
``--page kernel-page`` (Node, puppeteer-core, Debian's ``chromium``; ``$LAFUZZ_CHROMIUM`` names another). The
backend runs in a worker process of its own (``WorkerBackend``): the kernels' caches there name objects of one
page, so a crashed tab or browser, or a hang, ends that worker with the case's outcome, and the next case starts a
fresh worker, page and browser. The browser's adapter is the only one: ``--device``/``--adapter`` do not apply.
"""

from __future__ import annotations

from fuzz.backends.base import Unavailable
from fuzz.backends.chromium import CHROMIUM_ENV, chromium_path
from fuzz.backends.isolation import DEFAULT_TIMEOUT_S, START_TIMEOUT_S, WorkerBackend
from fuzz.backends.kernel_backend import KernelBackend, grants
from fuzz.backends.ort_node import node_command
from fuzz.backends.ort_remote import WorkerLink
from fuzz.backends.webgpu_plan import plan_implementation
from fuzz.backends.wgpu_conv import WgpuConvDawnBackend
from fuzz.backends.wgpu_kernel import WgpuDawnBackend
from kernels.device import describe_adapters, load_implementation, provide_implementation

IMPLEMENTATION = "browser"
"""The name the kernels know the browser's WebGPU by (``kernels.device.provide_implementation``)."""

PAGE_TIMEOUT_S = 0.8 * DEFAULT_TIMEOUT_S
"""The page's deadline for one plan: shorter than the worker's own, so that a hung page is reported as such."""

PAGE_START_TIMEOUT_S = 0.8 * START_TIMEOUT_S
"""The browser's deadline to bring the page up: shorter than the worker's to start, for the same reason."""


def open_page(name: str) -> WorkerLink:
    """A browser with the plan-replaying page, its WebGPU provided to the kernels as ``IMPLEMENTATION``;
    ``Unavailable`` saying what is missing (Chromium, Node, puppeteer-core, WebGPU in the page)."""
    chromium = chromium_path()
    if chromium is None:
        raise Unavailable(f"{name}: Chromium not found (lafuzz setup says how to install it; or set ${CHROMIUM_ENV})")
    command = [*node_command(name, "browser-worker.mjs", "puppeteer-core"), "--chromium", chromium,
               "--page", "kernel-page"]
    link = WorkerLink(name, command, timeout_s=PAGE_TIMEOUT_S, start_timeout_s=PAGE_START_TIMEOUT_S)
    info = link.start()
    if not info.get("webgpu"):
        link.stop(kill=True)
        raise Unavailable(f"{name}: no WebGPU in {info.get('chromium')}: {info.get('why')}")
    provide_implementation(IMPLEMENTATION, plan_implementation(link, info), "enable subgroups;")
    return link


class _InBrowser(KernelBackend):
    """A kernel backend on the browser's WebGPU (in the worker process), which says what the browser grants."""

    webgpu = IMPLEMENTATION

    def __init__(self, adapter: str | int | None = None) -> None:
        self.link = open_page(self.name)
        try:
            super().__init__(adapter)
        except BaseException:
            self.link.stop(kill=True)
            raise

    def choose_adapter(self) -> tuple[list[str], str | int | None]:
        return describe_adapters(load_implementation(self.webgpu)), None

    def kernel_notes(self) -> tuple[str, ...]:
        features = ", ".join(self.link.info["features"])
        return (*grants(self.kernel.device), f"the browser's adapter offers: {features}", *super().kernel_notes())

    def close(self) -> None:
        super().close()
        self.link.stop(kill=True)


class BrowserKernel(_InBrowser, WgpuDawnBackend):
    """LinearAttention's kernel in the browser (in the worker process), on the kernel's own choice of reduction."""

    name = "wgpu-browser"


class BrowserConvKernel(_InBrowser, WgpuConvDawnBackend):
    """CausalConvWithState's kernel in the browser (in the worker process)."""

    name = "wgpu-conv-browser"


class WgpuBrowserBackend(WorkerBackend):
    """``wgpu-browser``: LinearAttention's kernel in headless Chromium's WebGPU."""

    name = "wgpu-browser"
    target = f"{__name__}:{BrowserKernel.__name__}"


class WgpuConvBrowserBackend(WorkerBackend):
    """``wgpu-conv-browser``: CausalConvWithState's kernel in headless Chromium's WebGPU."""

    name = "wgpu-conv-browser"
    target = f"{__name__}:{BrowserConvKernel.__name__}"
