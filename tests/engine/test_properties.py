"""Every property of the differential engine against every backend this machine has, CI budget.

Each backend is checked together with the float64 oracle. A backend that cannot be created here
is skipped with its reason; a property that checked nothing (every case unsupported, or the
backend binds state separately) is skipped with the reasons it collected, never passed. Cases
that a documented known issue affects (``fuzz.corpus.known_issues``) are declined for that backend, and
the run's statistics say how many. Error parity runs each backend in a crash-isolated worker.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

from fuzz.backends import REGISTRY, Backend
from fuzz.backends.oracle import OracleBackend
from fuzz.backends.registry import WORKER_BUILDS
from fuzz.campaign import profiles
from fuzz.campaign.shard import WorkUnit
from fuzz.campaign.unit import UnitResult, run_unit
from fuzz.corpus.known_issue import KnownIssue
from fuzz.corpus.known_issues import KNOWN_ISSUES
from fuzz.engine.op_testing import OpLimits, for_op
from fuzz.engine.properties import PROPERTIES, check_error_parity
from fuzz.model.case import Case
from fuzz.model.findings import Kind, PropertyFailure
from fuzz.ops import registry
from fuzz.ops.linear_attention.bad_inputs import BREAKERS, break_case
from fuzz.ops.linear_attention.strategies import Layout, Limits, Numerics, Shape, build_case
from fuzz.ops.linear_attention.tolerance import exact_answer

EVERY_DOCUMENTED_ISSUE = frozenset(i.id for i in KNOWN_ISSUES)
"""Passed as already shrunk: a backend sits out every case a documented issue of its own affects."""


def _check(prop: str, selection: list[Backend | str], tmp_path: Path, limits: OpLimits | None = None
           ) -> UnitResult:
    """Run ``prop`` on ``selection`` under the selected profile and ``limits`` (default: LinearAttention's ``ci``):
    fail with the report, or skip when nothing was checked."""
    for missing in (b for b in selection if isinstance(b, str)):
        pytest.skip(missing)
    result = run_unit(WorkUnit(prop, 0, 0), selection, limits=limits or Limits.ci(), settings=settings(),
                      shrunk_issues=set(EVERY_DOCUMENTED_ISSUE), save_dir=tmp_path)
    assert result.finding is None, result.finding.report
    if result.checked == 0:
        pytest.skip(f"{prop} checked nothing on {[b.name for b in selection]}: {dict(result.skips)}")
    return result


WORKER_BUILD_PROPERTIES = ("backends-agree", "prefix-oracle", "error-parity")
"""The properties the ORT builds in worker processes (``WORKER_BUILDS``) take here: each costs them a few seconds
(a browser session per new model), and their window is the suite's prefix mode, which ort-cpu and ort-webgpu
already put through every property."""


@pytest.mark.slow
@pytest.mark.parametrize("name", list(REGISTRY))
@pytest.mark.parametrize("prop", list(PROPERTIES))
def test_property_holds(prop: str, name: str, backend, tmp_path: Path) -> None:
    """``prop`` holds for ``name`` with the oracle beside it (the oracle alone, for ``oracle``), on cases of the
    first op ``name`` runs that ``prop`` applies to (``ci`` limits); ``hybrid-block`` also takes the kernel of the
    other op on the same device (``PARTNERS``); the builds in worker processes take the properties that judge
    their own results (``WORKER_BUILD_PROPERTIES``)."""
    if name in WORKER_BUILDS and prop not in WORKER_BUILD_PROPERTIES:
        pytest.skip(f"{name} takes {', '.join(WORKER_BUILD_PROPERTIES)} here: its W > 0 is prefix mode, "
                    "which ort-cpu and ort-webgpu put through every property")
    prop_ = PROPERTIES[prop]
    tested = backend(name, isolate=prop_.invalid_input)
    selection = [backend("oracle")] + ([] if name == "oracle" else [tested])
    if prop == "hybrid-block" and name in PARTNERS:
        selection.append(backend(PARTNERS[name]))
    limits = None
    if not isinstance(tested, str):
        ops = tested.capabilities().ops
        op = next((o for o in ops if o in registry.op_names() and prop_.applies_to(o)), None)  # the ops drawn
        if op is None:
            if prop_.ops is None or name not in PARTNERS:
                pytest.skip(f"{name} runs {', '.join(ops)}: {prop} has no cases of it")
            op = prop_.ops[0]  # a kernel of the other op takes part beside its partner
        limits = for_op(op).preset("ci")
    result = _check(prop, selection, tmp_path, limits)
    compared = {name for part in result.parts for name in part.partition("|")[0].split("/")}
    if prop == "hybrid-block" and name not in compared:
        pytest.skip(f"{name} took part in no block (pairs: tests/engine/test_hybrid_block.py): {dict(result.skips)}")


PARTNERS = {"wgpu": "wgpu-conv", "wgpu-dawn": "wgpu-conv-dawn", "wgpu-chunked": "wgpu-conv",
            "wgpu-specialised": "wgpu-conv", "wgpu-wide": "wgpu-conv-dawn", "wgpu-conv": "wgpu",
            "wgpu-conv-dawn": "wgpu-dawn"}
"""The other op's kernel on each kernel backend's device: a hybrid block runs device-resident on the two."""


@pytest.mark.slow
def test_all_backends_agree(available, tmp_path: Path) -> None:
    """Every available backend against every other, pair by pair, slot by slot."""
    if len(available) < 3:
        pytest.skip(f"only {list(available)} available: no pair beyond the oracle")
    _check("backends-agree", list(available.values()), tmp_path)


def test_the_selected_profile_is_in_force(request) -> None:
    """The properties run under the profile ``--hypothesis-profile`` names (``ci`` by default)."""
    selected = request.config.getoption("hypothesis_profile") or "ci"
    assert settings().max_examples == profiles.get(selected).max_examples


@pytest.mark.slow
def test_hypothesis_profile_option_changes_the_settings() -> None:
    """``pytest --hypothesis-profile=campaign`` runs the properties with the campaign's 5000 examples."""
    test = f"{__file__}::test_the_selected_profile_is_in_force"
    for option in ([], ["--hypothesis-profile=campaign"]):
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
                              test, *option], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert profiles.get("campaign").max_examples != profiles.get("ci").max_examples


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


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in REGISTRY if n != "oracle"])
def test_error_parity_on_every_rule(name: str, backend) -> None:
    """Every rule broken, deterministically, on each backend (crash-prone ones in a worker process);
    a rule a documented issue of the backend affects is that test's business (below)."""
    tested = backend(name, isolate=True)
    if isinstance(tested, str):
        pytest.skip(tested)
    for case in _rule_breaking_cases():
        known = [i for i in KNOWN_ISSUES if i.backend == name and i.applies(case)]
        check_error_parity(case, [backend("oracle")] + ([] if known else [tested]))


