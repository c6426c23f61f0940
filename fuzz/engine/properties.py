"""The differential engine: docs/spec.md §4's correctness plan as named properties, driven by Hypothesis.

Each ``Property`` pairs a strategy (which cases it needs) with a check (what must hold on every
selected backend), written with ``fuzz.engine.checking.Check``. A check raises
``fuzz.model.findings.PropertyFailure`` (carrying a ``Finding``) on violation and otherwise returns a
``CheckResult`` (largest error/tolerance ratio, comparisons made, backends skipped and why). The float64
oracle (``oracles``) is always the exact answer behind tolerances. Hypothesis drives the properties in one
place, ``fuzz.campaign.unit.run_unit``, for tests and campaigns alike; ``lafuzz repro`` re-checks one saved
case.
"""

from __future__ import annotations

import functools
import importlib
import itertools
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

import oracles
from fuzz.backends import Backend, ChainCall, Crashed, Rejected, TimedOut, Unsupported
from fuzz.engine.checking import Check, CheckResult, Property, Result, failure_kind
from fuzz.engine.compare import Match
from fuzz.engine.gdn_checks import GDN_PROPERTIES
from fuzz.engine.hybrid_block import HYBRID_BLOCK
from fuzz.engine.op_testing import of_limits
from fuzz.engine.packing import per_slice
from fuzz.engine.window_cases import bound_as_a_decoder_does
from fuzz.model.case import Case
from fuzz.model.chain import Chain, token_spans
from fuzz.model.findings import Kind
from fuzz.ops.linear_attention.bad_inputs import PASS_THROUGH_RULES
from fuzz.ops.linear_attention.strategies import with_clean_past


def _at_window_zero(case: Case) -> Case:
    """The same call with ``W = 0``: the unwindowed past is the old ``past_state[W-1]``."""
    past = case.inputs.get("past_state")
    legacy = case.with_attrs(state_window=0)
    return legacy.with_inputs(past_state=None if past is None else past[-1])


# ---- the properties ---------------------------------------------------------------------------

def check_backends_agree(case: Case, backends: Sequence[Backend]) -> CheckResult:
    """Every pair of backends agrees on ``output`` and every state slot."""
    c = Check("backends-agree", case)
    exact = c.exact()
    results = [(b.name, r) for b in backends if (r := c.run(b, case)) is not None]
    if len(results) < 2:
        c.skip("*", "fewer than two backends ran this case")
    for (a, ra), (b, rb) in itertools.combinations(results, 2):
        c.compare(ra[0], rb[0], exact=exact, tensor="output", labels=(a, b), backends=(a, b))
        c.compare(ra[1], rb[1], exact=exact, tensor="present_state", labels=(a, b), backends=(a, b))
    return c.result


def check_output_parity(case: Case, backends: Sequence[Backend]) -> CheckResult:
    """``output`` at ``W > 0`` equals ``output`` at ``W = 0`` (seeded with ``past_state[W-1]``)."""
    c = Check("output-parity", case)
    legacy = _at_window_zero(case)
    exact = c.exact()
    w = c.dims.state_window
    for b in backends:
        windowed, plain = c.run(b, case), c.run(b, legacy)
        if windowed is None or plain is None:
            continue
        c.compare(windowed[0], plain[0], exact=exact, tensor="output",
                  labels=(f"{b.name} W={w}", f"{b.name} W=0"), backends=(b.name,))
    return c.result


def check_prefix_oracle(case: Case, backends: Sequence[Backend]) -> CheckResult:
    """Each slot equals a separately evaluated prefix (``W = 0`` oracle runs); output equals the oracle's."""
    c = Check("prefix-oracle", case)
    exact = c.exact()
    by_prefix = case.op.window_by_prefix(case.op.oracle, dict(case.inputs), dict(case.attrs))
    for b in backends:
        got = c.run(b, case)
        if got is None:
            continue
        c.compare(got[0], exact.output, exact=exact, tensor="output", labels=(b.name, "oracle"),
                  backends=(b.name,))
        c.compare(got[1], by_prefix, exact=exact, tensor="present_state", labels=(b.name, "prefix-oracle"),
                  backends=(b.name,))
    return c.result


