"""The GatedDeltaNet and GatedDeltaNetStateReplay kernels against the float64 oracle, on both WebGPU implementations.

Each property of ``fuzz.engine.gdn_checks`` runs on drawn cases: every output (the capsule's captured prefix among
them), the resume by replay on the device for every accepted count, a decoder's chain of calls resumed on the device,
the replay's destination, NaN where the replay must not read, and the refusal of replays one rule away from valid
ones, and the aliased state binding. Plus what a property does not draw: the capsule zeroed when capture is off.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings

from fuzz.backends import Backend
from fuzz.engine.gdn_checks import (
    check_gdn_agree,
    check_gdn_aliasing,
    check_gdn_decoder_chain,
    check_gdn_resume,
    check_replay_agree,
    check_replay_poison_invariance,
    check_replay_refuses_invalid,
)
from fuzz.model.case import Case
from fuzz.ops.gated_delta_net.decoder_chain import decoder_chain_cases
from fuzz.ops.gated_delta_net.strategies import (
    GdnLayout,
    GdnLimits,
    GdnShape,
    aliased_cases,
    build_gdn_case,
    gdn_cases,
)
from fuzz.ops.state_replay.strategies import ReplayLimits, replay_cases
from kernels.gated_delta_net import get_gdn_kernel, upload_inputs

BACKENDS = ("wgpu-gdn", "wgpu-gdn-dawn")


@pytest.fixture(params=BACKENDS)
def kernel(request: pytest.FixtureRequest, need: Callable[..., Backend]) -> Backend:
    return need(request.param)


@pytest.fixture
def oracle(need: Callable[..., Backend]) -> Backend:
    return need("oracle")


def test_every_output_agrees(kernel: Backend, oracle: Backend) -> None:
    @settings(max_examples=40, deadline=None)
    @given(case=gdn_cases(GdnLimits(max_d=6)))
    def agrees(case: Case) -> None:
        result = check_gdn_agree(case, [oracle, kernel])
        assert result.comparisons == 6 or kernel.name in result.skipped

    agrees()


def test_resuming_by_replay_equals_a_fresh_run(kernel: Backend) -> None:
    @settings(max_examples=25, deadline=None)
    @given(case=gdn_cases(GdnLimits(max_d=6), capture=True, dtypes=("float32",)))
    def resumes(case: Case) -> None:
        result = check_gdn_resume(case, [kernel])
        assert result.comparisons == max(case.dims().captured) + 1

    resumes()


def test_a_decoder_chain_resumed_by_replay_on_the_device_equals_the_oracles(kernel: Backend) -> None:
    @settings(max_examples=25, deadline=None)
    @given(case=decoder_chain_cases(GdnLimits(max_d=6, max_len=8)))
    def chains(case: Case) -> None:
        assert check_gdn_decoder_chain(case, [kernel]).comparisons == len(case.notes["call_lens"])

    chains()


def test_the_replay_agrees_and_refuses_what_the_contract_refuses(kernel: Backend, oracle: Backend) -> None:
    @settings(max_examples=25, deadline=None)
    @given(case=replay_cases(ReplayLimits(GdnLimits(max_d=6))))
    def replays(case: Case) -> None:
        assert check_replay_agree(case, [oracle, kernel]).comparisons == 2
        assert check_replay_refuses_invalid(case, [oracle, kernel]).comparisons == 14
        assert check_replay_poison_invariance(case, [oracle, kernel]).comparisons == 2

    replays()


SHAPE = GdnShape(lengths=(3, 4), ragged=True, q_heads=2, group=2, d_k=5, d_v=3)


def test_an_aliased_state_gives_the_separate_results(kernel: Backend) -> None:
    @settings(max_examples=25, deadline=None)
    @given(case=aliased_cases(GdnLimits(max_d=6)))
    def aliased(case: Case) -> None:
        assert check_gdn_aliasing(case, [kernel]).comparisons == 3

    aliased()


def test_capture_off_zeroes_the_capsule(kernel: Backend) -> None:
    """Into a capsule buffer that held something else: a fresh buffer is zeros already."""
    case = build_gdn_case(SHAPE, GdnLayout(capacity=3, capture_counts=(3, 2), active=0), seed=6)
    device = kernel.device  # the backend's own device (fuzz.backends.wgpu_gdn)
    shape = case.dims().state_update_shape
    held = device.upload(np.ones(shape, np.float32), "state_update")
    call = get_gdn_kernel(device).prepare(**upload_inputs(device, dict(case.inputs)), **case.attrs,
                                          state_update=held)
    call.dispatch()
    assert shape == (2, 3 * (4 + 2 * 5 + 4 * 3)) and not device.download(held).any()
