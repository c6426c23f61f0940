"""A WebGPU implementation that records the kernels' calls as a plan, replayed by a page in a browser.

The kernels drive WebGPU through wgpu-py's API (``kernels.device``): buffers, shader modules, pipelines, bind
groups, compute passes, copies, submits and one mapped read-back per transfer. ``plan_implementation`` returns a
module offering that part of the API (``kernels.device.provide_implementation``), whose objects are handles: every
call is recorded as a command naming them by number, with the bytes of each buffer write beside it. When the host
maps a buffer to read it, the commands recorded so far go to the page in one request (``kernel-page/page.mjs``,
through ``fuzz.backends.ort_remote.WorkerLink``), which runs them in order on the browser's WebGPU and answers the
buffer's bytes. So the dispatch logic stays the kernels' own Python: the page knows WebGPU calls, not kernels.

What cannot be replayed is not offered: the adapter lists only the features the kernels ask for that the browser
has (``shader-f16``, ``subgroups``; never ``timestamp-query``). An error the browser raised during a plan
(validation, out of memory, internal) comes back as ``PlanError``, a lost device as ``PlanDeviceLost``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from types import ModuleType, SimpleNamespace
from typing import Any, Protocol

from fuzz.backends.ort_worker import Message

REPLAYED_FEATURES = ("shader-f16", "subgroups")
"""Features a plan may use, where the browser's adapter has them."""

BUFFER_USAGE = SimpleNamespace(MAP_READ=1, MAP_WRITE=2, COPY_SRC=4, COPY_DST=8, INDEX=16, VERTEX=32, UNIFORM=64,
                               STORAGE=128, INDIRECT=256, QUERY_RESOLVE=512)
"""WebGPU's ``GPUBufferUsage`` flags."""

MAP_MODE = SimpleNamespace(READ=1, WRITE=2)
"""WebGPU's ``GPUMapMode`` flags."""


class PlanError(RuntimeError):
    """The browser refused a plan's calls; the message is its own."""


class PlanDeviceLost(PlanError):
    """The browser's WebGPU device was lost: nothing more runs on it."""


class Link(Protocol):
    """Where plans go: one request, one reply (``WorkerLink.request``)."""

    def request(self, header: dict[str, Any], blobs: list[bytes] | None = None) -> Message: ...


def kebab(name: str) -> str:
    """A JavaScript limit name as wgpu-py spells it: ``maxBufferSize`` -> ``max-buffer-size``."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"-\1", name).lower()


def camel(name: str) -> str:
    """A wgpu-py limit name as JavaScript spells it: ``max-buffer-size`` -> ``maxBufferSize``."""
    first, *rest = name.split("-")
    return first + "".join(word.capitalize() for word in rest)


class Recorder:
    """The commands recorded since the last replay, the bytes they write, and the next object number."""

    def __init__(self, link: Link) -> None:
        self.link = link
        self.commands: list[dict[str, Any]] = []
        self.blobs: list[bytes] = []
        self.next_id = 0

    def make(self, kind: str, **fields: Any) -> int:
        """Record a call that makes an object; its number."""
        number = self.next_id
        self.next_id += 1
        self.commands.append({"k": kind, "id": number, **fields})
        return number

    def step(self, kind: str, **fields: Any) -> None:
        """Record a call that makes nothing."""
        self.commands.append({"k": kind, **fields})

    def blob(self, data: bytes) -> int:
        """Keep bytes a command writes; their index among the plan's blobs."""
        self.blobs.append(data)
        return len(self.blobs) - 1

    def replay(self, read: int | None) -> bytes:
        """Send the recorded commands, then read buffer ``read`` (None: nothing); start a new plan."""
        commands, blobs = self.commands, self.blobs
        self.commands, self.blobs = [], []
        header, out = self.link.request({"op": "plan", "commands": commands, "read": read}, blobs)
        if header.get("lost"):
            raise PlanDeviceLost(header["lost"])
        if not header.get("ok"):
            raise PlanError(header.get("error", "the page refused the plan"))
        return out[0] if out else b""


class _Handle:
    """A WebGPU object of the page, by number."""

    def __init__(self, recorder: Recorder, number: int) -> None:
        self.recorder = recorder
        self.id = number


class Buffer(_Handle):
    def __init__(self, recorder: Recorder, number: int, size: int, label: str) -> None:
        super().__init__(recorder, number)
        self.size = size
        self.label = label
        self._mapped = b""

    def map_sync(self, mode: int) -> None:
        """Run the plan recorded so far and read this buffer (the only mapping the kernels make)."""
        if mode != MAP_MODE.READ:
            raise PlanError("a plan maps buffers for reading only")
        self._mapped = self.recorder.replay(read=self.id)

    def read_mapped(self) -> memoryview:
        return memoryview(self._mapped)

    def unmap(self) -> None:
        self._mapped = b""

    def destroy(self) -> None:
        self.recorder.step("destroy", object=self.id)


class ComputePipeline(_Handle):
    def get_bind_group_layout(self, index: int) -> _Handle:
        return _Handle(self.recorder, self.recorder.make("layout", pipeline=self.id, index=index))


