"""Recording WebGPU calls as a plan: what the page is sent, and how its answers come back."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fuzz.backends.ort_worker import Message
from fuzz.backends.webgpu_plan import PlanDeviceLost, PlanError, camel, kebab, plan_implementation
from kernels.device import STORAGE_LIMITS, GpuDevice, provide_implementation

INFO = {"chromium": "Chrome/1.0", "adapter": {"vendor": "v", "architecture": "a", "fallback": True},
        "features": ["shader-f16", "subgroups", "timestamp-query", "texture-compression-bc"],
        "limits": {"maxStorageBufferBindingSize": 1 << 20, "maxBufferSize": 1 << 21,
                   "maxComputeWorkgroupStorageSize": 1 << 14, "maxStorageBuffersPerShaderStage": 10,
                   "minStorageBufferOffsetAlignment": 256}}


class FakePage:
    """Answers the device request with what was asked, each plan with ``answer``; keeps every request."""

    def __init__(self) -> None:
        self.requests: list[Message] = []
        self.answer: Message = ({"ok": True}, [b"\x01\x00\x00\x00"])

    def request(self, header: dict[str, Any], blobs: list[bytes] | None = None) -> Message:
        self.requests.append((header, list(blobs or [])))
        if header["op"] == "device":
            return {"ok": True, "features": header["features"], "limits": header["limits"]}, []
        return self.answer


@pytest.fixture
def page() -> FakePage:
    return FakePage()


@pytest.fixture
def device(page: FakePage) -> GpuDevice:
    provide_implementation("fake-page", plan_implementation(page, INFO), "enable subgroups;")
    return GpuDevice("fake-page")


def test_limit_names_cross_between_the_two_spellings() -> None:
    for name in (*STORAGE_LIMITS, "max-compute-invocations-per-workgroup", "min-storage-buffer-offset-alignment"):
        assert kebab(camel(name)) == name


def test_the_device_asks_for_the_replayable_features_and_the_storage_limits(device: GpuDevice, page: FakePage) -> None:
    """Only what a plan can replay is offered (no timestamps), and the kernels' limits are asked for by their
    JavaScript names."""
    header, _ = page.requests[0]
    assert header["op"] == "device" and sorted(header["features"]) == ["shader-f16", "subgroups"]
    assert header["limits"] == {camel(n): INFO["limits"][camel(n)] for n in STORAGE_LIMITS}
    assert device.software and device.features == {"shader-f16", "subgroups"}


def test_a_read_back_sends_every_call_recorded_before_it_in_order(device: GpuDevice, page: FakePage) -> None:
    data = np.arange(3, dtype=np.float32)
    tensor = device.upload(data, "x")
    module = device.device.create_shader_module(label="m", code="// wgsl")
    pipeline = device.device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
    group = device.device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=[
        {"binding": 0, "resource": {"buffer": tensor.buffer, "offset": 0, "size": tensor.size}}])
    encoder = device.device.create_command_encoder()
    compute = encoder.begin_compute_pass()
    compute.set_pipeline(pipeline)
    compute.set_bind_group(0, group)
    compute.dispatch_workgroups(2)
    compute.end()
    device.queue.submit([encoder.finish()])
    page.answer = ({"ok": True}, [np.float32([7, 8, 9]).tobytes()])
    assert device.download(tensor).tolist() == [7, 8, 9]
    header, blobs = page.requests[-1]
    kinds = [c["k"] for c in header["commands"]]
    assert kinds == ["buffer", "write", "shader", "pipeline", "layout", "group", "encoder", "pass", "setPipeline",
                     "setGroup", "dispatch", "end", "finish", "submit", "buffer", "encoder", "copy", "finish", "submit"]
    assert blobs == [data.tobytes()] and header["read"] == header["commands"][-5]["id"]
    dispatch = header["commands"][kinds.index("dispatch")]
    assert (dispatch["x"], dispatch["y"], dispatch["z"]) == (2, 1, 1)
    tensor.release()
    device.download(device.upload(data, "y"))
    assert page.requests[-1][0]["commands"][:2] == [{"k": "destroy", "object": header["read"]},
                                                     {"k": "destroy", "object": tensor.buffer.id}]


@pytest.mark.parametrize(("answer", "error"), [({"ok": False, "error": "shader: bad token"}, PlanError),
                                                ({"ok": False, "lost": "the device was lost"}, PlanDeviceLost)])
def test_what_the_page_refused_is_raised(device: GpuDevice, page: FakePage, answer: dict, error: type) -> None:
    page.answer = (answer, [])
    with pytest.raises(error, match=answer.get("error") or answer.get("lost")):
        device.download(device.upload(np.zeros(1, np.float32), "x"))
