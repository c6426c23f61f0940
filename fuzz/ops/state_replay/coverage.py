"""GatedDeltaNetStateReplay's coverage buckets: how much it replays, how its views sit in their backings, and the
heads and sizes of the state it rebuilds. The axes are named ``replay <axis>``."""

from __future__ import annotations

from fuzz.campaign.bucketing import OpCoverage, in_range
from fuzz.model.case import Case
from fuzz.ops.gated_delta_net.coverage import GROUPS, HEAD_SIZES
from fuzz.ops.state_replay.bad_inputs import REPLAY_RULES
from oracles.gated_delta_net import ReplayDims
from oracles.gated_delta_net.validation import MAX_CAPACITY
from oracles.validation import ValidationError

REPLAY_AXES: dict[str, tuple[str, ...]] = {
    "replay kept": ("one", "some", "every captured entry"),
    "replay capacity": tuple(str(c) for c in range(1, MAX_CAPACITY + 1)),
    "replay backings": ("separate", "source and capsule in one"),
    "replay offsets": ("none", "some", "every view"),
    "replay H_v / H_k": tuple(in_range(lo, GROUPS) for lo, _ in GROUPS),
    "replay d_k": tuple(in_range(lo, HEAD_SIZES) for lo, _ in HEAD_SIZES),
    "replay broken rule": REPLAY_RULES,
}
"""Every replay axis and its buckets (``replay broken rule``: the invalid replays of ``error-parity``)."""


def _kept(d: ReplayDims, captured: int) -> str:
    if d.kept_count == captured:
        return "every captured entry"
    return "one" if d.kept_count == 1 else "some"


def replay_buckets(case: Case) -> dict[str, str]:
    """Axis -> bucket of one replay case (an invalid one: its broken rule)."""
    try:
        d: ReplayDims = case.dims()
    except ValidationError:
        return {"replay broken rule": case.notes.get("broken_rule", "unknown")}
    offsets = [d.source_offset, d.destination_offset, d.decay_offset]
    moved = sum(o > 0 for o in offsets)
    found = {
        "replay capacity": str(d.capacity),
        "replay backings": "source and capsule in one" if case.notes.get("shared") else "separate",
        "replay offsets": "none" if moved == 0 else ("every view" if moved == len(offsets) else "some"),
        "replay H_v / H_k": in_range(d.v_heads // d.k_heads, GROUPS), "replay d_k": in_range(d.d_k, HEAD_SIZES),
    }
    if "captured" in case.notes:
        found["replay kept"] = _kept(d, int(case.notes["captured"]))
    return found


COVERAGE = OpCoverage(axes=REPLAY_AXES, buckets=lambda case, chunked: replay_buckets(case))
"""The replay's axes and the buckets of its cases."""
