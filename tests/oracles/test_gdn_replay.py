"""GatedDeltaNetStateReplay's oracle (docs/spec.md §9): its descriptor's rules, its views, its head mapping."""

from __future__ import annotations

import re

import numpy as np
import pytest

from oracles import ValidationError
from oracles.gated_delta_net import gated_delta_net_state_replay

HV, DV, DK, HK, C = 5, 3, 4, 3, 4
STATE = HV * DV * DK
ROW = C * (HV + HK * DK + HV * DV)


def backings(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A source with the state at offset 3, a capsule row at offset 7, a destination with the view at 5."""
    rng = np.random.default_rng(seed)
    source = rng.standard_normal(STATE + 11).astype(np.float32)
    capsule = rng.standard_normal(ROW + 9).astype(np.float32)
    destination = np.full(STATE + 13, -931.25, np.float32)
    metadata = np.array([3, 5, 7, 7 + C * HV, 7 + C * (HV + HK * DK), HV, DV, DK, HK, C, 2], np.int64)
    return source, capsule, destination, metadata


def test_replay_matches_a_loop_over_elements_with_heads_that_do_not_divide() -> None:
    source, capsule, destination, metadata = backings()
    out = gated_delta_net_state_replay(source, capsule, destination, metadata)
    state, c = source[3:3 + STATE].astype(np.float64), capsule.astype(np.float64)
    for t in range(2):
        for h in range(HV):
            kh = h * HK // HV
            for v in range(DV):
                for i in range(DK):
                    e = (h * DV + v) * DK + i
                    state[e] = state[e] * c[7 + t * HV + h] + c[7 + C * HV + (t * HK + kh) * DK + i] \
                        * c[7 + C * (HV + HK * DK) + (t * HV + h) * DV + v]
    np.testing.assert_allclose(out[5:5 + STATE], state, rtol=1e-12)
    np.testing.assert_array_equal(out[:5], destination[:5])
    np.testing.assert_array_equal(out[5 + STATE:], destination[5 + STATE:])


def test_entries_past_kept_count_are_never_read() -> None:
    source, capsule, destination, metadata = backings()
    poisoned = capsule.copy()
    for block, width in ((7, HV), (7 + C * HV, HK * DK), (7 + C * (HV + HK * DK), HV * DV)):
        poisoned[block + 2 * width:block + C * width] = np.nan
    np.testing.assert_array_equal(gated_delta_net_state_replay(source, poisoned, destination, metadata),
                                  gated_delta_net_state_replay(source, capsule, destination, metadata))


def _with(field: int, value: int) -> np.ndarray:
    metadata = backings()[3].copy()
    metadata[field] = value
    return metadata


BROKEN = {
    "negative field": (_with(0, -1), "metadata.source_offset: expected in [0, 2^32 - 1]"),
    "field past uint32": (_with(4, 2**32), "metadata.delta_offset: expected in [0, 2^32 - 1]"),
    "no value heads": (_with(5, 0), "metadata.num_heads_v: expected >= 1"),
    "no key heads": (_with(8, 0), "metadata.num_heads_k: expected >= 1"),
    "no capacity": (_with(9, 0), "metadata.capacity: expected >= 1"),
    "kept zero": (_with(10, 0), "metadata.kept_count: expected in [1, capacity = 4]"),
    "kept past capacity": (_with(10, C + 1), "metadata.kept_count: expected in [1, capacity = 4]"),
    "state too large": (_with(6, 2**31), "metadata: expected a state of at most 2^32 - 1 elements"),
    "source view outside": (_with(0, 12), "metadata.source_offset: expected a state view of 60 elements"),
    "destination view outside": (_with(1, 14), "metadata.destination_offset: expected a state view"),
    "decay view outside": (_with(2, ROW + 9 - C * HV + 1), "metadata.decay_offset: expected a decay block view"),
    "key view outside": (_with(3, ROW), "metadata.key_offset: expected a key block view"),
}


@pytest.mark.parametrize("metadata,message", BROKEN.values(), ids=BROKEN.keys())
def test_each_broken_descriptor_rule_is_refused(metadata: np.ndarray, message: str) -> None:
    source, capsule, destination, _ = backings()
    with pytest.raises(ValidationError, match=re.escape(message)):
        gated_delta_net_state_replay(source, capsule, destination, metadata)


def test_backings_are_rank_one_float32_and_the_destination_is_its_own_buffer() -> None:
    source, capsule, destination, metadata = backings()
    with pytest.raises(ValidationError, match="source_backing: expected dtype float32"):
        gated_delta_net_state_replay(source.astype(np.float16), capsule, destination, metadata)
    with pytest.raises(ValidationError, match="capsule_backing: expected rank 1"):
        gated_delta_net_state_replay(source, capsule.reshape(1, -1), destination, metadata)
    with pytest.raises(ValidationError, match="metadata: expected an int64 tensor of shape"):
        gated_delta_net_state_replay(source, capsule, destination, metadata.astype(np.int32))
    with pytest.raises(ValidationError, match="destination_backing: expected a buffer distinct"):
        gated_delta_net_state_replay(source, capsule, source, metadata)


def test_source_and_capsule_may_share_a_backing() -> None:
    source, capsule, destination, metadata = backings()
    shared = np.concatenate([source, capsule])
    moved = metadata.copy()
    moved[2:5] += source.size
    np.testing.assert_array_equal(gated_delta_net_state_replay(shared, shared, destination, moved),
                                  gated_delta_net_state_replay(source, capsule, destination, metadata))
