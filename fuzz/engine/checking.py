"""One property check of one case, and what it yields: the machinery every property is written with.

A ``Check`` runs backends on valid cases (their non-results turned into skips and findings), compares results
under the tolerance model against the float64 oracle's exact answer, and collects a ``CheckResult``; a failure
is a ``PropertyFailure`` carrying a ``Finding``. ``Property`` pairs a strategy with a check
(``fuzz.engine.properties`` holds them all).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

import numpy as np
from hypothesis import strategies as st

from fuzz.backends import Backend, ChainCall, Crashed, Rejected, TimedOut, Unsupported
from fuzz.engine.compare import Mismatch, MismatchError, Where, element_ratios
from fuzz.engine.op_testing import OpTesting, for_op
from fuzz.model.case import Case
from fuzz.model.chain import Chain
from fuzz.model.findings import Finding, Kind, PropertyFailure


@dataclass
class CheckResult:
    """What one check of one case did, when it found nothing wrong."""

    max_ratio: float = 0.0
    """Largest error/tolerance ratio seen (0 for exact comparisons that held)."""
    comparisons: int = 0
    """Assertions made; 0 means the case was vacuous for these backends."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Backend (or ``*``) -> why it took no part in this case."""
    parts: dict[str, float] = field(default_factory=dict)
    """``"backends|output"`` or ``"backends|slot j"`` -> largest error/tolerance ratio there (the
    campaign report plots these per backend pair and per slot)."""


@dataclass(frozen=True)
class Property:
    """A named correctness property: the cases it needs and the check every backend must pass.

    ``strategy(limits)`` draws the cases of the op whose limits it is given (its ``OpTesting.limits_type``,
    ``fuzz.engine.op_testing.for_limits``); ``ops`` names the ops it applies to (None: every op, or every op with a
    window of states where ``windowed``).
    """

    name: str
    description: str
    strategy: Callable[[Any], st.SearchStrategy[Case]]
    check: Callable[[Case, Sequence[Backend]], CheckResult | None]
    invalid_input: bool = False
    """Feeds input that breaks the contract: the input that kills native code, so backends that
    declare ``crash_prone`` run it in a crash-isolated worker (``fuzz.backends.create(isolate=True)``)."""
    ops: tuple[str, ...] | None = None
    windowed: bool = False
    """Whether the property checks the window of states, and so applies only to the ops that keep one
    (``fuzz.model.ops.Op.windowed``)."""
    backend_ops: tuple[str, ...] | None = None
    """The ops a backend must run (one of them) to take part in a case: None, the case's op; a property whose
    check runs more than one op (the hybrid block) names them."""

    def applies_to(self, op: str) -> bool:
        """Whether the property has cases of ``op`` (an op name)."""
        if self.windowed and not for_op(op).op.windowed:
            return False
        return self.ops is None or op in self.ops

    def takes_part(self, backend: Backend, op: str) -> bool:
        """Whether ``backend`` takes part in this property's cases of ``op``."""
        return bool(set(self.backend_ops or (op,)) & set(backend.capabilities().ops))


Result = tuple[np.ndarray, np.ndarray]
Got = TypeVar("Got")


