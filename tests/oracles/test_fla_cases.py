"""flash-linear-attention's forward test grids (``support.fla_cases``, which names the upstream files) through our
oracle: each ported row, mapped to LinearAttention's inputs, agrees with an independent reference written in FLA's
conventions (``support.fla_reference``) on output and final state, and on every window slot where the row has one.
Both sides are float64 on the same inputs, so they must agree to the order of operations."""

from __future__ import annotations

import pytest
from support.fla_cases import CASES, GRIDS, OUTSIDE_CONTRACT, WINDOWED, FlaCase
from support.upstream_reference import check_against_reference, tight

from oracles import linear_attention


def test_every_upstream_grid_is_ported_or_listed() -> None:
    """21 forward grids of five FLA ops (110 rows: 46 of the gated delta rule, 6 of the delta rule, 19 of simple GLA,
    20 of GLA, 19 of linear attention), 7 windowed re-runs, and what is left out with its reason."""
    assert len(GRIDS) == 21 and sum(len(grid) for grid in GRIDS.values()) == 110
    assert {c.op for c in CASES} == {"gated_delta_rule", "delta_rule", "simple_gla", "gla", "linear_attn"}
    assert len({c.name for c in CASES}) == len(CASES) == 117
    assert sum(c.positions < c.state_window for c in WINDOWED) == 1
    assert not {o.test for o in OUTSIDE_CONTRACT} & set(GRIDS) and all(o.reason for o in OUTSIDE_CONTRACT)


@pytest.mark.parametrize("fla", CASES, ids=[c.name for c in CASES])
def test_oracle_agrees_with_the_fla_reference(fla: FlaCase) -> None:
    drawn = fla.draw()
    case = fla.op_case(drawn)
    assert case.dims().kv_heads == fla.sizes[3]
    output, present = linear_attention(**case.kwargs())
    check_against_reference(fla, drawn, output, present, tight)

