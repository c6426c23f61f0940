"""The ORT CPU and WebGPU backends against the oracle: W = 0, prefix mode for W = 1..8, the probe,
refusals with ORT's own messages, aliased IOBinding, two-call continuation and the session cache."""

from __future__ import annotations

import numpy as np
import pytest
from support.ort_cases import fixed_case

from fuzz.backends import Crashed, Rejected, Unsupported, create
from fuzz.backends.ort_session import WindowUnsupported
from fuzz.engine.compare import assert_agrees_with_oracle, assert_results_agree
from fuzz.engine.gdn_checks import check_gdn_agree
from fuzz.model.ops import GATED_DELTA_NET, GATED_DELTA_NET_STATE_REPLAY
from fuzz.ops.gated_delta_net.strategies import GdnLayout, GdnShape, build_gdn_case
from oracles.validation import UPDATE_RULES

WINDOW_REFUSALS = {
    "ort-cpu": "CPU LinearAttention does not support state_window > 0 (CUDA EP only)",
    "ort-webgpu": "WebGPU LinearAttention does not support state_window > 0 (CUDA EP only)",
}
"""Today's refusal of W > 0 by each EP, word for word (docs/spec.md §6)."""

@pytest.fixture(params=sorted(WINDOW_REFUSALS))
def ort(request, need):
    """Each ORT EP that refuses ``W > 0`` today (the session-wide instance)."""
    return need(request.param)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_w0_agrees_with_oracle(ort, dtype):
    """Every rule, both head layouts, both decay layouts, with and without past state."""
    for index, rule in enumerate(UPDATE_RULES):
        for layout in ("standard", "inverse"):
            case = fixed_case(rule, dtype, layout=layout, past=index % 2 == 0, per_row_decay=layout == "inverse",
                              seed=index)
            assert_agrees_with_oracle(case, ort.run(case), label=ort.name)


def test_probe_reports_todays_w_refusal(ort):
    caps = ort.capabilities()
    assert caps.window == "prefix"
    assert WINDOW_REFUSALS[ort.name] in ort.window_probe_message


def test_ops_a_build_does_not_register_are_availability_notes_not_findings(ort):
    """1.31.1's CPU EP and the WebGPU plugin 0.4.0 have no GatedDeltaNet kernel, and 1.31.1 no replay schema: the
    probe leaves both ops out of the build's ops with a note, so a property of theirs skips the build."""
    caps = ort.capabilities()
    for op in (GATED_DELTA_NET.name, GATED_DELTA_NET_STATE_REPLAY.name):
        assert op not in caps.ops
        assert any(note.startswith(f"{op} not run here: ") for note in caps.notes), caps.notes
    case = build_gdn_case(GdnShape(lengths=(2,), ragged=False, q_heads=1, group=1, d_k=4, d_v=4), GdnLayout(), 3)
    result = check_gdn_agree(case, [ort])
    assert result.comparisons == 0 and ort.name in result.skipped
    assert any(WINDOW_REFUSALS[ort.name] in note for note in caps.notes)
    assert set(caps.dtypes) == {"float32", "float16"} and caps.aliasing


def _counting_single_calls(ort, monkeypatch) -> list[int]:
    """The token counts of the single ``W = 0`` runs ``ort`` makes from now on (``_execute``)."""
    calls: list[int] = []
    execute = ort._execute
    monkeypatch.setattr(ort, "_execute", lambda session, case: calls.append(case.seq_len) or execute(session, case))
    return calls


def _prefix_cases(window: int):
    seq_len = 5  # W = 6..8 have leading slots that represent no token
    for rule, dtype in (("gated_delta", np.float32), ("delta", np.float16)):
        yield fixed_case(rule, dtype, window=window, seq_len=seq_len, layout="inverse" if window % 2 else "standard",
                         per_row_decay=window % 3 == 0)


@pytest.mark.parametrize("window", range(1, 9))
def test_prefix_calls_singly_check_every_slot(ort, window, monkeypatch):
    """One by one, each slot is a separate W = 0 run of the EP over its prefix, and agrees with the oracle;
    the last slot's run (all tokens) is the run that gives the output, made once."""
    calls = _counting_single_calls(ort, monkeypatch)
    for case in _prefix_cases(window):
        calls.clear()
        result = ort.run_prefix_calls_singly(case)
        assert_agrees_with_oracle(case, result, label=ort.name)
        represented = list(range(max(case.seq_len - window, 0) + 1, case.seq_len + 1))
        assert sorted(calls) == represented, case.summary()


