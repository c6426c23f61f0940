"""Which GPU a backend runs on: ``--device N``, ``--adapter TEXT``, or one per campaign worker.

The command line writes the choice into the environment (``DEVICE_ENV``, ``ADAPTER_ENV``), so it
reaches every process that makes backends: campaign workers and crash-isolated backends inherit
it. A campaign worker also gets its number (``WORKER_ENV``): without ``--device``, worker ``i``
takes device ``i % n`` of the ``n`` its backend can choose from, so workers spread over the GPUs.

Each backend numbers its own devices (``Capabilities.devices``, listed by ``lafuzz backends``):
the wgpu kernels their adapters, the ORT WebGPU EP its plugin's devices, the CUDA EP its GPUs.
A choice that names no device there is ``NoSuchDevice``, a usage error: a wrong number must stop
the command, not quietly drop the backend.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fuzz.backends.base import Unavailable
from fuzz.usage import UsageError

DEVICE_ENV = "LAFUZZ_DEVICE"
"""The device number every backend that picks a device takes (``--device``)."""
ADAPTER_ENV = "LAFUZZ_ADAPTER"
"""A text the chosen device's description must contain, case-insensitively (``--adapter``)."""
WORKER_ENV = "LAFUZZ_WORKER"
"""A campaign worker's number, set by the worker itself: its device when none is chosen."""
LIBRARY_ENV = "LAFUZZ_WEBGPU_EP_LIBRARY"
"""A WebGPU plugin EP library ``ort-webgpu`` registers instead of the package's (``--ep-library``): a choice the
command line hands every process the same way, kept here so that setting it imports no ORT."""


class NoSuchDevice(Unavailable, UsageError):
    """``--device`` or ``--adapter`` names no device of a backend here (one line, exit 2)."""


@dataclass(frozen=True)
class DeviceChoice:
    """A device number, an adapter text, and the worker number that spreads workers without a number."""

    index: int | None = None
    adapter: str | None = None
    worker: int | None = None

    @classmethod
    def from_environment(cls, env: Mapping[str, str] = os.environ) -> DeviceChoice:
        """The choice the command line (and the campaign worker) left in ``env``."""

        def number(name: str) -> int | None:
            text = env.get(name)
            if not text:
                return None
            try:
                return int(text)
            except ValueError:
                raise NoSuchDevice(f"${name} must be a device number, got {text!r}") from None

        return cls(index=number(DEVICE_ENV), adapter=env.get(ADAPTER_ENV) or None, worker=number(WORKER_ENV))

    def pick(self, devices: Sequence[str], what: str) -> int | None:
        """The position in ``devices`` (descriptions) of the chosen one; None when nothing was chosen
        (the backend's own default). ``what`` names the backend's devices in errors."""
        if self.index is None and self.adapter is None:
            return self.worker % len(devices) if self.worker is not None and devices else None
        matches = [i for i, d in enumerate(devices) if self.adapter is None or self.adapter.lower() in d.lower()]
        listing = "; ".join(f"{i}: {d}" for i, d in enumerate(devices)) or "none"
        if not matches:
            raise NoSuchDevice(f"{what}: no device matches --adapter {self.adapter!r}; devices here: {listing}")
        if self.index is not None:
            if self.index >= len(matches):
                among = f" matching {self.adapter!r}" if self.adapter is not None else ""
                raise NoSuchDevice(
                    f"{what}: --device {self.index} is out of range: {len(matches)} device(s){among} here ({listing})"
                )
            return matches[self.index]
        return matches[(self.worker or 0) % len(matches)]


def assign_worker(number: int) -> None:
    """Make this process campaign worker ``number`` (before it creates its backends)."""
    os.environ[WORKER_ENV] = str(number)


def worker_number() -> int:
    """This process's campaign worker number (``assign_worker``); 0 outside a campaign's workers."""
    text = os.environ.get(WORKER_ENV, "")
    return int(text) if text.isdigit() else 0