def _same_bits(c: Check, b: Backend, exact: Any, first: tuple[Case, str], second: tuple[Case, str]) -> None:
    """Run two variants of one call on ``b`` and demand bit-identical outputs and states."""
    one, other = c.run(b, first[0]), c.run(b, second[0])
    if one is None or other is None:
        return
    for i, tensor in enumerate(("output", "present_state")):
        c.compare(one[i], other[i], exact=exact, tensor=tensor, labels=(first[1], second[1]),
                  backends=(b.name,), match=Match.BITWISE)


def check_poison_invariance(case: Case, backends: Sequence[Backend]) -> CheckResult:
    """Poisoned past slots ``0..W-2`` change not one bit of any output (only slot ``W-1`` is read)."""
    c = Check("poison-invariance", case)
    clean = with_clean_past(case)
    exact = c.exact(clean)
    for b in backends:
        _same_bits(c, b, exact, (case, f"{b.name} poison={case.poison}"), (clean, f"{b.name} clean"))
    return c.result


def check_leading_zeros(case: Case, backends: Sequence[Backend]) -> CheckResult:
    """With ``T < W`` the leading ``W - T`` slots, which represent no token, are exactly zero."""
    c = Check("leading-zeros", case)
    exact = c.exact()
    lead = c.dims.state_window - c.dims.seq_len
    leading = c.slots(np.arange(c.dims.state_window) < lead)
    for b in backends:
        got = c.run(b, case)
        if got is None:
            continue
        c.compare(got[1], np.zeros_like(exact.present_state), exact=exact, tensor="present_state",
                  labels=(b.name, "zero"), backends=(b.name,), match=Match.EQUAL, mask=leading)
    return c.result


def _check_resume(c: Check, b: Backend, draft: Case, fresh: Case, present: np.ndarray, accepted: int) -> None:
    """Resume after accepting ``accepted`` draft tokens; compare with ``fresh`` (the accepted tokens and
    the next ones in one call) run on the same backend."""
    case, d = c.case, c.dims
    drafted, total = draft.seq_len, c.case.seq_len
    window = d.state_window
    original = draft.inputs.get("past_state")
    following = token_spans(case, (drafted, total))
    if accepted:
        resumed_from = oracles.next_past_state(present, original, drafted, accepted)
        assert resumed_from is not None  # accepting a token selects a slot
        following = following.with_inputs(past_state=resumed_from.astype(case.dtype))
    resumed, again = c.run(b, following), c.run(b, fresh)
    if resumed is None or again is None:
        return
    answer = c.exact(fresh)
    exact: Any = answer.reseeded_at(accepted, case.dtype) if accepted else answer
    labels = (f"{b.name} resumed a={accepted}", f"{b.name} fresh")
    shared = {"exact": exact, "labels": labels, "backends": (b.name,), "tokens": accepted + total - drafted,
              "reseeded": case.dtype if accepted else None, "detail": ":accepted" if accepted else ":zero"}
    c.compare(resumed[0], c.along_sequence(again[0], slice(accepted, None)), tensor="output",
              rows=slice(accepted, None), **shared)
    represented = c.slots(np.arange(window) >= window - (total - drafted))
    c.compare(resumed[1], again[1], tensor="present_state", mask=represented, **shared)


