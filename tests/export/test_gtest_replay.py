"""``fuzz.export.gtest_replay`` and ``lafuzz gtest --replay``: the tests the CPU EP can run pass there, a perturbed
expected value or message fragment fails, a windowed test is skipped with the EP's reason, and the command prints
one line per test and a total."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from fuzz.export.gtest_cases import DEFAULT_ENTRIES, builtin_cases, entry_cases
from fuzz.export.gtest_cli import main
from fuzz.export.gtest_expected import Expected, expectations, matches
from fuzz.export.gtest_replay import FAIL, KNOWN, PASS, SKIP, Provider, replay_test
from fuzz.model.findings import KnownMark
from fuzz.model.ops import CAUSAL_CONV, LINEAR_ATTENTION

BUILTIN = builtin_cases()
CORPUS = Path(__file__).resolve().parents[2] / "corpus"
ENTRIES = [t for tests in entry_cases(CORPUS, DEFAULT_ENTRIES).values() for t in tests]


@pytest.fixture(scope="module")
def cpu() -> Provider:
    pytest.importorskip("onnxruntime", reason="the replay needs onnxruntime")
    return Provider("cpu")


def _test(op_name: str, name: str):
    return next(t for t in BUILTIN[op_name] if t.name == name)


def _perturbed(want: Expected, tensor: str) -> Expected:
    """``want`` with one element of ``tensor`` moved by ten times its tolerance."""
    arrays = want.outputs()
    array = arrays[tensor].copy()
    flat = array.reshape(-1)
    flat[0] = flat[0] + np.asarray(10 * (want.tolerance.abs + want.tolerance.rel * abs(float(flat[0]))), array.dtype)
    return replace(want, **{tensor: array})


@pytest.mark.parametrize("op_name", [LINEAR_ATTENTION.name, CAUSAL_CONV.name])
def test_every_test_the_cpu_ep_can_run_passes_there(cpu, op_name):
    for test in BUILTIN[op_name]:
        verdict = replay_test(test, cpu)
        assert verdict.status == (SKIP if test.windowed else PASS), verdict.line()


@pytest.mark.parametrize(("op_name", "name", "tensor"), [
    (LINEAR_ATTENTION.name, "GatedDeltaRule_NoWindow", "output"),
    (LINEAR_ATTENTION.name, "DeltaRule_SharedBeta_NoWindow", "present_state"),
    (LINEAR_ATTENTION.name, "NoWindow_AliasedPastAndPresent", "present_state"),
    (LINEAR_ATTENTION.name, "GatedDeltaRule_NoWindow_Float16", "output"),
    (CAUSAL_CONV.name, "NoWindow_Silu", "output"),
    (CAUSAL_CONV.name, "NoWindow_Float16", "present_state"),
])
def test_a_perturbed_expected_value_fails(cpu, op_name, name, tensor):
    test = _test(op_name, name)
    wanted = [_perturbed(want, tensor) for want in expectations(test)]
    verdict = replay_test(test, cpu, wanted)
    assert verdict.status == FAIL and verdict.detail.startswith(f"{tensor}: 1 of "), verdict.line()


def test_a_wrong_message_fragment_fails(cpu):
    test = _test(LINEAR_ATTENTION.name, "KvNumHeadsZeroIsRefused")
    assert replay_test(test, cpu).status == PASS
    verdict = replay_test(replace(test, error="kv_num_heads must be positive"), cpu)
    assert verdict.status == FAIL and "refused without 'kv_num_heads must be positive'" in verdict.detail


def test_a_refusal_expected_of_a_valid_call_fails(cpu):
    test = _test(LINEAR_ATTENTION.name, "LinearRule_NoWindow")
    verdict = replay_test(replace(test, error="anything"), cpu, expectations(test))
    assert verdict.status == FAIL and "returned values" in verdict.detail


def test_a_windowed_test_is_skipped_with_the_eps_reason(cpu):
    verdict = replay_test(_test(CAUSAL_CONV.name, "Window4_ShortCall"), cpu)
    assert verdict.status == SKIP and "does not support state_window > 0" in verdict.detail


def test_the_command_prints_a_line_per_test_and_a_total(cpu, capsys):
    assert main(["--replay", "--ep", "cpu,cuda", "--only", "NoWindow"]) == 0
    lines = capsys.readouterr().out.splitlines()
    runs = [line for line in lines if line.startswith((PASS, FAIL, SKIP)) and " cpu " in line]
    assert len(runs) == sum("NoWindow" in t.name for tests in BUILTIN.values() for t in tests)
    assert lines[-1].startswith(f"{len(runs)} test runs on cpu")


def test_an_unknown_ep_is_a_usage_error(capsys):
    assert main(["--replay", "--ep", "tpu"]) == 2
    assert "unknown tpu" in capsys.readouterr().err


def test_the_windows_expected_agree_with_the_cpu_ep_through_prefix_runs(backend):
    """The CPU EP refuses ``W > 0``, but each slot of a window is a ``W = 0`` call over a prefix (docs/spec.md §2):
    ORT's numbers, not the oracle's, for every windowed test the C++ file holds."""
    cpu = backend("ort-cpu")
    if isinstance(cpu, str):
        pytest.skip(cpu)
    compared = 0
    for test in (t for tests in BUILTIN.values() for t in tests):
        if not test.windowed or test.error is not None or any(call.aliased for call in test.calls):
            continue
        for call, want in zip(test.calls, expectations(test), strict=True):
            output, state = cpu.run(call)
            assert matches(want.output, output, want.tolerance) is None, test.name
            assert matches(want.present_state, state, want.tolerance) is None, test.name
            compared += 1
    assert compared >= 30


def test_a_failure_documented_for_that_ep_is_known_and_for_another_ep_a_failure(cpu):
    test = _test(LINEAR_ATTENTION.name, "GatedDeltaRule_NoWindow")
    wanted = [_perturbed(want, "output") for want in expectations(test)]
    mark = KnownMark(backend="ort-cpu", issue="some-issue", implementation="onnxruntime", explanation="why")
    known = replay_test(replace(test, known=mark), cpu, wanted)
    assert known.status == KNOWN and "some-issue: why" in known.detail
    elsewhere = replay_test(replace(test, known=replace(mark, backend="ort-cuda")), cpu, wanted)
    assert elsewhere.status == FAIL


def test_the_cuda_aliasing_entry_carries_its_known_mark():
    test = next(t for t in ENTRIES if t.origin.endswith("ort-cuda-conv-aliased-state"))
    assert test.known is not None and test.known.backend == "ort-cuda" and test.calls[0].aliased