@pytest.mark.parametrize("window", range(1, 9))
def test_prefix_calls_in_one_run_give_the_bits_of_single_runs(ort, window, monkeypatch):
    """A valid unaliased case of two calls or more runs them as the nodes of one model, in one run (no
    single run at all), and gets the bits that single runs give; one call is one single run."""
    calls = _counting_single_calls(ort, monkeypatch)
    for case in _prefix_cases(window):
        calls.clear()
        output, present = ort.run(case)
        assert calls == ([] if min(window, case.seq_len) > 1 else [case.seq_len]), case.summary()
        single_output, single_present = ort.run_prefix_calls_singly(case)
        for name, ours, single in (("output", output, single_output), ("present_state", present, single_present)):
            assert ours.dtype == single.dtype and ours.shape == single.shape, (name, case.summary())
            assert np.array_equal(ours.view(np.uint8), single.view(np.uint8)), (name, case.summary())
        assert_agrees_with_oracle(case, (output, present), label=ort.name)


def test_prefix_mode_reads_only_the_last_past_slot(ort):
    case = fixed_case("gated_delta", window=4)
    poisoned = case.inputs["past_state"].copy()
    poisoned[:3] = np.nan
    clean, dirty = ort.run(case), ort.run(case.with_inputs(past_state=poisoned).with_(poison="nan"))
    for a, b in zip(clean, dirty, strict=True):
        assert a.tobytes() == b.tobytes()


def test_refusals_carry_orts_message(ort):
    case = fixed_case("gated_delta")
    with pytest.raises(Rejected, match=r"state_window must be in \[0, 8\], got 9"):
        ort.run(case.with_attrs(state_window=9))
    with pytest.raises(Rejected, match="divisible by q_num_heads"):
        ort.run(case.with_attrs(q_num_heads=3))
    with pytest.raises(WindowUnsupported, match=WINDOW_REFUSALS[ort.name].replace("(", r"\(").replace(")", r"\)")):
        ort.session(fixed_case("linear", window=2))
    with pytest.raises(Unsupported, match="no float64 kernel"):
        ort.run(fixed_case("linear", np.float64))


def test_prefix_mode_refuses_a_bad_window_state(ort):
    """A 5-D state of the wrong window reaches the EP (its message); a 4-D one, which the EP would
    take at W = 0, is refused by the suite's validation, and the message says so."""
    past = fixed_case("linear", window=3).inputs["past_state"]
    with pytest.raises(Rejected, match="past_state"):
        ort.run(fixed_case("linear", window=3).with_inputs(past_state=past[:2]))
    with pytest.raises(Rejected, match="prefix mode, suite validation"):
        ort.run(fixed_case("linear", window=3).with_inputs(past_state=past[2]))


@pytest.mark.parametrize("window", [0, 3])
def test_aliased_binding_equals_separate_buffers(ort, window):
    for rule in UPDATE_RULES:
        case = fixed_case(rule, window=window, seed=window)
        plain = ort.run(case)
        aliased = ort.run(case.with_(aliased=True))
        for a, b in zip(plain, aliased, strict=True):
            assert a.tobytes() == b.tobytes(), case.summary()


@pytest.mark.parametrize("aliased", [False, True])
@pytest.mark.parametrize("past", [False, True])
def test_two_call_continuation_equals_one_call(ort, aliased, past):
    """The second call resumes from the device value the first call wrote."""
    for split in (1, 3):
        case = fixed_case("gated_delta", past=past, seq_len=5).with_(aliased=aliased)
        whole = ort.run(case)
        continued = ort.run_continued(case, split)
        assert_agrees_with_oracle(case, continued, label=f"{ort.name} continued", resumed_at=split)
        assert_results_agree(case, continued, whole, labels=("continued", "one call"), resumed_at=split)


def test_continuation_at_w_gt_0_needs_a_native_window(ort):
    with pytest.raises(Unsupported, match="needs an EP that runs W > 0"):
        ort.run_continued(fixed_case("linear", window=2), 2)


@pytest.mark.slow
def test_seq_len_zero_neither_crashes_nor_invents_state(ort):
    """T = 0 is outside the contract: reject or pass the state through, never crash (run isolated)."""
    case = fixed_case("linear", seq_len=0)
    worker = create(ort.name, isolate=True)
    try:
        output, state = worker.run(case)
    except Rejected:
        return
    except Crashed as err:
        if ort.name == "ort-webgpu":
            pytest.xfail(f"known ORT WebGPU EP 0.4.0 crash on T = 0: {err.message}")
        raise
    finally:
        worker.close()
    assert output.shape == (2, 0, 32)
    np.testing.assert_array_equal(state, case.inputs["past_state"])


def test_session_cache_is_a_bounded_lru():
    backend = create("ort-cpu", cache_size=2)
    cases = [fixed_case("linear", dtype) for dtype in (np.float32, np.float16)]
    cases.append(cases[0].with_attrs(scale=0.5))
    for case in cases:
        backend.run(case)
    assert len(backend._sessions) == 2
    assert_agrees_with_oracle(cases[0], backend.run(cases[0]), label="rebuilt session")  # evicted, rebuilt