def check_select_resume(case: Case, backends: Sequence[Backend]) -> CheckResult:
    """Select a slot and resume = a fresh run over the accepted prefix and the next tokens, for the
    case's drawn acceptance (``notes["accepted"]``); a zero-token acceptance resumes from the
    original past state, which the call must leave untouched (``Check.run`` checks every call for that)."""
    c = Check("select-resume", case)
    draft = token_spans(case, (0, int(case.notes["draft_len"])))
    accepted = int(case.notes["accepted"])
    fresh = token_spans(case, (0, accepted), (draft.seq_len, case.seq_len))
    for b in backends:
        first = c.run(b, draft)
        if first is not None:
            _check_resume(c, b, draft, fresh, first[1].astype(case.dtype), accepted)
    return c.result


def _check_chain_call(c: Check, b: Backend, call: Case, got: ChainCall, label: str) -> None:
    """One call of a device-resident chain against the oracle's answer to it (``call``: its tokens
    and the seed it should have read)."""
    exact = c.exact(call)
    compare = functools.partial(c.compare, exact=exact, labels=(f"{b.name} {label}", "oracle"), backends=(b.name,),
                                tokens=call.seq_len, detail=f":{got.seeded_by}")
    compare(got.output, exact.output, tensor="output")
    compare(got.present_state, exact.present_state, tensor="present_state")


def check_device_chain(case: Case, backends: Sequence[Backend]) -> CheckResult:
    """A chain of calls whose state stays on the device (``Backend.run_chain``: the backend's own
    select-and-resume, by rebinding the accepted slot or copying it on the GPU) equals the oracle's
    chain, call by call, slot by slot.

    The oracle's chain is driven on the host by the states the device returned: each call's expected
    seed is ``oracles.next_past_state`` of the previous call's downloaded present state (or that call's
    own seed, for 0 accepted). So each call is checked as one call from exactly the stored bits it
    should have read: a wrong slot, a skipped copy or a lost seed fails at that call, under one call's
    tolerance (the seed's rounding to the stored type is in the oracle's answer, so no ``reseeded``
    term; the drift of a long chain is not this property's business, but ``select-resume``'s).
    Backends without a device-resident chain are skipped with their reason.
    """
    c = Check("device-chain", case)
    chain = Chain.of(case)
    for b in backends:
        calls = c.run_chain(b, chain)
        if calls is None:
            continue
        past: np.ndarray | None = case.inputs["past_state"]
        for index, got in zip(range(chain.calls), calls, strict=True):
            label = f"call {index + 1}/{chain.calls} of {chain.call_lens[index]} tokens (seed: {got.seeded_by})"
            _check_chain_call(c, b, chain.call(case, index, past), got, label)
            if index < len(chain.accepted):
                past = oracles.next_past_state(got.present_state, past, chain.call_lens[index], chain.accepted[index])
    return c.result


def check_aliasing(case: Case, backends: Sequence[Backend]) -> CheckResult:
    """One read-write buffer bound as past and present state gives the bits of separate buffers."""
    c = Check("aliasing", case)
    exact = c.exact()
    separate = replace(case, aliased=False)
    for b in backends:
        if not b.capabilities().aliasing:
            c.skip(b.name, "binds past and present state separately (capabilities.aliasing is False)")
            continue
        _same_bits(c, b, exact, (case, f"{b.name} aliased"), (separate, f"{b.name} separate"))
    return c.result


def _passes_through(case: Case, result: Result) -> bool:
    """Whether a ``T = 0`` answer is the allowed pass-through: empty output, state = past (or zeros)."""
    dims = case.op.validate(**case.kwargs(), allow_empty_sequence=True)
    output, state = result
    past = case.inputs.get("past_state")
    allowed = [np.zeros(dims.state_shape)] + ([past] if past is not None else [])
    return output.size == 0 and any(
        state.shape == a.shape and np.array_equal(state, a, equal_nan=True) for a in allowed)


