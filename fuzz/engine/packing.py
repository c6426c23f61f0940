"""Checking packed cases: several drawn cases of one shape in the batch axis of one call, judged slice by slice.

Why it is sound: the batch entries of both ops are independent. Every element of an entry's output and state is a
function of that entry's inputs alone (and of the convolution's weight and bias, which every entry shares); the
float64 oracle computes entry by entry, so the exact answer to a pack, cut at its slices, is the exact answer to
each slice; and an element's tolerance depends only on its own exact value and block and on the depth, which
the slices share (``T``, ``d_k``, the taps). So a packed call passes a property exactly when each slice would pass
it in that call, and one comparison of the whole pack judges every slice at once. Only the single-call properties
whose inputs are all per entry or shared pack (``backends-agree``, ``output-parity``, ``prefix-oracle``,
``poison-invariance``, ``leading-zeros``). Invalid input never packs (a broken rule may be one
of a batch), nor does an aliased binding (one buffer for every entry, where a hazard may cross entries), nor
select-and-resume and device chains (an acceptance per call) or the hybrid block.

A failure is reported as a single case: ``per_slice`` checks the failing slice again as a call of its own (the
slice of the worst element first, then the others) and raises that failure, so the finding's case is that slice.
Where no slice fails alone, the entries interacted (or the failure does not recur): the failure stands as one call
of the whole batch, a case of its own (the pack note dropped). Either failure is the check's own exception, raised
afresh (no exception in flight), so Hypothesis sees the same failure wherever the property meets it and shrinks a
pack towards one call (``PACK_SIZES`` puts 1 first).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from fuzz.backends import Backend
from fuzz.engine.checking import CheckResult
from fuzz.engine.compare import MismatchError
from fuzz.model.case import Case
from fuzz.model.findings import PropertyFailure
from fuzz.model.pack import PACK, slice_of, slices

CheckFn = Callable[[Case, Sequence[Backend]], CheckResult]

def per_slice(check: CheckFn) -> CheckFn:
    """``check`` of a property whose cases may pack: a packed case is checked in one call, and a failure is
    reported as the single case of a failing slice (or as the whole call, where no slice fails alone)."""

    @functools.wraps(check)
    def checked(case: Case, backends: Sequence[Backend]) -> CheckResult:
        if slices(case) == 1:
            return check(case, backends)
        try:
            return check(case, backends)
        except PropertyFailure as failure:
            packed = failure
        raise _single(packed, check, case, backends)  # outside the handler: the failure keeps its own context

    return checked


def _single(packed: PropertyFailure, check: CheckFn, case: Case, backends: Sequence[Backend]) -> PropertyFailure:
    """The failure of the first slice that fails as a call of its own, or ``packed`` as the whole call's."""
    count = slices(case)
    entries = case.inputs[case.op.lead_input].shape[0] // count
    located = _worst_batch(packed)
    order = sorted(range(count), key=lambda i: located is None or i != located // entries)
    for index in order:
        try:
            check(slice_of(case, index), backends)
        except PropertyFailure as failure:
            failure.finding = failure.finding.with_(
                report=f"{failure.finding.report}\nfound as slice {index + 1} of {count} cases packed into one "
                       f"call of batch {entries * count}; it fails as a call of its own")
            return failure
    whole = case.with_(notes={k: v for k, v in case.notes.items() if k != PACK})
    packed.finding = packed.finding.with_(
        case=whole, report=f"{packed.finding.report}\nas one call of batch {entries * count}: each of its "
                           f"{count} slices of batch {entries} passes alone (its batch entries interact, or the "
                           f"failure does not recur)")
    return packed


def _worst_batch(failure: PropertyFailure) -> int | None:
    """The batch entry of the worst element of a failed comparison (None for any other failure)."""
    cause = failure.__cause__
    return cause.mismatch.batch if isinstance(cause, MismatchError) else None
