"""Properties of GatedDeltaNet and GatedDeltaNetStateReplay (docs/spec.md §8-10), in the engine's ``PROPERTIES``
with the ops they apply to:

- ``gdn-backends-agree``: every output of each backend against the float64 oracle: ``output``, ``final_state``
  and the capsule's captured prefix (the entries past it are unspecified; all zeros when capture is off);
- ``gdn-resume``: for every ``k`` up to what the requests captured, a backend's device-resident resume (a verify
  call, then ``min(k, captured)`` capsule entries replayed per request) equals the oracle's state after those
  tokens, computed by a fresh call over each prefix: the property that ties the capsule to the recurrence;
- ``gdn-decoder-chain``: a chain of calls, each accepting none, some or all of its captured tokens, resumed by
  replay on the device from one call to the next, against the oracle call by call;
- ``gdn-aliasing``: ``initial_state`` and ``final_state`` bound as one allocation give the bits of separate
  buffers;
- ``replay-agree``: the replay's destination against the oracle: its view within tolerance, the rest unchanged;
- ``replay-poison-invariance``: NaN in everything the replay must not read (capsule entries past ``kept_count``,
  the backings around its views) changes not one bit of the destination;
- ``replay-refuses-invalid``: a replay one rule away from a valid one (each view one element past its backing,
  ``kept_count`` past the capacity or 0) is refused by every backend, never answered.

Tolerances are the op's (``fuzz/ops/gated_delta_net/tolerance.py``), on the suite's model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from fuzz.backends import Backend, Rejected, Unsupported
from fuzz.engine.checking import CheckResult, Property
from fuzz.engine.op_testing import for_op, of_limits
from fuzz.model.case import Case
from fuzz.model.findings import Finding, Kind, PropertyFailure
from fuzz.model.ops import GATED_DELTA_NET, GATED_DELTA_NET_STATE_REPLAY
from fuzz.ops.gated_delta_net.decoder_chain import chain_accepted, chain_call
from fuzz.ops.gated_delta_net.strategies import aliased_cases
from fuzz.ops.gated_delta_net.tolerance import TensorAnswer, worst_ratio
from fuzz.ops.state_replay.bad_inputs import invalid_replays
from fuzz.ops.state_replay.tolerance import destination_view, read_elements
from oracles.gated_delta_net import gated_delta_net


def _fail(prop: str, case: Case, backend: str, kind: Kind, detail: str, text: str) -> PropertyFailure:
    report = f"[{prop}] {kind} on {backend}: {text}\n  case: {case.summary()}"
    return PropertyFailure(Finding.of(property=prop, backends=(backend,), kind=kind, detail=detail, report=report,
                                      case=case))


def _compare(prop: str, case: Case, backend: str, tensor: str, actual: np.ndarray, answer: TensorAnswer,
             result: CheckResult, *, label: str | None = None, mask: np.ndarray | None = None) -> None:
    """``actual`` against the answer's ``tensor`` (where ``mask``, if given) under the op's tolerance."""
    values, block = answer.part(tensor)
    name = label or tensor
    if mask is not None:
        values, block = values[mask], block[mask]
    if np.shape(actual) != values.shape:
        raise _fail(prop, case, backend, Kind.MISMATCH, f"{tensor}:shape",
                    f"{name} has shape {np.shape(actual)}, expected {values.shape}")
    testing = for_op(case.op)
    dims = case.dims()
    ratio, where = worst_ratio(actual, values, block, answer.stores[tensor], testing.depth(dims, tensor, None))
    if ratio > 1:
        index = tuple(int(i) for i in np.unravel_index(where, values.shape))
        place = index if mask is not None else testing.locate(dims, tensor, index)
        raise _fail(prop, case, backend, Kind.MISMATCH, f"{tensor}:value",
                    f"{name}{list(index)} ({place}) = {np.asarray(actual).flat[where]!r}, exact "
                    f"{values.flat[where]!r} ({ratio:.3g} x the tolerance)")
    result.max_ratio = max(result.max_ratio, ratio)
    result.comparisons += 1
    result.parts[f"{backend}|{name}"] = max(result.parts.get(f"{backend}|{name}", 0.0), ratio)


def _outputs(backend: Backend, case: Case, prop: str, result: CheckResult) -> tuple[np.ndarray, ...] | None:
    if case.op.name not in backend.capabilities().ops:
        result.skipped[backend.name] = f"does not run {case.op.name}"
        return None
    try:
        return backend.run_outputs(case)
    except Unsupported as err:
        result.skipped[backend.name] = err.message
        return None
    except Rejected as err:
        raise _fail(prop, case, backend.name, Kind.REJECTED_VALID, "valid-input",
                    f"rejected a valid case: {err.message}") from err


def check_gdn_agree(case: Case, backends: Sequence[Backend]) -> CheckResult:
    """Every output of each backend against the oracle (docs/spec.md §8)."""
    result = CheckResult()
    answer = for_op(case.op).exact(case.inputs, case.attrs)
    for b in backends:
        got = _outputs(b, case, "gdn-backends-agree", result)
        if got is None:
            continue
        for name, actual in zip(case.op.outputs, got, strict=True):
            _compare("gdn-backends-agree", case, b.name, name, actual, answer, result)
    return result


def state_after(case: Case, accepted: Sequence[int]) -> np.ndarray:
    """The oracle's state of each request after its first ``accepted[b]`` tokens: a fresh call over each prefix."""
    d = case.dims()
    initial = case.inputs.get("initial_state")
    states = np.zeros(d.state_shape) if initial is None else initial.astype(np.float64)
    states = states.copy()
    sequence = ("query", "key", "value", "decay", "beta")
    for b, tokens in enumerate(accepted):
        if tokens == 0:
            continue
        prefix: dict[str, Any] = {}
        for name, x in case.inputs.items():
            if name in sequence:
                flat = x.reshape(d.total_tokens, *x.shape[len(d.token_shape):])
                prefix[name] = flat[d.starts[b]:d.starts[b] + tokens]
            elif name in ("a_log", "dt_bias"):
                prefix[name] = x
        prefix["initial_state"] = states[b:b + 1]
        attrs = {k: v for k, v in case.attrs.items() if k != "state_update_capacity"}
        states[b] = gated_delta_net(**prefix, **attrs)[1][0]
    return states


