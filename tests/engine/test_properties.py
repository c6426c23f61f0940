"""Every property of the differential engine against every backend this machine has, CI budget.

Each backend is checked together with the float64 oracle. A backend that cannot be created here
is skipped with its reason; a property that checked nothing (every case unsupported, or the
backend binds state separately) is skipped with the reasons it collected, never passed. Cases
that a documented known issue affects (``fuzz.corpus.known_issues``) are declined for that backend, and
the run's statistics say how many. Error parity runs each backend in a crash-isolated worker.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fuzz.backends import REGISTRY, Backend, Capabilities, Unavailable, Unsupported, create
from fuzz.backends.isolation import isolated
from fuzz.campaign import profiles
from fuzz.corpus.known_issues import KNOWN_ISSUES, KnownIssue, known_issue
from fuzz.engine.bad_inputs import BREAKERS, break_case
from fuzz.engine.case import Case
from fuzz.engine.properties import PROPERTIES, PropertyFailure, RunStats, check_error_parity, run_property
from fuzz.engine.strategies import Layout, Limits, Numerics, Shape, build_case

CI = profiles.get("ci")


class KnownIssuesDeclined(Backend):
    """A backend that declines (``Unsupported``) the cases a documented finding of its own affects."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.name = inner.name

    def capabilities(self) -> Capabilities:
        return self.inner.capabilities()

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        issue = known_issue(self.name, case)
        if issue is not None:
            raise Unsupported(self.name, f"known issue {issue.id}")
        return self.inner.run(case)

    def close(self) -> None:
        self.inner.close()


@pytest.fixture(scope="session")
def backends():
    """``get(name, crash_isolated=False)``: the backend, created once per test process, or why it cannot be."""
    made: dict[tuple[str, bool], Backend | str] = {}

    def get(name: str, *, crash_isolated: bool = False) -> Backend | str:
        key = (name, crash_isolated)
        if key not in made:
            try:
                made[key] = KnownIssuesDeclined(isolated(name) if crash_isolated else create(name))
            except Unavailable as err:
                made[key] = f"backend unavailable here: {err}"
        return made[key]

    yield get
    for found in made.values():
        if isinstance(found, Backend):
            found.close()


def _check(prop: str, selection: list[Backend | str], tmp_path: Path) -> None:
    """Run ``prop`` on ``selection``: fail with the report, or skip when nothing was checked."""
    for missing in (b for b in selection if isinstance(b, str)):
        pytest.skip(missing)
    stats = RunStats()
    failure = run_property(PROPERTIES[prop], selection, limits=Limits.ci(), settings=CI, stats=stats,
                           save_dir=tmp_path)
    assert failure is None, failure.report
    if stats.checked == 0:
        pytest.skip(f"{prop} checked nothing on {[b.name for b in selection]}: {dict(stats.skips)}")


@pytest.mark.parametrize("name", list(REGISTRY))
@pytest.mark.parametrize("prop", list(PROPERTIES))
def test_property_holds(prop: str, name: str, backends, tmp_path: Path) -> None:
    """``prop`` holds for ``name`` with the oracle beside it (the oracle alone, for ``oracle``)."""
    isolate = prop == "error-parity" and name != "oracle"
    selection = [backends("oracle")] + ([] if name == "oracle" else [backends(name, crash_isolated=isolate)])
    _check(prop, selection, tmp_path)


def test_all_backends_agree(backends, tmp_path: Path) -> None:
    """Every available backend against every other, pair by pair, slot by slot."""
    selection = [b for b in map(backends, REGISTRY) if isinstance(b, Backend)]
    if len(selection) < 3:
        pytest.skip(f"only {[b.name for b in selection]} available: no pair beyond the oracle")
    _check("backends-agree", selection, tmp_path)


def _rule_breaking_cases() -> list[Case]:
    """Each rule broken once at ``W = 0`` and once at ``W = 2``, from valid calls on which every
    rule's precondition holds; plus ``kv_num_heads = 0``."""
    broken = []
    for window in (0, 2):
        base = build_case(
            Shape(batch=1, seq_len=3, q_heads=2, kv_heads=2, key_heads=2, d_k=2, d_v=2, state_window=window),
            Layout(update_rule="gated_delta", dtype="float32", decay_per_row=False, beta_shared=False, has_past=True,
                   scale=None),
            Numerics(magnitude="unit", keys="normalised", decay="moderate", beta="uniform", seed=0),
        )
        broken += [break_case(base, breaker, seed=0) for breaker in BREAKERS]
    heads_zero = next(c for c in broken if c.notes["broken_rule"] == "heads-zero")
    return [*broken, heads_zero.with_attrs(q_num_heads=2, kv_num_heads=0)]


@pytest.mark.parametrize("name", [n for n in REGISTRY if n != "oracle"])
def test_error_parity_on_every_rule(name: str, backends) -> None:
    """Every rule broken, deterministically, on each backend in a crash-isolated worker."""
    backend = backends(name, crash_isolated=True)
    if isinstance(backend, str):
        pytest.skip(backend)
    for case in _rule_breaking_cases():
        check_error_parity(case, [backends("oracle"), backend])


@pytest.mark.parametrize("issue", [i for i in KNOWN_ISSUES if i.kind != "wrong-result"], ids=lambda i: i.id)
def test_known_invalid_input_findings_still_hold(issue: KnownIssue, backends) -> None:
    """Each documented invalid-input finding is still there, and error-parity reports it (retire it when fixed)."""
    declining = backends(issue.backend, crash_isolated=True)
    if isinstance(declining, str):
        pytest.skip(declining)
    case = next(c for c in _rule_breaking_cases() if issue.applies(c))
    with pytest.raises(PropertyFailure) as failure:
        check_error_parity(case, [declining.inner])
    assert failure.value.kind == issue.kind, failure.value.report
