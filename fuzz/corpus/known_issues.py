"""Known findings in real implementations: what they get wrong, on which inputs, in which versions.

Each entry says which backend is at fault, which cases it affects and how it fails (the
error-parity kind for invalid inputs, or ``wrong-result`` for valid ones). A wrong result comes
with a model of what the implementation actually computes (the oracle run on the inputs as the
implementation misreads them), so a test can prove the finding is still exactly what it was. A
campaign counts a case an entry covers as known instead of reporting it again. A fixed
implementation makes the documenting tests fail: that is the signal to retire the entry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fuzz.engine.case import Case
from oracles.validation import DELTA_RULES, ValidationError


@dataclass(frozen=True)
class KnownIssue:
    """One known wrong behaviour of one implementation."""

    id: str
    backend: str
    """The backend at fault (its name in the factory)."""
    versions: str
    """The versions in which it was seen."""
    kind: str
    """``"wrong-result"`` (a valid case), or the error-parity kind for an invalid one (``"crash"``,
    ``"accepted-invalid"``)."""
    summary: str
    applies: Callable[[Case], bool]
    """True for the cases the issue affects."""
    misread: Callable[[Case], Case] | None = None
    """For a wrong result: the case as the implementation effectively reads it (the oracle on it
    reproduces the implementation)."""


def _broken_input(case: Case) -> str:
    """The input or attribute that validation rejects ('' for a valid case)."""
    try:
        case.dims()
    except ValidationError as err:
        return err.input
    return ""


def _shared_beta_affects(case: Case) -> bool:
    beta = case.inputs.get("beta")
    try:
        dims = case.dims()
    except ValidationError:
        return False
    return dims.update_rule in DELTA_RULES and beta is not None and beta.shape[2] == 1 and dims.kv_heads > 1


def _shared_beta_as_per_head(case: Case) -> Case:
    """Beta ``(B, T, 1)`` read as if it were ``(B, T, H_kv)``: element ``(b, t, h)`` taken from flat
    index ``(b*T + t)*H_kv + h``; indices past the tensor's end read zeros (as observed on lavapipe)."""
    beta = case.inputs["beta"]
    batch, seq_len, _ = beta.shape
    heads = int(case.attrs["kv_num_heads"])
    flat = beta.reshape(-1)
    index = np.arange(batch * seq_len * heads).reshape(batch, seq_len, heads)
    misread = np.where(index < flat.size, flat[np.minimum(index, flat.size - 1)], 0).astype(beta.dtype)
    return case.with_inputs(beta=misread)


WEBGPU_EP = "onnxruntime-ep-webgpu 0.4.0 with onnxruntime 1.31.1 (lavapipe) and 1.30.0 (NVIDIA H200)"

KNOWN_ISSUES: tuple[KnownIssue, ...] = (
    KnownIssue(
        id="ort-webgpu-shared-beta",
        backend="ort-webgpu",
        versions=WEBGPU_EP,
        kind="wrong-result",
        summary=(
            "A shared beta of shape (B, T, 1) is indexed as if it were (B, T, H_kv) by the delta rules "
            "(delta, gated_delta) when H_kv > 1: head h of token t in batch b uses the beta at flat "
            "index (b*T + t)*H_kv + h, and reads past the end of the tensor. Outputs and states are "
            "wrong by up to the size of the output itself (relative error ~0.1 to 1.4)."
        ),
        applies=_shared_beta_affects,
        misread=_shared_beta_as_per_head,
    ),
    KnownIssue(
        id="ort-webgpu-kv-heads-zero",
        backend="ort-webgpu",
        versions=WEBGPU_EP,
        kind="crash",
        summary="kv_num_heads = 0 kills the process with SIGFPE (an integer division by zero) instead of an error.",
        applies=lambda case: case.attrs.get("kv_num_heads") == 0,
    ),
    KnownIssue(
        id="ort-webgpu-empty-sequence",
        backend="ort-webgpu",
        versions=WEBGPU_EP,
        kind="crash",
        summary=(
            "T = 0 kills the process with SIGSEGV, for every rule and dtype, with or without a past "
            "state; the contract allows a rejection or a pass-through, never a crash."
        ),
        applies=lambda case: case.seq_len == 0,
    ),
    KnownIssue(
        id="ort-webgpu-unvalidated-shapes",
        backend="ort-webgpu",
        versions=WEBGPU_EP,
        kind="accepted-invalid",
        summary=(
            "At W = 0 the shapes of decay, beta and past_state are not validated (wrong rank, wrong "
            "last dimension, batch or sequence mismatch, a 5-D past): the EP returns values where the "
            "CPU EP names the broken rule."
        ),
        applies=lambda case: _broken_input(case) in ("decay", "beta", "past_state"),
    ),
)


def known_issue(backend: str, case: Case) -> KnownIssue | None:
    """The known issue of ``backend`` that affects ``case``, if any."""
    for issue in KNOWN_ISSUES:
        if issue.backend == backend and issue.applies(case):
            return issue
    return None
