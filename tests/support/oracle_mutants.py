"""The float64 oracle with one deliberate fault, as a backend: the mutants that prove the window properties have
teeth (``tests/engine/test_mutants.py`` for LinearAttention, ``test_conv_mutants.py`` for CausalConvWithState).

The faults here touch only the window's slots and the seed, which both ops share, so one class serves both.
"""

from __future__ import annotations

import numpy as np

import oracles
from fuzz.backends import Backend, Capabilities, Rejected, create
from fuzz.model.case import Case
from fuzz.model.ops import LINEAR_ATTENTION
from fuzz.model.pack import batch_axis


class OracleMutant(Backend):
    """The oracle with one deliberate fault; subclasses override ``mutate``. It claims to run ``ops``."""

    name = "mutant"
    aliasing = False
    ops: tuple[str, ...] = (LINEAR_ATTENTION.name,)

    def __init__(self) -> None:
        self.oracle = create("oracle")

    def capabilities(self) -> Capabilities:
        return Capabilities(dtypes=("float32", "float16"), window="native", aliasing=self.aliasing,
                            device=f"host CPU (a deliberately wrong {', '.join(self.ops)} oracle)", ops=self.ops)

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        try:
            case.dims()
        except oracles.ValidationError as err:
            raise Rejected(self.name, str(err)) from err
        return self.mutate(case)

    def mutate(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        return self.oracle.run(case)


class KeepsLeadingSlots(OracleMutant):
    """With ``T < W`` the leading slots are left unwritten: they keep the caller's ``past_state[j]``."""

    def mutate(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        output, present = self.oracle.run(case)
        past = case.inputs.get("past_state")
        lead = case.state_window - case.seq_len
        if past is not None and lead > 0:
            present[:lead] = past[:lead]
        return output, present


class SeedsFromFirstSlot(OracleMutant):
    """Seeds the call from ``past_state[0]`` instead of ``past_state[W-1]``."""

    def mutate(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        past = case.inputs.get("past_state")
        if past is not None and case.state_window > 1:
            seeded = past.copy()
            seeded[-1] = past[0]
            case = case.with_inputs(past_state=seeded)
        return self.oracle.run(case)


class SwapsBatchEntries(OracleMutant):
    """In a call of two batch entries or more, returns entry 0's results as entry 1's and the other way round
    (a batch index gone wrong): every entry alone is right."""

    name = "swaps-batch-entries"

    def mutate(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        output, present = self.oracle.run(case)
        if output.shape[0] < 2:
            return output, present
        state_axis = batch_axis(case, case.op.state_input) or 0
        for result, axis in ((output, 0), (present, state_axis)):
            before = (slice(None),) * axis
            result[(*before, [0, 1])] = result[(*before, [1, 0])]
        return output, present