class ComputePass(_Handle):
    def set_pipeline(self, pipeline: ComputePipeline) -> None:
        self.recorder.step("setPipeline", compute=self.id, pipeline=pipeline.id)

    def set_bind_group(self, index: int, group: _Handle) -> None:
        self.recorder.step("setGroup", compute=self.id, index=index, group=group.id)

    def dispatch_workgroups(self, x: int, y: int = 1, z: int = 1) -> None:
        self.recorder.step("dispatch", compute=self.id, x=x, y=y, z=z)

    def end(self) -> None:
        self.recorder.step("end", compute=self.id)


class CommandEncoder(_Handle):
    def begin_compute_pass(self, timestamp_writes: object = None) -> ComputePass:
        if timestamp_writes is not None:
            raise PlanError("a plan has no timestamp queries")
        return ComputePass(self.recorder, self.recorder.make("pass", encoder=self.id))

    def copy_buffer_to_buffer(self, source: Buffer, source_offset: int, destination: Buffer,
                              destination_offset: int, size: int) -> None:
        self.recorder.step("copy", encoder=self.id, source=source.id, sourceOffset=source_offset,
                           destination=destination.id, destinationOffset=destination_offset, size=size)

    def finish(self) -> _Handle:
        return _Handle(self.recorder, self.recorder.make("finish", encoder=self.id))


class Queue:
    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    def write_buffer(self, buffer: Buffer, offset: int, data: bytes) -> None:
        self.recorder.step("write", buffer=buffer.id, offset=offset, blob=self.recorder.blob(bytes(data)))

    def submit(self, command_buffers: Sequence[_Handle]) -> None:
        self.recorder.step("submit", buffers=[c.id for c in command_buffers])


class Device:
    """The browser's device, as wgpu-py's ``GPUDevice`` offers the part the kernels call."""

    def __init__(self, recorder: Recorder, features: Sequence[str], limits: Mapping[str, int]) -> None:
        self.recorder = recorder
        self.features = set(features)
        self.limits = dict(limits)
        self.queue = Queue(recorder)

    def create_buffer(self, *, label: str = "", size: int, usage: int) -> Buffer:
        return Buffer(self.recorder, self.recorder.make("buffer", size=size, usage=usage, label=label), size, label)

    def create_shader_module(self, *, label: str = "", code: str) -> _Handle:
        return _Handle(self.recorder, self.recorder.make("shader", code=code, label=label))

    def create_compute_pipeline(self, *, layout: str, compute: Mapping[str, Any]) -> ComputePipeline:
        if layout != "auto":
            raise PlanError("a plan's pipelines take their layout from the shader (layout='auto')")
        number = self.recorder.make("pipeline", module=compute["module"].id, entry=compute["entry_point"])
        return ComputePipeline(self.recorder, number)

    def create_bind_group(self, *, layout: _Handle, entries: Sequence[Mapping[str, Any]]) -> _Handle:
        bound = [{"binding": e["binding"], "buffer": e["resource"]["buffer"].id, "offset": e["resource"]["offset"],
                  "size": e["resource"]["size"]} for e in entries]
        return _Handle(self.recorder, self.recorder.make("group", layout=layout.id, entries=bound))

    def create_command_encoder(self) -> CommandEncoder:
        return CommandEncoder(self.recorder, self.recorder.make("encoder"))


class Adapter:
    """The browser's adapter, as the page described it (``info``: its ``hello``)."""

    def __init__(self, link: Link, info: Mapping[str, Any]) -> None:
        self.link = link
        described = info["adapter"]
        self.features = {f for f in info["features"] if f in REPLAYED_FEATURES}
        self.limits = {kebab(name): value for name, value in info["limits"].items()}
        kind = "CPU" if described.get("fallback") else "GPU"
        name = " ".join(str(described[k]) for k in ("vendor", "architecture", "device") if described.get(k))
        self.info = {"device": name or "unnamed", "adapter_type": kind, "backend_type": f"WebGPU in {info['chromium']}",
                     "vendor": described.get("vendor", "")}

    def request_device_sync(self, *, label: str = "", required_features: Sequence[str] = (),
                            required_limits: Mapping[str, int] | None = None) -> Device:
        limits = {camel(name): value for name, value in (required_limits or {}).items()}
        header, _ = self.link.request({"op": "device", "features": list(required_features), "limits": limits})
        if not header.get("ok"):
            raise PlanError(header.get("error", "the page gave no device"))
        return Device(Recorder(self.link), header["features"],
                      {kebab(name): value for name, value in header["limits"].items()})


def plan_implementation(link: Link, info: Mapping[str, Any]) -> ModuleType:
    """A module offering the kernels' part of wgpu-py's API on the browser the page at ``link`` runs in; its
    name and version are the browser's (what ``Capabilities`` report)."""
    module = ModuleType("chromium-webgpu")
    adapter = Adapter(link, info)
    module.__dict__.update(
        __version__=str(info["chromium"]), BufferUsage=BUFFER_USAGE, MapMode=MAP_MODE,
        gpu=SimpleNamespace(request_adapter_sync=lambda **_: adapter, enumerate_adapters_sync=lambda: [adapter]))
    return module
