"""GatedDeltaNet's coverage buckets: every bucket a case falls in is one of its axis's, and drawn cases reach the
capture plan's edges (below, at and above both the tokens and the capacity)."""

from __future__ import annotations

from collections import defaultdict

from support.sampling import sample

from fuzz.engine.op_testing import for_op
from fuzz.model.ops import GATED_DELTA_NET
from fuzz.ops.gated_delta_net.coverage import GDN_AXES, SIDES, gdn_buckets
from fuzz.ops.gated_delta_net.strategies import GdnLayout, GdnLimits, GdnShape, build_gdn_case

TESTING = for_op(GATED_DELTA_NET)


def test_drawn_cases_fall_in_their_axes_buckets_and_reach_the_capture_edges() -> None:
    limits = GdnLimits.campaign()
    reached: dict[str, set[str]] = defaultdict(set)
    for case in sample(TESTING.cases(limits), 300) + sample(TESTING.invalid_cases(limits), 300):
        for axis, bucket in gdn_buckets(case).items():
            assert bucket in GDN_AXES[axis], (axis, bucket)
            reached[axis].add(bucket)
    assert reached["gdn capture vs T"] == set(SIDES) and reached["gdn capture vs C"] == set(SIDES)
    for axis in ("gdn rule", "gdn packing", "gdn active", "gdn decay", "gdn gate activation"):
        assert reached[axis] == set(GDN_AXES[axis]), (axis, set(GDN_AXES[axis]) - reached[axis])


def test_a_count_is_placed_against_the_first_requests_tokens_and_the_capacity() -> None:
    shape = GdnShape(lengths=(3, 3), ragged=False, q_heads=1, group=2, d_k=4, d_v=4)
    case = build_gdn_case(shape, GdnLayout(capacity=4, capture_counts=(3, 9)), seed=1)
    found = gdn_buckets(case)
    assert (found["gdn capture vs T"], found["gdn capture vs C"]) == ("at", "below")
    assert (found["gdn H_v / H_q"], found["gdn capacity"], found["gdn active"]) == ("2", "4", "absent")
