"""Each op's report part (``fuzz/ops/<op>/export.py``) against the op itself: its axis names and its shapes in
words have one entry per axis of the outputs the oracle returns, and an op without a report says why."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz.engine.op_testing import for_op
from fuzz.export import op_export
from fuzz.model.case import Case
from fuzz.ops import registry

EXPORTED = ("LinearAttention", "CausalConvWithState", "GatedDeltaNet")


def _outputs(case: Case) -> dict[str, int]:
    """The rank of each output the oracle returns for ``case``."""
    results = case.op.oracle(**case.kwargs())
    return {name: result.ndim for name, result in zip(case.op.outputs, results, strict=True)}


@pytest.mark.parametrize("name", EXPORTED)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_axis_names_and_symbolic_shapes_have_the_outputs_ranks(name: str, data: st.DataObject) -> None:
    testing = for_op(name)
    case = data.draw(testing.cases(testing.preset("ci")))
    part = op_export.for_op(case.op)
    ranks = _outputs(case)
    assert {n: len(s) for n, s in part.symbolic_shapes(case).items()} == ranks, case.summary()
    axes = part.axis_names(case.dims())
    assert {n: len(a) for n, a in axes.items()} == {n: ranks[n] for n in axes}, case.summary()
    assert set(part.unspecified) <= set(case.op.outputs)
    assert set(part.layouts(case.dims())) <= set(case.op.input_names)


def test_every_registered_op_has_a_report_or_a_reason() -> None:
    for op in registry.ops():
        if op.name in EXPORTED:
            assert isinstance(op_export.for_op(op), op_export.OpExport)
            continue
        with pytest.raises(op_export.NotExported, match="no kernel in any released ONNX Runtime"):
            op_export.for_op(op)
