"""What an exported reproduction checks: which ONNX Runtime EP, and what the contract expects of it.

A corpus entry names the backends a property compared; the one exported is its ONNX Runtime
backend (the marked one first). What the EP must do follows from the case alone: a valid case must
give the oracle's results, a case that breaks a rule must be refused, and ``T = 0`` (outside the
contract, docs/spec.md §2) may be refused or answered by passing the state through. A crash or a hang is a
defect under every expectation. Only properties that judge one call of the EP against the contract
can be checked by one ``session.run``, and ``aliasing``, whose check is the same case bound two ways
(past and present state in one device buffer, then in two); the others raise ``ExportError``. An op is
exported where its package has an export part (``fuzz.export.op_export``); GatedDeltaNet's empty call, outside
its contract with no answer to check, is refused.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from fuzz.backends.base import Unavailable
from fuzz.backends.ort_session import OrtBackend
from fuzz.backends.registry import backend_class, check_recorded
from fuzz.corpus.entry import Entry
from fuzz.export import op_export
from fuzz.model.case import Case
from oracles.validation import ValidationError

SINGLE_CALL_PROPERTIES = ("backends-agree", "error-parity", "prefix-oracle", "leading-zeros", "gdn-backends-agree")
"""Properties whose failure is one call's results (or refusal, or crash) against the contract."""
ALIASING = "aliasing"
"""The property whose failure is an aliased binding's bits against a separate binding's, on one EP."""


class ExportError(ValueError):
    """An entry that cannot be exported as a standalone reproduction; the message says why, in one line."""


class Expectation(enum.StrEnum):
    """What the EP must do with the case for the defect to count as fixed."""

    OUTPUTS = "outputs"
    REJECTION = "rejection"
    REJECTION_OR_PASS_THROUGH = "rejection-or-pass-through"
    ALIASED_AS_SEPARATE = "aliased-as-separate"
    """Past and present state bound to one device buffer give the bits of separate buffers, on every run."""


@dataclass(frozen=True)
class ReproPlan:
    """The EP under test and what it must do with the entry's case."""

    backend: str
    """The lafuzz backend name of the EP (``ort-webgpu``...)."""
    provider: str
    """ONNX Runtime's name of the EP (``WebGpuExecutionProvider``...)."""
    expectation: Expectation
    broken_rule: str = ""
    """For an invalid case, the rule it breaks in the oracle's words."""
    value_device: str = "cpu"
    """ONNX Runtime's name of the EP's device for an ``OrtValue`` (``cuda``...): where bound state lives."""


def expectation_of(case: Case) -> tuple[Expectation, str]:
    """What the contract expects of any implementation for ``case``, and the broken rule if any."""
    try:
        case.dims()
    except ValidationError as err:
        try:
            case.op.validate(**case.kwargs(), allow_empty_sequence=True)
        except ValidationError:
            return Expectation.REJECTION, str(err)
        return Expectation.REJECTION_OR_PASS_THROUGH, str(err)
    return Expectation.OUTPUTS, ""


def ort_backends(entry: Entry) -> list[tuple[str, str, str]]:
    """``(backend name, provider, value device)`` of each ONNX Runtime backend of the entry, the marked one first."""
    names = list(entry.finding.backends)
    if entry.finding.known is not None and entry.finding.known.backend in names:
        names.insert(0, names.pop(names.index(entry.finding.known.backend)))
    found = []
    for name in names:
        try:
            cls = backend_class(check_recorded(name, f"entry {entry.id}"))
        except (KeyError, Unavailable):
            continue
        if issubclass(cls, OrtBackend):
            found.append((name, cls.provider, cls.value_device))
    return found


def plan(entry: Entry) -> ReproPlan:
    """The reproduction of ``entry``; ``ExportError`` when one ``session.run`` cannot show its defect."""
    finding = entry.finding
    eps = ort_backends(entry)
    if not eps:
        raise ExportError(f"{entry.id}: no ONNX Runtime backend among {', '.join(finding.backends)}")
    try:
        op_export.for_op(finding.case.op)
    except op_export.NotExported as err:
        raise ExportError(f"{entry.id}: {err}") from None
    if finding.property not in (*SINGLE_CALL_PROPERTIES, ALIASING):
        raise ExportError(
            f"{entry.id}: property {finding.property!r} compares several calls; repro.py checks one "
            f"call or an aliased binding (exportable: {', '.join((*SINGLE_CALL_PROPERTIES, ALIASING))})"
        )
    backend, provider, value_device = eps[0]
    served = entry.provenance.get("backends", {}).get(backend, {}).get("window")
    if finding.case.state_window and served == "prefix":
        raise ExportError(
            f"{entry.id}: {backend} refused W > 0 and ran this case as W = 0 prefix runs; a one-node "
            "model with state_window would only be refused (shrink it to a W = 0 case first)"
        )
    expectation, rule = expectation_of(finding.case)
    if expectation is Expectation.REJECTION_OR_PASS_THROUGH and not finding.case.op.windowed:
        raise ExportError(f"{entry.id}: an empty call of {finding.case.op.name} is outside its contract, which "
                          "gives no answer to check")
    if finding.property == ALIASING:
        if expectation is not Expectation.OUTPUTS or "past_state" not in finding.case.inputs:
            raise ExportError(f"{entry.id}: an aliasing finding needs a valid case with a past_state to bind")
        expectation = Expectation.ALIASED_AS_SEPARATE
    return ReproPlan(backend=backend, provider=provider, expectation=expectation, broken_rule=rule,
                     value_device=value_device)
