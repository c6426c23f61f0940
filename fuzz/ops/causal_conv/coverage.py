"""CausalConvWithState's coverage buckets: every axis of its contract, and where its window meets its state.

The axes are named ``conv <axis>`` so that they sit beside LinearAttention's in one table
(``fuzz.campaign.coverage``); ``conv_buckets(case)`` names the buckets one conv case falls in.
"""

from __future__ import annotations

from fuzz.campaign.bucketing import OPEN, STATE_BINDINGS, OpCoverage, in_range, state_binding
from fuzz.model.case import POISON_KINDS, Case
from fuzz.ops.causal_conv.bad_inputs import CONV_RULES
from fuzz.ops.linear_attention.strategies import MAGNITUDES
from oracles.causal_conv import ACTIVATIONS, MAX_NDIM, ConvDims
from oracles.validation import MAX_STATE_WINDOW, ValidationError

KERNELS = ((1, 1), (2, 2), (3, 3), (4, 4), (5, OPEN))
DILATIONS = ((1, 1), (2, 2), (3, OPEN))
STATE_LENGTHS = ((0, 0), (1, 3), (4, 8), (9, OPEN))
CHANNELS = ((1, 1), (2, 4), (5, 16), (17, OPEN))
SEQ_LENS = ((1, 1), (2, 8), (9, 16), (17, 32), (33, 64), (65, 256), (257, OPEN))


def _layout(d: ConvDims) -> str:
    if not d.channels_last:
        return "channels first"
    return "channels last, one axis" if len(d.channel_shape) == 1 else "channels last, several axes"


def _t_vs_w(d: ConvDims) -> str:
    if d.state_window == 0:
        return "W = 0"
    return "T < W" if d.seq_len < d.state_window else ("T = W" if d.seq_len == d.state_window else "T > W")


def _t_vs_l(d: ConvDims) -> str:
    """Whether a call is shorter than its state (the state then keeps positions of the past state)."""
    if d.state_length == 0:
        return "L = 0"
    return "T < L" if d.seq_len < d.state_length else ("T = L" if d.seq_len == d.state_length else "T > L")


CONV_AXES: dict[str, tuple[str, ...]] = {
    "conv ndim": tuple(str(n) for n in range(1, MAX_NDIM + 1)),
    "conv layout": ("channels first", "channels last, one axis", "channels last, several axes"),
    "conv kernel": tuple(in_range(lo, KERNELS) for lo, _ in KERNELS),
    "conv dilation": tuple(in_range(lo, DILATIONS) for lo, _ in DILATIONS),
    "conv state length": tuple(in_range(lo, STATE_LENGTHS) for lo, _ in STATE_LENGTHS),
    "conv channels": tuple(in_range(lo, CHANNELS) for lo, _ in CHANNELS),
    "conv T": tuple(in_range(lo, SEQ_LENS) for lo, _ in SEQ_LENS),
    "conv B": ("1", "2", "3", "4"),
    "conv W": tuple(str(w) for w in range(MAX_STATE_WINDOW + 1)),
    "conv T vs W": ("W = 0", "T < W", "T = W", "T > W"),
    "conv T vs L": ("L = 0", "T < L", "T = L", "T > L"),
    "conv activation": ACTIVATIONS,
    "conv bias": ("bias", "no bias"),
    "conv dtype": ("float32", "float16"),
    "conv state": STATE_BINDINGS,
    "conv poison": POISON_KINDS,
    "conv values": MAGNITUDES,
    "conv accepted": ("none", "some", "all"),
    "conv broken rule": CONV_RULES,
    "conv W x T vs W": tuple(f"W {w}, {tw}" for w in range(1, MAX_STATE_WINDOW + 1)
                             for tw in ("T < W", "T = W", "T > W") if not (w == 1 and tw == "T < W")),
}
"""Every conv axis and its buckets (``conv broken rule``: the invalid inputs of ``error-parity``)."""


def conv_buckets(case: Case) -> dict[str, str]:
    """Axis -> bucket of one CausalConvWithState case (an invalid case: its broken rule and dtype)."""
    try:
        d: ConvDims = case.dims()
    except ValidationError:
        return {"conv broken rule": case.notes.get("broken_rule", "unknown"), "conv dtype": str(case.dtype)}
    found = {
        "conv ndim": str(d.ndim), "conv layout": _layout(d), "conv kernel": in_range(d.kernel[-1], KERNELS),
        "conv dilation": in_range(d.dilation, DILATIONS), "conv state length": in_range(d.state_length, STATE_LENGTHS),
        "conv channels": in_range(d.channels, CHANNELS), "conv T": in_range(d.seq_len, SEQ_LENS),
        "conv B": str(d.batch), "conv W": str(d.state_window), "conv T vs W": _t_vs_w(d), "conv T vs L": _t_vs_l(d),
        "conv activation": d.activation, "conv bias": "bias" if d.has_bias else "no bias", "conv dtype": str(d.dtype),
        "conv state": state_binding(case),
    }
    if case.poison:
        found["conv poison"] = case.poison
    if "magnitude" in case.notes:
        found["conv values"] = case.notes["magnitude"]
    if "accepted" in case.notes:
        accepted, drafted = int(case.notes["accepted"]), int(case.notes["draft_len"])
        found["conv accepted"] = "none" if accepted == 0 else ("all" if accepted == drafted else "some")
    if d.state_window:
        found["conv W x T vs W"] = f"W {d.state_window}, {_t_vs_w(d)}"
    return found


COVERAGE = OpCoverage(axes=CONV_AXES, buckets=lambda case, chunked: conv_buckets(case))
"""CausalConvWithState's axes and the buckets of its cases (no chunked prefill: ``chunked`` changes nothing)."""