def check_gdn_resume(case: Case, backends: Sequence[Backend]) -> CheckResult:
    """Resuming by replay after ``k`` accepted tokens equals a fresh run over them, for every ``k`` captured."""
    result = CheckResult()
    captured = case.dims().captured
    for b in backends:
        for k in range(max(captured, default=0) + 1):
            accepted = [min(k, n) for n in captured]
            try:
                (got,) = b.resume([case], [accepted])
            except Unsupported as err:
                result.skipped[b.name] = err.message
                break
            exact = TensorAnswer({"final_state": state_after(case, accepted)}, {"final_state": np.dtype(np.float32)})
            _compare("gdn-resume", case, b.name, "final_state", got, exact, result,
                     label=f"state after {accepted}")
    return result


def check_gdn_decoder_chain(case: Case, backends: Sequence[Backend]) -> CheckResult:
    """A decoder's chain on the device (``Backend.resume``: verify, accept, resume by replay, verify again) equals
    the oracle's, call by call: each resumed state against a fresh run over the accepted tokens from the state the
    backend resumed before (the one the call read), so a wrong replay, a lost state or a stale capsule fails at
    its call."""
    result = CheckResult()
    accepted = chain_accepted(case)
    calls = [chain_call(case, i, case.inputs["initial_state"]) for i in range(len(accepted))]
    for b in backends:
        try:
            states = b.resume(calls, accepted)
        except Unsupported as err:
            result.skipped[b.name] = err.message
            continue
        previous = case.inputs["initial_state"]
        for i, got in enumerate(states):
            exact = state_after(chain_call(case, i, previous), accepted[i])
            answer = TensorAnswer({"final_state": exact}, {"final_state": np.dtype(np.float32)})
            _compare("gdn-decoder-chain", case, b.name, "final_state", got, answer, result,
                     label=f"state after call {i + 1} of {len(calls)} accepting {accepted[i]}")
            previous = np.asarray(got)
    return result


def check_gdn_aliasing(case: Case, backends: Sequence[Backend]) -> CheckResult:
    """``initial_state`` and ``final_state`` bound as one allocation give the bits of separate buffers, in every
    output (the capsule's unspecified entries aside)."""
    result = CheckResult()
    separate = replace(case, aliased=False)
    answer = for_op(case.op).exact(case.inputs, case.attrs)
    for b in backends:
        if not b.capabilities().aliasing:
            result.skipped[b.name] = "binds initial_state and final_state apart (capabilities.aliasing is False)"
            continue
        one, apart = _outputs(b, case, "gdn-aliasing", result), _outputs(b, separate, "gdn-aliasing", result)
        if one is None or apart is None:
            continue
        for name, x, y in zip(case.op.outputs, one, apart, strict=True):
            specified = ~np.isnan(answer.tensors[name])
            if np.asarray(x)[specified].tobytes() != np.asarray(y)[specified].tobytes():
                raise _fail("gdn-aliasing", case, b.name, Kind.MISMATCH, f"{name}:aliased",
                            f"{name} differs when initial_state and final_state are one allocation")
            result.comparisons += 1
    return result


