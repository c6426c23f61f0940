"""Shared test set-up: the WebGPU environment variables, before any backend library loads."""

import os

os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/xdg-runtime-{os.getuid()}")
os.makedirs(os.environ["XDG_RUNTIME_DIR"], exist_ok=True)
os.environ.setdefault("ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER", "1")