class Check:
    """One property check of one case: runs backends, compares, and collects what happened."""

    def __init__(self, prop: str, case: Case, *, valid: bool = True) -> None:
        self.prop = prop
        self.case = case
        self.testing: OpTesting = for_op(case.op)
        self.dims: Any = case.dims() if valid else None
        self.result = CheckResult()
        self._exact: dict[int, tuple[Case, Any]] = {}

    def exact(self, case: Case | None = None) -> Any:
        """The float64 oracle's answer for ``case`` (default: the checked case), with magnitudes;
        computed once per case object in this check (every backend is compared with the same answer)."""
        case = case or self.case
        if id(case) not in self._exact:  # the case is kept with its answer, so its id is not reused
            self._exact[id(case)] = (case, self.testing.exact(case.inputs, case.attrs))
        return self._exact[id(case)][1]

    def fail(self, kind: Kind, backends: tuple[str, ...], detail: str, text: str,
             mismatch: Mismatch | None = None) -> PropertyFailure:
        report = mismatch.report() if mismatch else f"[{self.prop}] {kind} on {', '.join(backends)}: {text}\n" \
            f"  case: {self.case.summary()}"
        return PropertyFailure(Finding.of(property=self.prop, backends=backends, kind=kind, detail=detail,
                                          report=report, case=self.case,
                                          mismatch=mismatch.facts() if mismatch else None))

    def skip(self, who: str, why: str) -> None:
        self.result.skipped[who] = why

    def runs_op(self, backend: Backend) -> bool:
        """Whether ``backend`` runs the checked case's op; a skip with the reason if not."""
        if self.case.op.name in backend.capabilities().ops:
            return True
        runs = ", ".join(backend.capabilities().ops)
        self.skip(backend.name, f"does not run {self.case.op.name} (its capabilities list {runs})")
        return False

    def run(self, backend: Backend, case: Case) -> Result | None:
        """Run a valid case; None (recorded as a skip) if the backend cannot run it here."""
        if not self.runs_op(backend):
            return None
        got = self.attempt(backend, case, backend.run)
        return None if got is None else (np.asarray(got[0]), np.asarray(got[1]))

    def run_chain(self, backend: Backend, chain: Chain) -> list[ChainCall] | None:
        """Run the checked chain case on the backend's device-resident path; None (recorded as a
        skip) if it has none or cannot run this case."""
        if not self.runs_op(backend):
            return None
        return self.attempt(backend, self.case, lambda case: backend.run_chain(case, chain))

    def attempt(self, backend: Backend, case: Case, runner: Callable[[Case], Got]) -> Got | None:
        """``runner(case)`` on a valid case, its non-results turned into skips and findings.

        The caller's arrays must come back untouched (an aliased binding aside, which owns its
        buffer): a backend that writes into them would, for one, destroy the past state a
        zero-token acceptance keeps. They are restored before the failure is raised.
        """
        before = {} if case.aliased else {n: x.copy() for n, x in case.inputs.items()}
        try:
            got = runner(case)
        except Unsupported as err:
            self.skip(backend.name, err.message)
            return None
        except Rejected as err:
            raise self.fail(Kind.REJECTED_VALID, (backend.name,), "valid-input",
                            f"rejected a valid case: {err.message}") from err
        except (Crashed, TimedOut) as err:
            raise self.fail(failure_kind(err), (backend.name,), "valid-input", err.message) from err
        clobbered = [n for n, x in before.items() if x.tobytes() != case.inputs[n].tobytes()]
        for name in clobbered:
            case.inputs[name][...] = before[name]
        if clobbered:
            raise self.fail(Kind.CLOBBERED_INPUT, (backend.name,), clobbered[0],
                            f"the call wrote into the caller's {', '.join(clobbered)} (not an aliased binding)")
        return got

    def compare(self, actual: np.ndarray, expected: np.ndarray, *, exact: Any, tensor: str,
                labels: tuple[str, str], backends: tuple[str, ...], detail: str = "",
                tokens: int | None = None, rows: slice = slice(None), **options: Any) -> None:
        """``assert_close`` against ``exact``'s part ``tensor`` (``rows``: output positions compared, along
        the op's sequence axis); a mismatch becomes a ``PropertyFailure``."""
        depth = self.testing.depth(self.dims, tensor, tokens)
        where = Where(self.prop, labels, self.case)
        values, block = exact.part(tensor)
        if tensor == "output":
            values, block = self.along_sequence(values, rows), self.along_sequence(block, rows)
        try:
            ratios = element_ratios(actual, expected, exact=values, block=block, tensor=tensor, depth=depth,
                                    where=where, locate=partial(self.testing.locate, self.dims, tensor), **options)
        except MismatchError as err:
            m = err.mismatch
            raise self.fail(Kind.MISMATCH, backends, f"{tensor}:{m.reason}{detail}", "", m) from err
        self.result.max_ratio = max(self.result.max_ratio, float(ratios.max(initial=0.0)))
        self.result.comparisons += 1
        self._note_parts("/".join(backends), tensor, ratios)

    def along_sequence(self, x: np.ndarray, positions: slice) -> np.ndarray:
        """``x`` (an output) restricted to ``positions`` of the op's sequence axis."""
        index: list[slice] = [slice(None)] * x.ndim
        index[self.case.op.sequence_axis(self.case.attrs)] = positions
        return x[tuple(index)]

    def slots(self, selected: np.ndarray) -> np.ndarray:
        """A per-slot boolean as a mask of the windowed state (the window axis first)."""
        return selected.reshape(-1, *[1] * (len(self.dims.state_shape) - 1))

    def _note_parts(self, pair: str, tensor: str, ratios: np.ndarray) -> None:
        """Record the passing ratios of ``tensor`` for ``pair``, slot by slot for a windowed state."""
        if tensor == "output" or not self.case.state_window:
            worst = {"output" if tensor == "output" else "state W=0": float(ratios.max(initial=0.0))}
        else:
            worst = {f"slot {j}": float(slot.max(initial=0.0)) for j, slot in enumerate(ratios)}
        for part, value in worst.items():
            key = f"{pair}|{part}"
            self.result.parts[key] = max(self.result.parts.get(key, 0.0), value)


def failure_kind(err: Crashed | TimedOut) -> Kind:
    return Kind.CRASH if isinstance(err, Crashed) else Kind.TIMEOUT
