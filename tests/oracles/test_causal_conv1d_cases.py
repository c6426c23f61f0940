"""causal-conv1d's forward test grids (``support.causal_conv1d_cases``, which names the upstream files) through our
oracle: each ported row, mapped to CausalConvWithState's inputs, agrees with an independent reference written in
causal-conv1d's conventions (``support.causal_conv1d_reference``): the output to float64's order of operations, the
state (a copy of input positions) exactly, and every window slot where the row has one."""

from __future__ import annotations

import numpy as np
import pytest
from support.causal_conv1d_cases import CASES, FN_CASES, OUTSIDE_CONTRACT, UPDATE_CASES, WINDOWED, Conv1dCase
from support.upstream_reference import check_against_reference, tight

from oracles.causal_conv import causal_conv_with_state


def test_every_upstream_grid_is_ported_or_listed() -> None:
    """The update's grid whole (432 rows without bfloat16), the whole-sequence function's flags at four sizes
    (270 rows), 5 windowed re-runs, and what is left out with its reason."""
    assert (len(UPDATE_CASES), len(FN_CASES), len(WINDOWED)) == (432, 270, 5)
    assert len({c.name for c in CASES}) == len(CASES)
    assert sum(c.positions < c.state_window for c in WINDOWED) == 2
    assert all(o.reason for o in OUTSIDE_CONTRACT)


def exact_state(reference: np.ndarray, actual: np.ndarray, what: str) -> None:
    """Outputs to float64's order of operations; a state is copied input, so it must be equal."""
    if what == "output":
        tight(reference, actual, what)
    else:
        np.testing.assert_array_equal(actual, reference, err_msg=what)


@pytest.mark.parametrize("conv", CASES, ids=[c.name for c in CASES])
def test_oracle_agrees_with_the_causal_conv1d_reference(conv: Conv1dCase) -> None:
    drawn = conv.draw()
    case = conv.op_case(drawn)
    output, present = causal_conv_with_state(**case.kwargs())
    check_against_reference(conv, drawn, output, present, exact_state)