def check_replay_agree(case: Case, backends: Sequence[Backend]) -> CheckResult:
    """The replay's destination against the oracle: the view within tolerance, every other element unchanged."""
    result = CheckResult()
    answer = for_op(case.op).exact(case.inputs, case.attrs)
    before = case.inputs["destination_backing"]
    view = destination_view(case.dims(), before.size)
    for b in backends:
        got = _outputs(b, case, "replay-agree", result)
        if got is None:
            continue
        out = np.asarray(got[0])
        if not (out.shape == before.shape and np.array_equal(out[~view], before[~view])):
            raise _fail("replay-agree", case, b.name, Kind.MISMATCH, "destination:outside-view",
                        "an element outside the destination view changed")
        _compare("replay-agree", case, b.name, "destination_out", out[view], answer, result,
                 label="destination view", mask=view)
    return result


def check_replay_poison_invariance(case: Case, backends: Sequence[Backend]) -> CheckResult:
    """NaN in every element the replay must not read (capsule entries past ``kept_count``, the backings around the
    views, the destination outside its view) changes not one bit of the destination."""
    result = CheckResult()
    d = case.dims()
    reads = read_elements(d, {name: case.inputs[name].size for name in ("source_backing", "capsule_backing")})
    reads["destination_backing"] = destination_view(d, case.inputs["destination_backing"].size)
    poisoned = case.with_inputs(**{name: np.where(read, case.inputs[name], np.float32(np.nan)).astype(np.float32)
                                   for name, read in reads.items()})
    for b in backends:
        clean, dirty = _outputs(b, case, "replay-poison-invariance", result), \
            _outputs(b, poisoned, "replay-poison-invariance", result)
        if clean is None or dirty is None:
            continue
        view = reads["destination_backing"]
        kept = np.array_equal(np.asarray(dirty[0], np.float64)[~view],
                              poisoned.inputs["destination_backing"][~view].astype(np.float64), equal_nan=True)
        if np.asarray(clean[0])[view].tobytes() != np.asarray(dirty[0])[view].tobytes() or not kept:
            where = "the destination view" if kept else "the destination outside its view"
            raise _fail("replay-poison-invariance", poisoned, b.name, Kind.MISMATCH, "destination:poisoned",
                        f"NaN in what the replay must not read changed {where}")
        result.comparisons += 1
    return result


def check_replay_refuses_invalid(case: Case, backends: Sequence[Backend]) -> CheckResult:
    """Every backend refuses each replay of ``invalid_replays``: an error, never values."""
    result = CheckResult()
    for label, bad in invalid_replays(case).items():
        for b in backends:
            if case.op.name not in b.capabilities().ops:
                result.skipped[b.name] = f"does not run {case.op.name}"
                continue
            try:
                b.run_outputs(bad)
            except Rejected:
                result.comparisons += 1
                continue
            raise _fail("replay-refuses-invalid", bad, b.name, Kind.ACCEPTED_INVALID, label,
                        f"returned values for an invalid replay ({label})")
    return result


GDN_PROPERTIES = (
    Property("gdn-backends-agree", "every GatedDeltaNet output agrees with the oracle",
             of_limits(lambda t, limits: t.cases(limits)), check_gdn_agree, ops=(GATED_DELTA_NET.name,)),
    Property("gdn-resume", "resuming by replay equals a fresh run over the accepted tokens",
             of_limits(lambda t, limits: t.resume_cases(limits)), check_gdn_resume, ops=(GATED_DELTA_NET.name,)),
    Property("gdn-decoder-chain", "a chain of calls that accepts, rejects and resumes by replay on the device "
             "equals the oracle's, call by call", of_limits(lambda t, limits: t.chains(limits)),
             check_gdn_decoder_chain, ops=(GATED_DELTA_NET.name,)),
    Property("gdn-aliasing", "initial_state and final_state as one allocation give the bits of separate buffers",
             of_limits(lambda t, limits: aliased_cases(limits)), check_gdn_aliasing, ops=(GATED_DELTA_NET.name,)),
    Property("replay-agree", "the replay's destination agrees with the oracle",
             of_limits(lambda t, limits: t.cases(limits)), check_replay_agree,
             ops=(GATED_DELTA_NET_STATE_REPLAY.name,)),
    Property("replay-poison-invariance", "NaN in capsule entries past kept_count and in the backings around the "
             "views changes no bit of the destination", of_limits(lambda t, limits: t.cases(limits)),
             check_replay_poison_invariance, ops=(GATED_DELTA_NET_STATE_REPLAY.name,)),
    Property("replay-refuses-invalid", "an invalid replay descriptor is refused",
             of_limits(lambda t, limits: t.cases(limits)), check_replay_refuses_invalid, invalid_input=True,
             ops=(GATED_DELTA_NET_STATE_REPLAY.name,)),
)
"""The seven properties, in the engine's ``PROPERTIES`` (``fuzz.engine.properties``)."""