def check_error_parity(case: Case, backends: Sequence[Backend]) -> CheckResult:
    """Every backend rejects an invalid case with a message; none returns values or crashes."""
    rule = case.notes["broken_rule"]
    c = Check("error-parity", case, valid=False)
    rejected: dict[str, str] = {}
    accepted: list[str] = []
    for b in backends:
        if not c.runs_op(b):
            continue
        try:
            result = b.run_outputs(case)
        except Rejected as err:
            if not err.message.strip():
                raise c.fail(Kind.UNCLEAR_ERROR, (b.name,), rule, "rejected with an empty message") from err
            rejected[b.name] = err.message
        except Unsupported as err:
            c.skip(b.name, err.message)
        except (Crashed, TimedOut) as err:
            raise c.fail(failure_kind(err), (b.name,), rule, f"on input breaking {rule!r}: {err.message}") from err
        else:
            if not (rule in PASS_THROUGH_RULES and _passes_through(case, (np.asarray(result[0]),
                                                                          np.asarray(result[1])))):
                accepted.append(b.name)
        c.result.comparisons += 1
    if accepted:
        others = "; ".join(f"{name} rejected it: {msg}" for name, msg in rejected.items()) or "no backend rejected it"
        raise c.fail(Kind.ACCEPTED_INVALID, (accepted[0], *list(rejected)[:1]), rule,
                     f"returned values for an input breaking {rule!r} ({others})")
    return c.result


PROPERTIES: dict[str, Property] = {
    p.name: p for p in (
        Property("backends-agree", "every pair of backends agrees on output and every state slot",
                 of_limits(lambda t, limits: bound_as_a_decoder_does(t.cases, limits, packs=True)),
                 per_slice(check_backends_agree), windowed=True),
        Property("output-parity", "output at W > 0 equals output at W = 0 on each backend",
                 of_limits(lambda t, limits: t.cases(limits, min_window=1, packs=True)),
                 per_slice(check_output_parity), windowed=True),
        Property("prefix-oracle", "every slot equals a separately evaluated prefix (W = 0 oracle runs)",
                 of_limits(lambda t, limits: t.cases(limits, min_window=1, packs=True)),
                 per_slice(check_prefix_oracle), windowed=True),
        Property("poison-invariance", "NaN/Inf/huge/garbage in past slots 0..W-2 changes no output bit",
                 of_limits(lambda t, limits: t.poisoned_cases(limits, packs=True)),
                 per_slice(check_poison_invariance), windowed=True),
        Property("leading-zeros", "with T < W the leading W - T slots are exactly zero",
                 of_limits(lambda t, limits: t.short_cases(limits, packs=True)), per_slice(check_leading_zeros),
                 windowed=True),
        Property("select-resume", "resuming from a selected slot equals a fresh run over the accepted prefix; "
                 "a zero-token acceptance keeps the original past state",
                 of_limits(lambda t, limits: t.resume_cases(limits)), check_select_resume, windowed=True),
        Property("device-chain", "a chain of calls resumed on the device (slot rebound or copied on the GPU) "
                 "equals the oracle's chain, call by call and slot by slot",
                 of_limits(lambda t, limits: t.chains(limits)), check_device_chain, windowed=True),
        Property("aliasing", "aliased past/present state binding gives the bits of separate buffers",
                 of_limits(lambda t, limits: t.cases(limits, aliased=True)), check_aliasing, windowed=True),
        Property("error-parity", "every backend rejects each broken rule with a message, never returns values "
                 "or crashes", of_limits(lambda t, limits: t.invalid_cases(limits)), check_error_parity,
                 invalid_input=True),
        HYBRID_BLOCK,
        *GDN_PROPERTIES,
    )
}
"""Every property, in a fixed order."""


def resolve_property(name: str) -> Property:
    """A property by registry name or ``module:attribute`` (a test's own property, importable by
    spawned workers too); raises ``KeyError`` listing the known ones."""
    if ":" in name:
        module_name, _, attribute = name.partition(":")
        return getattr(importlib.import_module(module_name), attribute)
    try:
        return PROPERTIES[name]
    except KeyError:
        raise KeyError(f"unknown property {name!r}; known: {', '.join(PROPERTIES)}") from None
