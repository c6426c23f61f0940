"""Hypothesis strategies for valid GatedDeltaNetStateReplay cases (docs/spec.md §9), under ``ReplayLimits``.

A replay case (``build_replay_case``) places one request's initial state and capsule row, as the oracle computes
them for a float32 GatedDeltaNet call with capture, at drawn offsets in padded backings: the views a decoder keeps
into shared buffers. The call is drawn by GatedDeltaNet's own strategies, so the two ops share one space of shapes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np
from hypothesis import strategies as st

from fuzz.model.case import Case
from fuzz.model.ops import GATED_DELTA_NET_STATE_REPLAY, Op
from fuzz.ops.gated_delta_net.strategies import GdnLimits, build_gdn_case, gdn_layouts, gdn_shapes
from oracles.gated_delta_net import gated_delta_net, replay_descriptor

FILLER = np.float32(-931.25)
"""What the backings hold outside the views (and the capsule past its captured prefix): a value no replay computes."""


@dataclass(frozen=True)
class ReplayLimits:
    """Size caps of drawn replays: those of the GatedDeltaNet call whose capsule they replay, and the padding."""

    op: ClassVar[Op] = GATED_DELTA_NET_STATE_REPLAY
    call: GdnLimits = field(default_factory=GdnLimits)
    max_pad: int = 5
    """Most filler elements before (and after) each view."""

    @classmethod
    def ci(cls) -> ReplayLimits:
        return cls(GdnLimits.ci(), max_pad=3)

    @classmethod
    def default(cls) -> ReplayLimits:
        return cls()

    @classmethod
    def campaign(cls) -> ReplayLimits:
        return cls(GdnLimits.campaign())

    @classmethod
    def big(cls) -> ReplayLimits:
        return cls(GdnLimits.big(), max_pad=64)

    def describe(self) -> str:
        """One line for logs and the report."""
        c = self.call
        return (f"GatedDeltaNetStateReplay: replays of calls with B<={c.max_batch}, T<={c.max_len}, H_q<="
                f"{c.max_heads}, H_v/H_q<={c.max_group}, d {c.min_d}-{c.max_d}; pads<={self.max_pad}")


def build_replay_case(gdn: Case, request: int, kept: int, *, pads: tuple[int, int, int] = (0, 0, 0),
                      shared: bool = False) -> Case:
    """The replay of ``kept`` entries of ``request``'s capsule row of the GatedDeltaNet case ``gdn``.

    The source backing holds ``pads[0]`` filler floats, then every request's initial state; the capsule backing
    ``pads[1]`` fillers, then the oracle's capsule as float32 (its unspecified entries filler too); the destination
    ``pads[2]`` fillers, a state's room, then ``pads[2]`` more. ``shared`` puts the source and the capsule in one
    backing, which both read.
    """
    dims = gdn.dims()
    _, _, capsule = gated_delta_net(**gdn.kwargs())
    initial = gdn.inputs["initial_state"]
    state = initial[0].size
    filler = FILLER
    source = np.concatenate([np.full(pads[0], filler, np.float32), initial.astype(np.float32).ravel()])
    unspecified = np.where(np.isnan(capsule), filler, capsule)  # entries past the captured prefix: garbage
    rows = np.concatenate([np.full(pads[1], filler, np.float32), unspecified.astype(np.float32).ravel()])
    capsule_offset = pads[1] + (source.size if shared else 0)
    if shared:
        source = rows = np.concatenate([source, rows])
    destination = np.full(2 * pads[2] + state, filler, np.float32)
    metadata = replay_descriptor(dims, request, kept, source_offset=pads[0] + request * state,
                                 destination_offset=pads[2], capsule_offset=capsule_offset)
    return Case(inputs={"source_backing": source, "capsule_backing": rows.copy() if shared else rows,
                        "destination_backing": destination, "metadata": metadata},
                attrs={}, op=GATED_DELTA_NET_STATE_REPLAY,
                notes={"request": request, "kept": kept, "captured": dims.captured[request], "shared": shared})


DEFAULT_REPLAYS = ReplayLimits()


@st.composite
def replay_cases(draw: st.DrawFn, limits: ReplayLimits = DEFAULT_REPLAYS) -> Case:
    """A valid replay: a float32 GatedDeltaNet call with capture, one of its requests that captured an entry at
    least, a kept count up to what it captured, and padded backings."""
    shape = draw(gdn_shapes(limits.call))
    layout = draw(gdn_layouts(shape, capture=True, dtypes=("float32",)))
    layout = replace(layout, has_initial_state=True)
    gdn = build_gdn_case(shape, layout, draw(st.integers(0, 2**32 - 1)))
    captured = gdn.dims().captured
    requests = [b for b, n in enumerate(captured) if n > 0]
    if not requests:
        gdn = gdn.with_inputs(capture_count=np.full(len(captured), layout.capacity, np.int32))
        requests = [b for b, n in enumerate(gdn.dims().captured) if n > 0]
    request = draw(st.sampled_from(requests))
    kept = draw(st.integers(1, gdn.dims().captured[request]))
    pads = (draw(st.integers(0, limits.max_pad)), draw(st.integers(0, limits.max_pad)),
            draw(st.integers(0, limits.max_pad)))
    return build_replay_case(gdn, request, kept, pads=pads, shared=draw(st.booleans()))
