"""The ``device-chain`` property: its cases describe their chain, and it reaches every path of the
kernel's select-and-resume (whether it holds is ``test_properties.py``'s business)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

from fuzz.backends import Backend, Capabilities, ChainCall
from fuzz.campaign import profiles
from fuzz.campaign.shard import WorkUnit
from fuzz.campaign.unit import run_unit
from fuzz.engine.chains import MAX_CALLS, chain_cases
from fuzz.model.case import Case
from fuzz.model.chain import Chain
from fuzz.ops.linear_attention.strategies import Limits
from oracles.rollback import represented_acceptances

PATH_EXAMPLES = 60
"""Chains drawn to look for each resume path: a rebind needs the rebind mode, separate bindings, an
accepted slot at a bindable offset and a case the device supports, so the ``ci`` profile's 25
examples can miss it; 60 (derandomized) reach every path with room, at 256-byte alignment too."""


class RecordingBackend(Backend):
    """Delegates to a backend and counts how each call of each chain it ran was seeded."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.name = inner.name
        self.seeded_by: Counter[str] = Counter()

    def capabilities(self) -> Capabilities:
        return self.inner.capabilities()

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        return self.inner.run(case)

    def run_chain(self, case: Case, chain: Chain) -> list[ChainCall]:
        calls = self.inner.run_chain(case, chain)
        self.seeded_by.update(call.seeded_by for call in calls)
        return calls


@given(chain_cases(Limits.ci()))
def test_a_chain_case_tiles_its_calls(case: Case) -> None:
    """2 to ``MAX_CALLS`` calls cover the case's tokens, each acceptance one the window represents for its
    call's length (or 0), and the chain survives the case's serialisation."""
    chain = Chain.of(case)
    assert 2 <= chain.calls <= MAX_CALLS and case.seq_len == sum(chain.call_lens)
    for length, accepted in zip(chain.call_lens, chain.accepted, strict=False):
        assert accepted in {0, *represented_acceptances(length, case.state_window)}
    assert "past_state" in case.inputs
    last = chain.call(case, chain.calls - 1)
    assert np.array_equal(last.inputs["query"], case.inputs["query"][:, -chain.call_lens[-1]:])
    assert Chain.of(Case.from_parts(case.metadata(), case.inputs)) == chain


def test_a_chain_case_saved_with_one_call_length_replays() -> None:
    """Notes written when every call of a chain had one length (``call_len``) describe the same chain."""
    tokens = np.zeros((1, 9, 4), dtype=np.float32)
    case = Case(inputs={"query": tokens, "key": tokens, "value": tokens}, attrs={},
                notes={"call_len": 3, "chain_accepted": [2, 0], "accept_mode": "copy"})
    assert Chain.of(case) == Chain((3, 3, 3), (2, 0), "copy")


MIX_EXAMPLES = 100


@pytest.mark.slow
def test_chains_often_follow_a_call_that_fills_the_window_with_one_that_does_not() -> None:
    """A call of ``T >= W`` and then one of ``T < W`` on the same present state is the case where a kernel
    that skipped storing the leading zero slots it once wrote (``kernels.BoundCall.encode``) would leave the
    first call's values there: drawn chains must contain it often, so campaigns test that tracking
    (half of them do)."""
    mixed = Counter()

    @settings(max_examples=MIX_EXAMPLES, derandomize=True, database=None)
    @given(chain_cases(Limits.ci()))
    def draw(case: Case) -> None:
        lens, w = Chain.of(case).call_lens, case.state_window
        mixed[any(a >= w > b for a, b in pairwise(lens))] += 1

    draw()
    assert mixed[True] >= MIX_EXAMPLES // 4, dict(mixed)


@pytest.mark.slow
@pytest.mark.parametrize("alignment", [None, 256], ids=["own-alignment", "256-byte-alignment"])
@pytest.mark.parametrize("name", ["wgpu", "wgpu-dawn"])
def test_the_property_reaches_rebind_copy_and_keep(name: str, alignment: int | None, need, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Over a fixed (derandomized) set of drawn chains, the chains resume by rebinding the accepted
    slot, by copying it on the GPU and by keeping the seed; most chains are checked (odd-sized float16
    slots cannot be copied), and none leaves a device buffer behind. Also where binding offsets must be
    multiples of 256 bytes, as on most GPUs (lavapipe asks for 16 or 32)."""
    recording = RecordingBackend(need(name))
    device = recording.inner.kernel.device
    if alignment is not None:
        monkeypatch.setitem(device.limits, "min-storage-buffer-offset-alignment", alignment)
    live = device.memory.live_buffers
    # only the dtypes the adapter runs (Dawn on NVIDIA has no shader-f16): every drawn chain can be checked
    limits = replace(Limits.ci(), dtypes=recording.capabilities().dtypes)
    result = run_unit(WorkUnit("device-chain", 0, 0), [recording], limits=limits,
                      settings=settings(profiles.get("ci"), max_examples=PATH_EXAMPLES), save_dir=tmp_path)
    assert result.finding is None, result.finding.report
    assert result.checked > result.examples // 2, dict(result.skips)
    assert {"rebind", "copy", "keep"} <= set(recording.seeded_by), dict(recording.seeded_by)
    assert device.memory.live_buffers == live
