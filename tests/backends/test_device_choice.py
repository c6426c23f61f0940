"""Choosing the GPU: ``--device``/``--adapter`` on the command line, one device per campaign worker.

This machine has one adapter, so the choice is tested through seams: ``DeviceChoice.pick`` on
descriptions, a pretend wgpu module with several adapters, and ``support.fakes:ThreeGpuBackend``,
which chooses among three pretend GPUs the way the real GPU backends choose theirs.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from support.fakes import DEVICE_LOG_ENV, DEVICE_WAIT_ENV

from fuzz.backends import NoSuchDevice, create
from fuzz.backends.device_choice import ADAPTER_ENV, DEVICE_ENV, WORKER_ENV, DeviceChoice
from fuzz.backends.ort_webgpu import LIBRARY_ENV
from fuzz.campaign.campaign import CampaignConfig, run_campaign
from fuzz.campaign.progress import Progress
from fuzz.cli import main
from kernels.device import adapters, select_adapter

THREE = "support.fakes:ThreeGpuBackend"
GPUS = ("NVIDIA H200 (DiscreteGPU) via Vulkan", "NVIDIA H200 (DiscreteGPU) via Vulkan", "llvmpipe (CPU) via Vulkan")


@pytest.fixture(autouse=True)
def no_choice(monkeypatch):
    """No choice from the outside; whatever a test's command line sets is undone afterwards (set, then
    deleted: monkeypatch restores only what it recorded, and it records nothing for an absent name)."""
    for name in (DEVICE_ENV, ADAPTER_ENV, WORKER_ENV, LIBRARY_ENV, DEVICE_LOG_ENV, DEVICE_WAIT_ENV):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


def test_nothing_chosen_is_the_backend_default():
    assert DeviceChoice().pick(GPUS, "gpus") is None
    assert DeviceChoice(worker=5).pick((), "gpus") is None


def test_workers_spread_over_the_devices():
    assert [DeviceChoice(worker=i).pick(GPUS, "gpus") for i in range(5)] == [0, 1, 2, 0, 1]


def test_a_number_and_an_adapter_text():
    assert DeviceChoice(index=2, worker=1).pick(GPUS, "gpus") == 2, "--device wins over the worker's number"
    assert DeviceChoice(adapter="llvm").pick(GPUS, "gpus") == 2
    assert DeviceChoice(adapter="h200", index=1).pick(GPUS, "gpus") == 1
    assert DeviceChoice(adapter="h200", worker=3).pick(GPUS, "gpus") == 1


def test_a_device_that_is_not_there_is_a_clear_error():
    with pytest.raises(NoSuchDevice, match=r"gpus: --device 3 is out of range: 3 device\(s\) here \(0: NVIDIA"):
        DeviceChoice(index=3).pick(GPUS, "gpus")
    with pytest.raises(NoSuchDevice, match=r"--device 1 is out of range: 1 device\(s\) matching 'llvm'"):
        DeviceChoice(index=1, adapter="llvm").pick(GPUS, "gpus")
    with pytest.raises(NoSuchDevice, match="no device matches --adapter 'A100'"):
        DeviceChoice(adapter="A100").pick(GPUS, "gpus")


def test_the_choice_comes_from_the_environment():
    env = {DEVICE_ENV: "1", ADAPTER_ENV: "h200", WORKER_ENV: "4"}
    assert DeviceChoice.from_environment(env) == DeviceChoice(index=1, adapter="h200", worker=4)
    assert DeviceChoice.from_environment({}) == DeviceChoice()
    with pytest.raises(NoSuchDevice, match="LAFUZZ_DEVICE must be a device number"):
        DeviceChoice.from_environment({DEVICE_ENV: "first"})


def _adapter(device: str, adapter_type: str, backend_type: str) -> SimpleNamespace:
    return SimpleNamespace(info={"device": device, "adapter_type": adapter_type, "backend_type": backend_type})


def test_kernel_adapters_are_those_of_the_default_kind():
    """Two GPUs through Vulkan count; their OpenGL twins and a software rasterizer do not."""
    gpu0, gpu1 = _adapter("GPU 0", "DiscreteGPU", "Vulkan"), _adapter("GPU 1", "DiscreteGPU", "Vulkan")
    others = [_adapter("GPU 0", "DiscreteGPU", "OpenGL"), _adapter("llvmpipe", "CPU", "Vulkan")]
    gpu = SimpleNamespace(request_adapter_sync=lambda **_: gpu0, enumerate_adapters_sync=lambda: [gpu0, *others, gpu1])
    module = SimpleNamespace(__name__="fakewgpu", gpu=gpu)
    assert adapters(module) == [gpu0, gpu1]
    assert select_adapter(module, 1) is gpu1
    assert select_adapter(module, "llvm") is others[1], "a text searches every adapter"
    with pytest.raises(Exception, match="no adapter number 2; there are 2"):
        select_adapter(module, 2)


def test_the_wgpu_backend_refuses_a_device_it_does_not_have(need, monkeypatch):
    wgpu = need("wgpu")
    count = len(wgpu.capabilities().devices)
    assert count >= 1 and wgpu.capabilities().device in wgpu.capabilities().devices
    monkeypatch.setenv(DEVICE_ENV, str(count))
    with pytest.raises(NoSuchDevice, match=f"wgpu adapters: --device {count} is out of range"):
        create("wgpu")


def test_an_isolated_backend_keeps_the_error_type(monkeypatch):
    """A crash-isolated backend (the ORT ones) raises the same usage error from its worker process."""
    monkeypatch.setenv(DEVICE_ENV, "7")
    with pytest.raises(NoSuchDevice, match="--device 7 is out of range: 3 device"):
        create(THREE, isolate=True)


def test_the_command_line_lists_devices_and_refuses_bad_ones(capsys):
    assert main(["backends", "--names", THREE, "--device", "1"]) == 0
    out = capsys.readouterr().out
    assert "fake GPU beta" in out.splitlines()[0]
    assert "devices: 0: fake GPU alpha; 1: fake GPU beta; 2: fake GPU gamma" in out
    assert main(["backends", "--names", THREE, "--device", "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("lafuzz backends: three-gpus devices: --device 3 is out of range") and "\n" not in err
    assert main(["replay", "--backends", THREE, "--adapter", "epsilon"]) == 2
    assert "no device matches --adapter 'epsilon'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "command",
    [
        ["campaign", "--time", "5"],
        ["replay"],
        ["repro", "corpus"],
        ["backends"],
        ["bench", "--out", "unused", "--quick"],
    ],
)
def test_a_missing_ep_library_is_one_line_and_exit_2(command, capsys):
    assert main([*command, "--ep-library", "/nonexistent/libonnxruntime_providers_webgpu.so"]) == 2
    err = capsys.readouterr().err
    assert err == f"lafuzz {command[0]}: --ep-library /nonexistent/libonnxruntime_providers_webgpu.so: no such file\n"


def test_the_ep_library_reaches_the_processes_that_make_backends(tmp_path, capsys):
    """``--ep-library`` is put in the environment (real path) that workers and isolated backends inherit."""
    library = tmp_path / "libwebgpu.so"
    library.write_bytes(b"")
    main(["backends", "--names", "oracle", "--ep-library", str(library)])
    assert os.environ[LIBRARY_ENV] == str(library.resolve())


def _campaign_devices(tmp_path: Path, monkeypatch, jobs: int) -> dict[int, set[int]]:
    """Run a tiny campaign of ``jobs`` workers on ``ThreeGpuBackend``; its devices by process id."""
    log = tmp_path / "devices.log"
    monkeypatch.setenv(DEVICE_LOG_ENV, str(log))
    monkeypatch.setenv(DEVICE_WAIT_ENV, str(jobs + 1))  # every worker, and the campaign's own probe
    config = CampaignConfig(
        properties=["backends-agree"],
        backends=["oracle", THREE],
        seed=4,
        jobs=jobs,
        time_budget=None,
        example_budget=4 * jobs,
        examples_per_unit=2,
        limits="ci",
        out=tmp_path / "out",
        known_corpus=None,
    )
    summary = run_campaign(config, Progress(interval=60))
    assert summary.exit_status == 0, summary.findings
    chosen: dict[int, set[int]] = {}
    for line in log.read_text().splitlines():
        pid, device = map(int, line.split())
        chosen.setdefault(pid, set()).add(device)
    chosen.pop(os.getpid(), None)  # the campaign's own probe, before any worker
    return chosen


@pytest.mark.slow
def test_campaign_workers_spread_over_the_devices(tmp_path, monkeypatch):
    chosen = _campaign_devices(tmp_path, monkeypatch, jobs=2)
    assert sorted(map(sorted, chosen.values())) == [[0], [1]]


@pytest.mark.slow
def test_campaign_workers_all_take_the_chosen_device(tmp_path, monkeypatch):
    monkeypatch.setenv(DEVICE_ENV, "2")
    chosen = _campaign_devices(tmp_path, monkeypatch, jobs=2)
    assert list(chosen.values()) == [{2}, {2}]
