"""A decoder's chain of GatedDeltaNet calls in the capsule design: verify, accept some drafted tokens, resume by
replay, verify again.

A chain is stored as one case, so that it shrinks and is saved like any other: a uniform rank-3 call whose every
request's tokens are cut into consecutive calls (``notes["call_lens"]``), with the tokens each request accepts
after each call (``notes["accepted"]``: 0 rejects every drafted token, the call's captured count accepts them
all). Call ``i`` takes the case's capture plan and attributes, and its initial state is the state resumed after
call ``i - 1`` (the case's own for the first).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from hypothesis import strategies as st

from fuzz.model.case import Case
from fuzz.ops.gated_delta_net.strategies import DEFAULT_LIMITS, GdnLimits, build_gdn_case, gdn_layouts, gdn_shapes

SEQUENCE_INPUTS = ("query", "key", "value", "decay", "beta")

MAX_CALLS = 4


def chain_call(case: Case, index: int, initial_state: np.ndarray) -> Case:
    """Call ``index`` of the chain ``case``: each request's tokens of that call, from ``initial_state``."""
    lens = [int(n) for n in case.notes["call_lens"]]
    d = case.dims()
    start, length = sum(lens[:index]), lens[index]
    tokens = np.concatenate([np.arange(b * d.lengths[0] + start, b * d.lengths[0] + start + length)
                             for b in range(d.batch)])
    inputs: dict[str, Any] = {n: (x[tokens] if n in SEQUENCE_INPUTS else x) for n, x in case.inputs.items()}
    inputs["initial_state"] = initial_state.astype(np.float32)
    return Case(inputs=inputs, attrs=dict(case.attrs), op=case.op,
                notes={"call": index, "accepted": case.notes["accepted"][index]})


def chain_accepted(case: Case) -> list[list[int]]:
    """The tokens each request accepts after each call."""
    return [[int(a) for a in call] for call in case.notes["accepted"]]


@st.composite
def decoder_chain_cases(draw: st.DrawFn, limits: GdnLimits = DEFAULT_LIMITS) -> Case:
    """A chain of 2 to ``MAX_CALLS`` float32 calls with capture, and what each request accepts after each: none,
    some or every captured token, drawn per call and request."""
    shape = draw(gdn_shapes(replace(limits, max_len=max(limits.max_len, 2))))
    calls = draw(st.integers(2, MAX_CALLS))
    lens = draw(st.lists(st.integers(1, max(1, limits.max_len // 2)), min_size=calls, max_size=calls))
    shape = replace(shape, ragged=False, rank4=False, lengths=(sum(lens),) * len(shape.lengths))
    layout = replace(draw(gdn_layouts(shape, capture=True, dtypes=("float32",))), has_initial_state=True)
    case = build_gdn_case(shape, layout, draw(st.integers(0, 2**32 - 1)))
    counts = [int(c) for c in case.inputs["capture_count"]]
    accepted = [[draw(st.integers(0, max(0, min(count, layout.capacity, n)))) for count in counts] for n in lens]
    return replace(case, notes={**case.notes, "call_lens": lens, "accepted": accepted})
