"""GatedDeltaNet's coverage buckets: every axis of its contract, and where its capture plan meets its requests.

The axes are named ``gdn <axis>`` so that they sit beside the other ops' in one table (``fuzz.campaign.coverage``).
``capture vs T`` and ``capture vs C`` place the first request's ``capture_count`` below, at or above its tokens and
the capacity: the clamp ``min(count, C, T)`` has an edge at each.
"""

from __future__ import annotations

from fuzz.campaign.bucketing import OPEN, OpCoverage, in_range
from fuzz.model.case import Case
from fuzz.ops.gated_delta_net.bad_inputs import GDN_RULES
from oracles.gated_delta_net import GdnDims
from oracles.gated_delta_net.validation import BETA_ACTIVATIONS, GATE_ACTIVATIONS, MAX_CAPACITY
from oracles.validation import UPDATE_RULES, ValidationError

SEQ_LENS = ((1, 1), (2, 4), (5, 8), (9, 16), (17, OPEN))
HEAD_SIZES = ((1, 1), (2, 8), (9, 32), (33, 64), (65, OPEN))
GROUPS = ((1, 1), (2, 2), (3, 3), (4, OPEN))
SIDES = ("below", "at", "above")


def _side(value: int, edge: int) -> str:
    return SIDES[(value > edge) - (value < edge) + 1]


def _packing(d: GdnDims, ragged: bool) -> str:
    if ragged:
        return "ragged (cu_seqlens)"
    return "uniform, (B, S) axes" if d.rank == (3 if d.packed else 4) else "uniform, one token axis"


GDN_AXES: dict[str, tuple[str, ...]] = {
    "gdn rule": UPDATE_RULES,
    "gdn dtype": ("float32", "float16"),
    "gdn packing": ("uniform, one token axis", "uniform, (B, S) axes", "ragged (cu_seqlens)"),
    "gdn qkv": ("separate", "packed"),
    "gdn B": ("1", "2", "3", "4"),
    "gdn T": tuple(in_range(lo, SEQ_LENS) for lo, _ in SEQ_LENS),
    "gdn capacity": tuple(str(c) for c in range(MAX_CAPACITY + 1)),
    "gdn capture vs T": SIDES,
    "gdn capture vs C": SIDES,
    "gdn active": ("absent", "0", "1"),
    "gdn gate activation": GATE_ACTIVATIONS,
    "gdn beta activation": BETA_ACTIVATIONS,
    "gdn qk_l2_norm": ("0", "1"),
    "gdn decay": ("none", "per head", "per key"),
    "gdn H_v / H_q": tuple(in_range(lo, GROUPS) for lo, _ in GROUPS),
    "gdn d_k": tuple(in_range(lo, HEAD_SIZES) for lo, _ in HEAD_SIZES),
    "gdn initial state": ("absent", "present"),
    "gdn broken rule": GDN_RULES,
}
"""Every GatedDeltaNet axis and its buckets (``gdn broken rule``: the invalid inputs of ``error-parity``)."""


def gdn_buckets(case: Case) -> dict[str, str]:
    """Axis -> bucket of one GatedDeltaNet case (an invalid case: its broken rule and dtype)."""
    try:
        d: GdnDims = case.dims()
    except ValidationError:
        return {"gdn broken rule": case.notes.get("broken_rule", "unknown"), "gdn dtype": str(case.dtype)}
    active = case.inputs.get("state_update_active")
    found = {
        "gdn rule": d.update_rule, "gdn dtype": str(d.dtype), "gdn packing": _packing(d, "cu_seqlens" in case.inputs),
        "gdn qkv": "packed" if d.packed else "separate", "gdn B": str(min(d.batch, 4)),
        "gdn T": in_range(max(d.lengths), SEQ_LENS), "gdn capacity": str(d.capacity),
        "gdn active": "absent" if active is None else str(int(active[0] != 0)),
        "gdn gate activation": d.gate_activation, "gdn beta activation": d.beta_activation,
        "gdn qk_l2_norm": str(int(d.qk_l2_norm)),
        "gdn decay": "none" if d.decay_per_key is None else ("per key" if d.decay_per_key else "per head"),
        "gdn H_v / H_q": in_range(d.group, GROUPS), "gdn d_k": in_range(d.d_k, HEAD_SIZES),
        "gdn initial state": "present" if d.has_initial_state else "absent",
    }
    if d.capacity:
        asked = int(case.inputs["capture_count"][0])
        found["gdn capture vs T"] = _side(asked, d.lengths[0])
        found["gdn capture vs C"] = _side(asked, d.capacity)
    return found


COVERAGE = OpCoverage(axes=GDN_AXES, buckets=lambda case, chunked: gdn_buckets(case))
"""GatedDeltaNet's axes and the buckets of its cases (no chunked prefill: ``chunked`` changes nothing)."""
