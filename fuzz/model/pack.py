"""Packed cases: several cases of one shape side by side in the batch axis of one call.

A packed case is an ordinary valid case whose ``notes["pack"]`` says it is ``n`` cases of batch ``B / n``, slice
``i`` being batch entries ``i * B / n`` to ``(i + 1) * B / n``. Every input has the batch axis first, except the
windowed state (the window axis first, the batch second) and the inputs one call shares among its batch entries
(``Op.shared_inputs``: the convolution's weight and bias). ``slice_of(case, i)`` is slice ``i`` as its own case:
the same attributes, binding and poison, the inputs of its batch entries, and no pack note.
"""

from __future__ import annotations

import numpy as np

from fuzz.model.case import Case

PACK = "pack"
"""The note naming how many cases a packed case holds."""


def slices(case: Case) -> int:
    """How many cases ``case`` packs (1: it is a case of its own)."""
    return int(case.notes.get(PACK, 1))


def batch_axis(case: Case, name: str) -> int | None:
    """The batch axis of input ``name`` of ``case``; None for an input shared by every batch entry."""
    if name in case.op.shared_inputs:
        return None
    return 1 if name == case.op.state_input and case.state_window else 0


def slice_of(case: Case, index: int) -> Case:
    """Slice ``index`` of a packed case, as its own case (its arrays copied, so a backend may keep them)."""
    count = slices(case)
    if not 0 <= index < count:
        raise IndexError(f"slice_of: slice {index} of a case packing {count}")
    entries = case.inputs[case.op.lead_input].shape[0] // count
    inputs = {}
    for name, array in case.inputs.items():
        axis = batch_axis(case, name)
        inputs[name] = array if axis is None else np.take(array, range(index * entries, (index + 1) * entries), axis)
    notes = {key: value for key, value in case.notes.items() if key != PACK}
    return case.with_(inputs=inputs, notes=notes)
