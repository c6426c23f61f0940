"""The replay's strategies, bad descriptors and coverage: valid replays of a drawn call's capsule within their
backings, every rule broken alone, and the buckets of how much is kept and where the views sit."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from support.sampling import broken_rules, sample

from fuzz.engine.op_testing import for_op
from fuzz.model.ops import GATED_DELTA_NET_STATE_REPLAY
from fuzz.ops.state_replay.bad_inputs import REPLAY_RULES, invalid_replays
from fuzz.ops.state_replay.coverage import REPLAY_AXES, replay_buckets
from fuzz.ops.state_replay.strategies import FILLER, ReplayLimits
from fuzz.ops.state_replay.tolerance import destination_view

TESTING = for_op(GATED_DELTA_NET_STATE_REPLAY)
LIMITS = ReplayLimits.ci()


def test_a_replay_writes_its_view_alone_and_keeps_at_most_what_was_captured() -> None:
    for case in sample(TESTING.cases(LIMITS), 60):
        d = case.dims()
        assert 1 <= d.kept_count <= case.notes["captured"] <= d.capacity
        out = case.op.oracle(**case.kwargs())[0]
        view = destination_view(d, out.size)
        assert np.all(out[~view] == FILLER) and not np.any(out[view] == FILLER)


def test_every_rule_is_broken_alone_and_refused() -> None:
    broken = broken_rules(TESTING.invalid_cases(LIMITS), 300)
    assert broken == set(REPLAY_RULES), set(REPLAY_RULES) - broken
    (valid,) = sample(TESTING.cases(LIMITS), 1)
    assert set(invalid_replays(valid)) < set(REPLAY_RULES)


def test_drawn_replays_reach_every_bucket_of_kept_backings_and_offsets() -> None:
    reached: dict[str, set[str]] = defaultdict(set)
    for case in sample(TESTING.cases(ReplayLimits.campaign()), 300):
        for axis, bucket in replay_buckets(case).items():
            assert bucket in REPLAY_AXES[axis], (axis, bucket)
            reached[axis].add(bucket)
    for axis in ("replay kept", "replay backings", "replay offsets"):
        assert reached[axis] == set(REPLAY_AXES[axis]), (axis, set(REPLAY_AXES[axis]) - reached[axis])
