"""ORT Web's WebGPU EP in headless Chromium as a backend (npm ``onnxruntime-web``, ``dist/ort.webgpu.min.mjs``).

``ortjs/browser-worker.mjs`` (Node, puppeteer-core; found as ``fuzz.backends.ort_node`` says) serves a page on
127.0.0.1 with COOP/COEP headers, starts Debian's ``chromium`` with ``--enable-unsafe-webgpu`` (and
``--no-sandbox`` as root) and relays the worker protocol into the page. That build is the native WebGPU EP
compiled to wasm: the default ``ort.min.mjs`` has no WebGPU kernel for LinearAttention and would run it on the
CPU; the page disables the CPU fallback either way.
A crashed tab or browser, or a hang, is an outcome, and a fresh browser is started for the next case.
``$LAFUZZ_CHROMIUM`` names another Chromium; nothing downloads one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fuzz.backends.base import Unavailable
from fuzz.backends.chromium import CHROMIUM_ENV, chromium_path
from fuzz.backends.ort_node import node_command
from fuzz.backends.ort_remote import RemoteOrtBackend
from fuzz.implementation import Implementation


class OrtWebBackend(RemoteOrtBackend):
    """onnxruntime-web's WebGPU build in a headless Chromium tab."""

    name = "ort-web"
    provider = "WebGpuExecutionProvider"

    def _command(self) -> tuple[list[str], Path | None]:
        chromium = chromium_path()
        if chromium is None:
            raise Unavailable(f"{self.name}: Chromium not found (lafuzz setup says how to install it; "
                              f"or set ${CHROMIUM_ENV})")
        node = node_command(self.name, "browser-worker.mjs", "onnxruntime-web", "puppeteer-core")
        return [*node, "--chromium", chromium], None

    def _describe(self, info: dict[str, Any]) -> None:
        if not info.get("webgpu"):
            raise Unavailable(f"{self.name}: no WebGPU in {info.get('chromium')}: {info.get('why')}")
        self.info = info

    def _device(self) -> str:
        a = self.info["adapter"]
        named = " ".join(a[k] for k in ("vendor", "architecture", "device", "description") if a.get(k))
        fallback = " - a fallback (software) adapter" if a.get("fallback") else ""
        return f"WebGPU adapter {named or 'unnamed'}{fallback} in headless {self.info['chromium']}"

    def _versions(self) -> dict[str, str]:
        return {"onnxruntime-web": f"{self.info['version']} ({self.info['build']})", "chromium": self.info["chromium"],
                "puppeteer-core": self.info["puppeteer"], "node": self.info["node"]}

    def _implementation(self) -> Implementation:
        return Implementation("onnxruntime-web", self.info["version"])
