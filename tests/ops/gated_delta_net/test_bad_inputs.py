"""GatedDeltaNet's bad inputs (``fuzz.ops.gated_delta_net.bad_inputs``): each breaker breaks its rule alone, whatever
the drawn layout it bends."""

from __future__ import annotations

import pytest

from fuzz.ops.gated_delta_net.bad_inputs import BREAKERS
from fuzz.ops.gated_delta_net.strategies import GdnLayout, GdnShape, build_gdn_case
from oracles.validation import ValidationError

PER_KEY = GdnLayout(update_rule="gated", decay_per_key=True)
"""A per-key decay, valid without capture: a breaker that turns capture on must turn it off, or the call it
returns breaks two rules, and one of its edits may read the call's sizes through the contract and raise (seen in a
campaign on a GPU: the capture-count-shape breaker on such a layout)."""


@pytest.mark.parametrize("breaker", BREAKERS, ids=lambda b: b.rule)
def test_each_breaker_breaks_its_rule_alone_on_a_per_key_decay(breaker) -> None:
    shape = GdnShape(lengths=(2,), ragged=False, q_heads=1, group=1, d_k=4, d_v=4)
    shape, layout = breaker.bend(shape, PER_KEY)
    valid = build_gdn_case(shape, layout, 7)
    valid.op.validate(**valid.kwargs())  # the bent call is still valid: only the edit breaks it
    broken = breaker.edit(valid)
    with pytest.raises(ValidationError):
        broken.op.validate(**broken.kwargs())
