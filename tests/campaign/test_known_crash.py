"""A backend running in the worker's own process sits out the cases of its documented crashes: running one would
take the worker down. Crash-isolated, it runs them, and the crash is a (known) finding."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import settings

from fuzz.backends import Capabilities
from fuzz.backends.oracle import OracleBackend
from fuzz.campaign.shard import WorkUnit
from fuzz.campaign.unit import run_unit
from fuzz.engine.conv_strategies import ConvLimits
from fuzz.model.case import Case

ONE_TAP = replace(ConvLimits.ci(), kernel_sizes=(1, 2), ndims=(1,))


class CrashesOnOneTap(OracleBackend):
    """Stands for the WebGPU EP in-process (by name, the backend its documented crash is of): were it to run a case
    of a kernel of one tap, the test would fail (the real EP would have killed the process)."""

    name = "ort-webgpu"

    def capabilities(self) -> Capabilities:
        return replace(super().capabilities(), ops=("CausalConvWithState",))

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        assert case.inputs["weight"].shape[-1] != 1, "ran a case a documented crash of this backend affects"
        return super().run(case)


def test_an_in_process_backend_sits_out_its_documented_crashes() -> None:
    result = run_unit(WorkUnit("backends-agree", 0, 3), [OracleBackend(), CrashesOnOneTap()], limits=ONE_TAP,
                      settings=settings(settings(), max_examples=40))
    assert result.finding is None, result.finding.report
    assert result.known["ort-webgpu-conv-kernel-size-one"] > 0 and result.checked > 0


class BlockCrashesOnOneTap(CrashesOnOneTap):
    """The same, running both ops, so that it forms a hybrid block by itself."""

    def capabilities(self) -> Capabilities:
        return replace(OracleBackend.capabilities(self), ops=("LinearAttention", "CausalConvWithState"))

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        if case.op.name == "CausalConvWithState":
            return super().run(case)
        return OracleBackend.run(self, case)


def test_a_documented_crash_is_sat_out_whatever_other_issue_a_hybrid_case_has() -> None:
    """A hybrid case can be one of several issues of one backend (a shared beta in LinearAttention's half, a kernel
    of one tap in the convolution): the in-process backend sits it out for the crash, whichever issue comes first."""
    wide = replace(ONE_TAP, kernel_sizes=(1,), max_channels=12)  # room for two kv heads, so a shared beta matters
    result = run_unit(WorkUnit("hybrid-block", 0, 3), [OracleBackend(), BlockCrashesOnOneTap()], limits=wide,
                      settings=settings(settings(), max_examples=60))
    assert result.finding is None, result.finding.report
    assert result.known["ort-webgpu-conv-kernel-size-one"] > 0 and result.checked > 0, dict(result.known)
