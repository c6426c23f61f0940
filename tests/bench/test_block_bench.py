"""The hybrid block's bench (``fuzz.bench.block``) runs its series and reports every table; its numbers are for the
GPU (docs/results), not checked here."""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzz.bench.block import QUICK_LAYER, BlockOptions, block_clock, main, markdown, run_block_bench
from fuzz.bench.protocol import FENCED_CLOCK, GPU_CLOCK
from fuzz.bench.rounds import Schedule

TINY = Schedule(rounds=2, per_round=3, round_warmups=0, settle_batch=2, settle_window=1, settle_max_passes=2)


def test_every_table_has_its_rows(need) -> None:
    need("wgpu-conv")
    options = BlockOptions(layer=QUICK_LAYER, dtypes=("float32",), seq_lens=(1, 3), windows=(2,), schedule=TINY)
    results = run_block_bench(options, log=lambda line: None)
    tables = results["dtypes"]["float32"]
    assert [(r["T"], r["W"]) for r in tables["overhead"]] == [(1, 2), (3, 2)]
    assert [(r["T"], r["a"]) for r in tables["rollback"]] == [(3, 2)]  # T - W < a < T
    assert all(r["rerun"] > 0 and r["path"] in ("rebind", "copy") for r in tables["rollback"])
    assert [(r["T"], r["W"]) for r in tables["p_star"]] == [(3, 2)]
    assert "the block's rollback against a rerun" in markdown(results)


def test_a_window_below_one_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--out", str(tmp_path / "out"), "--windows", "0"]) == 2
    assert ">= 1" in capsys.readouterr().err


@pytest.fixture
def without_f16(need, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bench's device (wgpu-native, the adapter the command line would pick) without ``shader-f16``: Dawn on an
    NVIDIA H200 via Vulkan is such a device; lavapipe here has the feature."""
    from fuzz.backends.kernel_backend import chosen_adapter
    from kernels.causal_conv import get_kernel
    from kernels.options import ConvKernelOptions

    need("wgpu-conv")
    device = get_kernel(ConvKernelOptions("wgpu", chosen_adapter("wgpu", "wgpu")[1])).device
    monkeypatch.setattr(device, "features", device.features - {"shader-f16"})


@pytest.mark.usefixtures("without_f16")
def test_a_dtype_the_device_lacks_is_skipped_and_the_others_measured() -> None:
    logged: list[str] = []
    options = BlockOptions(layer=QUICK_LAYER, dtypes=("float16", "float32"), seq_lens=(1,), windows=(1,),
                           schedule=TINY)
    results = run_block_bench(options, log=logged.append)
    assert list(results["dtypes"]) == ["float32"]
    assert "lacks WebGPU feature 'shader-f16'" in results["skipped"]["float16"]
    assert any(line.startswith("float16: skipped: ") and "shader-f16" in line for line in logged), logged
    assert "## float16: skipped" in markdown(results)


@pytest.mark.usefixtures("without_f16")
def test_only_a_dtype_the_device_lacks_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["--out", str(out), "--quick", "--dtypes", "fp16", "--seq-lens", "1", "--windows", "1"]) == 2
    assert "cannot measure float16" in capsys.readouterr().err
    assert "shader-f16" in (out / "report.md").read_text()


def test_dawn_is_timed_on_the_fenced_wall_clock() -> None:
    """Dawn's quantized timestamps read a block call as zero (H200, 2026-12-03): its calls are timed on the host."""
    assert block_clock({"timestamp-query"}, "wgpu") == GPU_CLOCK
    assert block_clock({"timestamp-query"}, "dawn") == FENCED_CLOCK
    assert block_clock(set(), "wgpu") == FENCED_CLOCK
