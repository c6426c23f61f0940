"""Invalid GatedDeltaNetStateReplay calls: each one rule of docs/spec.md §9 away from a valid replay.

``invalid_replays(case)`` gives every variant of one valid replay at once (``replay-refuses-invalid`` checks them
all); ``invalid_replay_cases`` draws one of them (``error-parity``, with ``notes["broken_rule"]``), confirmed
invalid by the oracle's validation. The rules: each view one element past its backing, ``kept_count`` 0 and one
past the capacity, a field outside the uint32 range, a zero head count, a destination that is one of its sources,
and the backings' and descriptor's types and shapes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from hypothesis import strategies as st

from fuzz.model.case import Case
from fuzz.ops.state_replay.strategies import DEFAULT_REPLAYS, ReplayLimits, replay_cases
from oracles.gated_delta_net.capsule import DESCRIPTOR_FIELDS
from oracles.validation import ValidationError

UINT32_LIMIT = 2**32


def _fields(case: Case) -> dict[str, int]:
    return dict(zip(DESCRIPTOR_FIELDS, (int(x) for x in case.inputs["metadata"]), strict=True))


def _with_fields(case: Case, **fields: int) -> Case:
    changed = case.inputs["metadata"].copy()
    for field, value in fields.items():
        changed[DESCRIPTOR_FIELDS.index(field)] = value
    return case.with_inputs(metadata=changed)


def invalid_replays(case: Case) -> dict[str, Case]:
    """Replays one descriptor rule away from the valid ``case``, by rule: every view one element past its backing,
    ``kept_count`` 0 and one past the capacity."""
    f = _fields(case)
    state = f["num_heads_v"] * f["head_size_v"] * f["head_size_k"]
    c = f["capacity"]
    extents = {"source_offset": ("source_backing", state), "destination_offset": ("destination_backing", state),
               "decay_offset": ("capsule_backing", c * f["num_heads_v"]),
               "key_offset": ("capsule_backing", c * f["num_heads_k"] * f["head_size_k"]),
               "delta_offset": ("capsule_backing", c * f["num_heads_v"] * f["head_size_v"])}
    variants = {f"{field} past its backing": _with_fields(case, **{field: case.inputs[backing].size - extent + 1})
                for field, (backing, extent) in extents.items()}
    variants["kept_count 0"] = _with_fields(case, kept_count=0)
    variants["kept_count past the capacity"] = _with_fields(case, kept_count=c + 1)
    return variants


OTHER_RULES: dict[str, Callable[[Case], Case]] = {
    "field past uint32": lambda case: _with_fields(case, source_offset=UINT32_LIMIT),
    "num_heads_v 0": lambda case: _with_fields(case, num_heads_v=0),
    "destination is the source": lambda case: case.with_inputs(destination_backing=case.inputs["source_backing"]),
    "float16 capsule": lambda case: case.with_inputs(capsule_backing=case.inputs["capsule_backing"].astype(np.float16)),
    "metadata int32": lambda case: case.with_inputs(metadata=case.inputs["metadata"].astype(np.int32)),
    "metadata of 10 fields": lambda case: case.with_inputs(metadata=case.inputs["metadata"][:10].copy()),
    "two-dimensional backing": lambda case: case.with_inputs(source_backing=case.inputs["source_backing"][None]),
}
"""The rules of the backings and the descriptor's type, beside ``invalid_replays``'."""

REPLAY_RULES = (*(f"{field} past its backing" for field in ("source_offset", "destination_offset", "decay_offset",
                                                            "key_offset", "delta_offset")),
                "kept_count 0", "kept_count past the capacity", *OTHER_RULES)
"""The rule names, as they appear in ``notes["broken_rule"]``."""


@st.composite
def invalid_replay_cases(draw: st.DrawFn, limits: ReplayLimits = DEFAULT_REPLAYS) -> Case:
    """A replay that breaks exactly one rule (``notes["broken_rule"]``), confirmed invalid."""
    valid = draw(replay_cases(limits))
    rule = draw(st.sampled_from(REPLAY_RULES))
    case = OTHER_RULES[rule](valid) if rule in OTHER_RULES else invalid_replays(valid)[rule]
    try:
        case.op.validate(**case.kwargs())
    except ValidationError:
        return Case(inputs=case.inputs, attrs=case.attrs, op=case.op, notes={**valid.notes, "broken_rule": rule})
    raise AssertionError(f"{rule}: the edited replay is still valid: {case.summary()}")
