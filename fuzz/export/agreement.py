"""Which other implementations do what the contract asks on an exported case (ISSUE.md's last section).

Each backend at hand, the one at fault excepted, runs the case once and gets one verdict in words:
it agrees with the float64 oracle under the suite's tolerance model (or disagrees, at which
element), refuses the case (with its message), passes a ``T = 0`` state through, cannot run the case
here, or crashes. For an aliasing finding the verdict is whether one buffer for past and present state gives
the bits of separate buffers, on each backend that binds state.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np

from fuzz.backends import Backend, BackendError, Crashed, Rejected, TimedOut, Unsupported
from fuzz.engine.compare import MismatchError, assert_agrees_with_oracle
from fuzz.export import op_export
from fuzz.export.plan import Expectation
from fuzz.model.case import Case

REFERENCE = "oracle"
"""The float64 NumPy oracle: the reference itself on a valid case."""


@dataclass(frozen=True)
class Opinion:
    """One implementation's answer to the case, and whether it is what the contract asks."""

    backend: str
    device: str
    verdict: str
    as_contract_asks: bool | None
    """None when it could not run the case here."""


def _refusal(err: BackendError) -> str:
    return err.message.strip().splitlines()[0] if err.message.strip() else "(no message)"


def _on_values(
    case: Case, expectation: Expectation, result: tuple[np.ndarray, ...], expected: dict[str, np.ndarray]
) -> tuple[str, bool]:
    if expectation is Expectation.REJECTION:
        return "accepts it and returns values", False
    if expectation is Expectation.REJECTION_OR_PASS_THROUGH:
        passed = all(
            np.array_equal(np.asarray(got), expected[name]) and np.asarray(got).shape == expected[name].shape
            for name, got in zip(("output", "present_state"), result, strict=True)
        )
        return ("passes the past state through" if passed else "returns values other than a pass-through"), passed
    judged_by_op = op_export.for_op(case.op).disagreement
    if judged_by_op is not None:
        ratio, where = judged_by_op(case, result)
        if ratio > 1.0:
            return f"disagrees: mismatch at {where} ({ratio:.3g} x the tolerance)", False
        return f"agrees with the oracle (worst error/tolerance {ratio:.3g})", True
    output, present_state = result  # an op judged by the engine: (output, present_state)
    try:
        worst = max(assert_agrees_with_oracle(case, (output, present_state)))
    except MismatchError as err:
        return f"disagrees: {err.mismatch.reason} mismatch at {err.mismatch.tensor} {err.mismatch.where()}", False
    return f"agrees with the oracle (worst error/tolerance {worst:.3g})", True


def _aliased_as_separate(backend: Backend, case: Case) -> tuple[str, bool]:
    """Run ``case`` with one state buffer and with two; whether the bits agree, in words."""
    one_buffer, separate = backend.run(case), backend.run(replace(case, aliased=False))
    same = all(np.asarray(a).shape == np.asarray(b).shape and np.asarray(a).tobytes() == np.asarray(b).tobytes()
               for a, b in zip(one_buffer, separate, strict=True))
    return ("one buffer gives the bits of separate buffers" if same else
            "one buffer gives other bits than separate buffers"), same


def opinion(backend: Backend, case: Case, expectation: Expectation, expected: dict[str, np.ndarray]) -> Opinion:
    """Run ``case`` once on ``backend`` (twice for aliasing) and judge the answer against the contract."""
    device = backend.capabilities().device
    if backend.name == REFERENCE and expectation is Expectation.OUTPUTS:
        return Opinion(backend.name, device, "the reference (float64)", True)
    aliasing = expectation is Expectation.ALIASED_AS_SEPARATE
    if aliasing and not backend.capabilities().aliasing:
        return Opinion(backend.name, device, "binds no state buffers (aliasing does not apply)", None)
    try:
        if aliasing:
            verdict, fine = _aliased_as_separate(backend, case)
            if case.state_window and backend.capabilities().window == "prefix":
                verdict += " (it serves W > 0 as W = 0 prefix calls)"
            return Opinion(backend.name, device, verdict, fine)
        result = backend.run_outputs(case)
    except Rejected as err:
        refused = f"refuses it: {_refusal(err)}"
        return Opinion(backend.name, device, refused,
                       expectation not in (Expectation.OUTPUTS, Expectation.ALIASED_AS_SEPARATE))
    except Unsupported as err:
        return Opinion(backend.name, device, f"cannot run it here: {_refusal(err)}", None)
    except (Crashed, TimedOut) as err:
        return Opinion(backend.name, device, f"{err.outcome.value}: {_refusal(err)}", False)
    verdict, fine = _on_values(case, expectation, result, expected)
    return Opinion(backend.name, device, verdict, fine)


def opinions(
    backends: Iterable[Backend], case: Case, expectation: Expectation, expected: dict[str, np.ndarray], *, at_fault: str
) -> list[Opinion]:
    """The opinion of every backend of the case's op but ``at_fault``, in the given order."""
    return [opinion(b, case, expectation, expected) for b in backends
            if b.name != at_fault and case.op.name in b.capabilities().ops]
