"""Known findings in real implementations: what they get wrong, on which inputs, in which versions.

Each entry says which backend is at fault, which cases it affects, and gives a model of what the
implementation actually computes (the oracle run on the inputs as the implementation misreads
them), so a test can prove the finding is still exactly what it was, and a campaign can count it
as known instead of reporting it again. A fixed implementation makes the documenting test fail:
that is the signal to retire the entry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fuzz.case import Case
from oracles.validation import DELTA_RULES, ValidationError


@dataclass(frozen=True)
class KnownIssue:
    """One known wrong behaviour of one implementation."""

    id: str
    backend: str
    """The backend at fault (its name in the factory)."""
    versions: str
    """The versions in which it was seen."""
    summary: str
    applies: Callable[[Case], bool]
    """True for the valid cases the issue affects."""
    misread: Callable[[Case], Case]
    """The case as the implementation effectively reads it: the oracle on it reproduces the implementation."""


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


KNOWN_ISSUES: tuple[KnownIssue, ...] = (
    KnownIssue(
        id="ort-webgpu-shared-beta",
        backend="ort-webgpu",
        versions="onnxruntime 1.31.1 + onnxruntime-ep-webgpu 0.4.0 (lavapipe)",
        summary=(
            "A shared beta of shape (B, T, 1) is indexed as if it were (B, T, H_kv) by the delta rules "
            "(delta, gated_delta) when H_kv > 1: head h of token t in batch b uses the beta at flat "
            "index (b*T + t)*H_kv + h, and reads past the end of the tensor. Outputs and states are "
            "wrong by up to the size of the output itself (relative error ~0.1 to 1.4)."
        ),
        applies=_shared_beta_affects,
        misread=_shared_beta_as_per_head,
    ),
)


def known_issue(backend: str, case: Case) -> KnownIssue | None:
    """The known issue of ``backend`` that affects ``case``, if any."""
    for issue in KNOWN_ISSUES:
        if issue.backend == backend and issue.applies(case):
            return issue
    return None
