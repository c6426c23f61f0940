"""Properties of GatedDeltaNet and GatedDeltaNetStateReplay (docs/spec.md §8-10), for their tests and the planted
bugs' targeted cases; no campaign runs them yet.

- ``gdn-backends-agree``: every output of each backend against the float64 oracle: ``output``, ``final_state``
  and the capsule's captured prefix (the entries past it are unspecified; all zeros when capture is off);
- ``gdn-resume``: for every ``k`` up to what the requests captured, a backend's device-resident resume (a verify
  call, then ``min(k, captured)`` capsule entries replayed per request) equals the oracle's state after those
  tokens, computed by a fresh call over each prefix: the property that ties the capsule to the recurrence;
- ``replay-agree``: the replay's destination against the oracle: its view within tolerance, the rest unchanged;
- ``replay-refuses-invalid``: a replay one rule away from a valid one (each view one element past its backing,
  ``kept_count`` past the capacity or 0) is refused by every backend, never answered.

Tolerance: ``|actual - exact| <= (eps_store / 2 + 8 * depth * eps_f32) * (|exact| + max |exact|)`` with ``depth``
the call's tokens plus ``d_k`` plus ``d_v``: one rounding of the stored type plus float32 sums along the token loop
and the dot products, against the tensor's magnitude (cancellation). Coarser than the windowed ops' derived model
(``fuzz.engine.tolerance``); a wrong head, entry or token is off by the values' own size.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from fuzz.backends import Backend, Rejected, Unsupported
from fuzz.engine.checking import CheckResult, Property
from fuzz.engine.gdn_strategies import gdn_cases, replay_cases
from fuzz.model.case import Case
from fuzz.model.findings import Finding, Kind, PropertyFailure
from fuzz.model.ops import GATED_DELTA_NET, GATED_DELTA_NET_STATE_REPLAY
from oracles.gated_delta_net import gated_delta_net, gated_delta_net_state_replay
from oracles.gated_delta_net.capsule import DESCRIPTOR_FIELDS

EPS32 = float(np.finfo(np.float32).eps)


@runtime_checkable
class Resumes(Protocol):
    """A backend with a device-resident resume by replay (``fuzz.backends.wgpu_gdn``)."""

    name: str

    def resume(self, case: Case, accepted: Sequence[int]) -> np.ndarray: ...


def _fail(prop: str, case: Case, backend: str, kind: Kind, detail: str, text: str) -> PropertyFailure:
    report = f"[{prop}] {kind} on {backend}: {text}\n  case: {case.summary()}"
    return PropertyFailure(Finding.of(property=prop, backends=(backend,), kind=kind, detail=detail, report=report,
                                      case=case))


def worst_ratio(actual: np.ndarray, exact: np.ndarray, store: np.dtype, depth: int) -> tuple[float, int]:
    """The largest error/tolerance ratio over the entries ``exact`` specifies (not NaN), and where (flat index)."""
    actual = np.asarray(actual, np.float64).reshape(exact.shape)
    specified = ~np.isnan(exact)
    magnitude = float(np.abs(exact[specified]).max(initial=0.0))
    rel = float(np.finfo(store).eps) / 2 + 8 * depth * EPS32
    tolerance = rel * (np.abs(exact) + magnitude) + np.finfo(np.float32).tiny
    ratios = np.where(specified, np.abs(actual - np.where(specified, exact, 0.0)) / tolerance, 0.0)
    ratios = np.where(specified & ~np.isfinite(actual), np.inf, ratios)
    where = int(np.argmax(ratios)) if ratios.size else 0
    return (float(ratios.flat[where]) if ratios.size else 0.0), where


def _compare(prop: str, case: Case, backend: str, tensor: str, actual: np.ndarray, exact: np.ndarray,
             store: np.dtype, depth: int, result: CheckResult) -> None:
    if np.shape(actual) != exact.shape:
        raise _fail(prop, case, backend, Kind.MISMATCH, f"{tensor}:shape",
                    f"{tensor} has shape {np.shape(actual)}, expected {exact.shape}")
    ratio, where = worst_ratio(actual, exact, store, depth)
    if ratio > 1:
        index = np.unravel_index(where, exact.shape)
        raise _fail(prop, case, backend, Kind.MISMATCH, f"{tensor}:value",
                    f"{tensor}{list(map(int, index))} = {np.asarray(actual).flat[where]!r}, exact "
                    f"{exact.flat[where]!r} ({ratio:.3g} x the tolerance)")
    result.max_ratio = max(result.max_ratio, ratio)
    result.comparisons += 1
    result.parts[f"{backend}|{tensor}"] = max(result.parts.get(f"{backend}|{tensor}", 0.0), ratio)


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


def _depth(case: Case) -> int:
    d = case.dims()
    return max(d.lengths) + d.d_k + d.d_v


def check_gdn_agree(case: Case, backends: Sequence[Backend]) -> CheckResult:
    """Every output of each backend against the oracle (docs/spec.md §8)."""
    result = CheckResult()
    exact = gated_delta_net(**case.kwargs())
    stores = (case.dtype, np.dtype(np.float32), np.dtype(np.float32))
    for b in backends:
        got = _outputs(b, case, "gdn-backends-agree", result)
        if got is None:
            continue
        for name, actual, want, store in zip(case.op.outputs, got, exact, stores, strict=True):
            _compare("gdn-backends-agree", case, b.name, name, actual, want, store, _depth(case), result)
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
        if not isinstance(b, Resumes):
            result.skipped[b.name] = "no device-resident resume by replay"
            continue
        for k in range(max(captured, default=0) + 1):
            accepted = [min(k, n) for n in captured]
            try:
                got = b.resume(case, accepted)
            except Unsupported as err:
                result.skipped[b.name] = err.message
                break
            _compare("gdn-resume", case, b.name, f"state after {accepted}", got, state_after(case, accepted),
                     np.dtype(np.float32), _depth(case), result)
    return result


def check_replay_agree(case: Case, backends: Sequence[Backend]) -> CheckResult:
    """The replay's destination against the oracle: the view within tolerance, every other element unchanged."""
    result = CheckResult()
    exact = gated_delta_net_state_replay(**case.kwargs())
    meta = dict(zip(DESCRIPTOR_FIELDS, (int(x) for x in case.inputs["metadata"]), strict=True))
    view = np.zeros(exact.shape, bool)
    view[meta["destination_offset"]:meta["destination_offset"] + meta["num_heads_v"] * meta["head_size_v"]
         * meta["head_size_k"]] = True
    for b in backends:
        got = _outputs(b, case, "replay-agree", result)
        if got is None:
            continue
        out = np.asarray(got[0])
        outside = out.shape == exact.shape and np.array_equal(out[~view], case.inputs["destination_backing"][~view])
        if not outside:
            raise _fail("replay-agree", case, b.name, Kind.MISMATCH, "destination:outside-view",
                        "an element outside the destination view changed")
        _compare("replay-agree", case, b.name, "destination view", out[view], exact[view], np.dtype(np.float32),
                 meta["kept_count"] + meta["head_size_k"] + meta["head_size_v"], result)
    return result