@pytest.mark.slow
@pytest.mark.parametrize("issue", [i for i in KNOWN_ISSUES if i.kind not in (Kind.MISMATCH, Kind.REJECTED_VALID)
                                   and i.op == "LinearAttention"], ids=lambda i: i.id)
def test_known_invalid_input_findings_still_hold(issue: KnownIssue, backend) -> None:
    """Each documented invalid-input finding is still there, and error-parity reports it (retire it when fixed)."""
    tested = backend(issue.backend, isolate=True)
    if isinstance(tested, str):
        pytest.skip(tested)
    case = next(c for c in _rule_breaking_cases() if issue.applies(c))
    with pytest.raises(PropertyFailure) as failure:
        check_error_parity(case, [tested])
    assert failure.value.finding.kind == issue.kind, failure.value.finding.report


def test_each_check_asks_the_oracle_once_per_call_whatever_the_backends(monkeypatch) -> None:
    """Every backend of a check is compared with one exact answer: select-resume's fresh call (the same
    for each backend) is solved by the float64 oracle once, not once per backend."""
    solved = []

    def counted(inputs, attrs):
        solved.append(attrs)
        return exact_answer(inputs, attrs)

    monkeypatch.setattr("fuzz.ops.linear_attention.tolerance.exact_answer", counted)
    case = build_case(
        Shape(batch=1, seq_len=5, q_heads=1, kv_heads=1, key_heads=1, d_k=2, d_v=2, state_window=3),
        Layout(update_rule="delta", dtype="float32", decay_per_row=None, beta_shared=False, has_past=True, scale=None),
        Numerics(magnitude="unit", keys="normalised", decay="moderate", beta="uniform", seed=0),
        notes={"draft_len": 3, "accepted": 2},
    )
    result = PROPERTIES["select-resume"].check(case, [OracleBackend(), OracleBackend(), OracleBackend()])
    assert result.comparisons == 6
    assert len(solved) == 1
