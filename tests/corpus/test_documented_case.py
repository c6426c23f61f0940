"""A documented crash's own corpus case, replayed once: confirmed when it fails as the issue, otherwise why not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from support.fakes import IsolatedCrashes

from fuzz.backends.oracle import OracleBackend
from fuzz.corpus.classifier import Classifier
from fuzz.corpus.documented_case import REPLAYED, documented_entry, replay
from fuzz.corpus.known_issues import issue
from fuzz.model.case import Case

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
KV_HEADS_ZERO = issue("ort-webgpu-kv-heads-zero")


def test_the_documented_entry_is_the_one_named_and_marked_for_the_issue() -> None:
    found = documented_entry(CORPUS, KV_HEADS_ZERO.id)
    assert found is not None
    entry, where = found
    assert where == CORPUS / "error-parity" / KV_HEADS_ZERO.id
    assert entry.finding.known is not None and entry.finding.known.issue == KV_HEADS_ZERO.id
    assert documented_entry(CORPUS, "no-such-issue") is None and documented_entry(None, KV_HEADS_ZERO.id) is None


def test_a_crash_on_the_documented_case_confirms_the_issue() -> None:
    crashing = IsolatedCrashes(lambda case: case.attrs.get("kv_num_heads") == 0)
    replayed = replay(KV_HEADS_ZERO, CORPUS, [OracleBackend(), crashing], Classifier())
    assert replayed.confirmed and replayed.finding is not None
    assert replayed.finding.id == KV_HEADS_ZERO.id and replayed.finding.known is not None
    assert replayed.finding.note == REPLAYED and replayed.finding.report.startswith(REPLAYED)
    assert len(crashing.runs) == 1


def test_a_documented_case_that_passes_does_not_confirm_it() -> None:
    replayed = replay(KV_HEADS_ZERO, CORPUS, [IsolatedCrashes(lambda case: False)], Classifier())
    assert not replayed.confirmed and replayed.finding is None and replayed.why.endswith("passed")


class AcceptsEverything(IsolatedCrashes):
    """Returns zeros for any case, invalid ones too."""

    def run_outputs(self, case: Case) -> tuple[np.ndarray, ...]:
        self.runs.append(case)
        return np.zeros((1, 1, 1), case.dtype), np.zeros((1, 1, 1, 1), case.dtype)


def test_a_documented_case_that_fails_otherwise_is_a_finding_of_its_own() -> None:
    replayed = replay(KV_HEADS_ZERO, CORPUS, [AcceptsEverything(lambda case: False)], Classifier())
    assert not replayed.confirmed and "failed otherwise" in replayed.why
    assert replayed.finding is not None and replayed.finding.kind == "accepted-invalid"
    assert replayed.finding.known is None and replayed.finding.note != REPLAYED


def test_a_documented_case_whose_backends_are_not_at_hand_is_not_run() -> None:
    oracle = OracleBackend()
    replayed = replay(KV_HEADS_ZERO, CORPUS, [oracle], Classifier())
    assert not replayed.confirmed and replayed.finding is None and "needs ort-webgpu" in replayed.why