def invalid_replays(case: Case) -> dict[str, Case]:
    """Replays one rule away from the valid ``case``: each view one element past its backing, ``kept_count`` 0
    and one past the capacity."""
    meta = case.inputs["metadata"]
    fields = dict(zip(DESCRIPTOR_FIELDS, (int(x) for x in meta), strict=True))
    state = fields["num_heads_v"] * fields["head_size_v"] * fields["head_size_k"]
    c = fields["capacity"]
    extents = {"source_offset": ("source_backing", state), "destination_offset": ("destination_backing", state),
               "decay_offset": ("capsule_backing", c * fields["num_heads_v"]),
               "key_offset": ("capsule_backing", c * fields["num_heads_k"] * fields["head_size_k"]),
               "delta_offset": ("capsule_backing", c * fields["num_heads_v"] * fields["head_size_v"])}
    broken: dict[str, dict[str, int]] = {f"{field} past its backing": {field: case.inputs[backing].size - extent + 1}
                                         for field, (backing, extent) in extents.items()}
    broken["kept_count 0"] = {"kept_count": 0}
    broken["kept_count past the capacity"] = {"kept_count": c + 1}
    variants = {}
    for label, change in broken.items():
        changed = meta.copy()
        for field, value in change.items():
            changed[DESCRIPTOR_FIELDS.index(field)] = value
        variants[label] = case.with_inputs(metadata=changed)
    return variants


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
    Property("gdn-backends-agree", "every GatedDeltaNet output agrees with the oracle", lambda limits: gdn_cases(),
             check_gdn_agree, ops=(GATED_DELTA_NET.name,)),
    Property("gdn-resume", "resuming by replay equals a fresh run over the accepted tokens",
             lambda limits: gdn_cases(capture=True, dtypes=("float32",)), check_gdn_resume,
             ops=(GATED_DELTA_NET.name,)),
    Property("replay-agree", "the replay's destination agrees with the oracle", lambda limits: replay_cases(),
             check_replay_agree, ops=(GATED_DELTA_NET_STATE_REPLAY.name,)),
    Property("replay-refuses-invalid", "an invalid replay descriptor is refused", lambda limits: replay_cases(),
             check_replay_refuses_invalid, invalid_input=True, ops=(GATED_DELTA_NET_STATE_REPLAY.name,)),
)
"""The four properties; ``fuzz.engine.gdn_checks:NAME`` names one where a property is asked for by name."""

GDN_AGREE, GDN_RESUME, REPLAY_AGREE, REPLAY_REFUSES_INVALID = GDN_PROPERTIES
