"""The tolerance model and the mismatch report: what passes, what fails, and what the report says."""

from __future__ import annotations

import numpy as np
import pytest
from support.ort_cases import fixed_case

import oracles
from fuzz.engine.compare import (
    Match,
    MismatchError,
    Where,
    assert_agrees_with_oracle,
    assert_close,
    assert_results_agree,
    element_ratios,
)
from fuzz.engine.tolerance import UNDERFLOW_FLOOR, Budget
from fuzz.ops.linear_attention.tolerance import exact_answer

WHERE = Where("unit", ("left", "right"), "a test case")


def _close(actual, expected, exact, *, tensor="present_state", block=None, d_v=None, **options) -> float:
    exact = np.asarray(exact, dtype=np.float64)
    block = np.abs(exact) if block is None else block
    return assert_close(np.asarray(actual), np.asarray(expected), exact=exact, block=block, tensor=tensor,
                        d_v=d_v or exact.shape[-1], depth=2, where=WHERE, **options)


def _state(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float64).reshape(1, 1, 1, -1)


def test_fp16_rounded_once_passes_and_one_ulp_fails() -> None:
    exact = _state([1.0 + 2.0**-11 * 0.9])  # just below the midpoint of two fp16 values
    nearest = exact.astype(np.float16)
    assert _close(nearest, exact, exact, storages=[np.float16, np.float64]) <= 1.0
    one_ulp_off = nearest + np.float16(2.0**-10)
    with pytest.raises(MismatchError) as err:
        _close(one_ulp_off, exact, exact, storages=[np.float16, np.float64])
    assert err.value.mismatch.reason == "value"
    assert err.value.mismatch.ratio > 1.0


def test_fp16_subnormals_get_the_format_resolution() -> None:
    exact = _state([3.0 * 2.0**-24 + 2.0**-26])
    assert _close(exact.astype(np.float16), exact, exact, storages=[np.float16, np.float64]) <= 1.0
    with pytest.raises(MismatchError):
        _close(np.zeros((1, 1, 1, 1), np.float16), exact, exact, storages=[np.float16, np.float64])


def test_nan_passes_only_where_every_side_and_the_exact_answer_are_nan() -> None:
    exact = _state([np.nan, 1.0])
    both = _state([np.nan, 1.0]).astype(np.float32)
    assert _close(both, both, exact) == 0.0
    with pytest.raises(MismatchError) as err:
        _close(_state([0.0, 1.0]).astype(np.float32), both, exact)
    assert err.value.mismatch.reason == "nan"
    with pytest.raises(MismatchError) as err:
        _close(both, both, _state([2.0, 1.0]))
    assert err.value.mismatch.reason == "nan"


def test_infinity_must_match_the_exact_infinity() -> None:
    exact = _state([np.inf, 1.0])
    with pytest.raises(MismatchError) as err:
        _close(_state([-np.inf, 1.0]), exact, exact)
    assert err.value.mismatch.reason == "non-finite"
    with pytest.raises(MismatchError):
        _close(_state([1.0, np.inf]), _state([1.0, 1.0]), _state([1.0, 1.0]))


def test_an_exact_answer_past_float16s_range_accepts_the_infinity_of_its_sign() -> None:
    """Rounded to float16, 70000 is +inf: two float16 results of +inf agree with each other and with the exact
    answer (a hybrid block at large magnitudes overflowed so, on the H200); -inf does not, nor +inf for 1000."""
    exact = _state([70000.0, 1000.0])
    overflowed = _state([np.inf, 1000.0]).astype(np.float16)
    assert _close(overflowed, overflowed, exact, storages=[np.float16, np.float16]) == 0.0
    with pytest.raises(MismatchError) as err:
        _close(_state([-np.inf, 1000.0]).astype(np.float16), overflowed, exact, storages=[np.float16, np.float16])
    assert err.value.mismatch.reason == "non-finite"
    with pytest.raises(MismatchError) as err:
        _close(_state([np.inf, np.inf]).astype(np.float16), overflowed, exact, storages=[np.float16, np.float16])
    assert err.value.mismatch.reason == "non-finite"


def test_bitwise_and_equal_modes() -> None:
    zero, negative_zero = _state([0.0]), _state([-0.0])
    assert _close(negative_zero, zero, zero, match=Match.EQUAL) == 0.0
    with pytest.raises(MismatchError) as err:
        _close(negative_zero, zero, zero, match=Match.BITWISE)
    assert err.value.mismatch.reason == "bits"


def test_cancelling_readout_keeps_the_tolerance_of_its_terms() -> None:
    """o = q . S cancels to ~0 while its terms are ~1: the output block is scale*|q|*|S|."""
    query = np.array([[[1.0, 1.0]]], np.float32)
    key = np.array([[[1.0, 0.0, 0.0, 1.0]]], np.float32)
    value = np.array([[[1.0, -1.0]]], np.float32)
    exact = exact_answer({"query": query, "key": key, "value": value},
                         {"q_num_heads": 1, "kv_num_heads": 2, "update_rule": "linear"})
    _, block = exact.part("output")
    assert np.all(block > 0.5)


def test_report_names_every_coordinate_and_both_values() -> None:
    exact = np.zeros((3, 2, 2, 2, 4))
    actual = exact.copy()
    actual[2, 1, 0, 1, 3] = 5.0
    with pytest.raises(MismatchError) as err:
        _close(actual, exact, exact, block=np.ones_like(exact))
    m = err.value.mismatch
    assert (m.slot, m.batch, m.head, m.row, m.col) == (2, 1, 0, 1, 3)
    assert (m.actual, m.expected, m.failing, m.total) == (5.0, 0.0, 1, exact.size)
    text = m.report()
    for piece in ("[unit]", "left", "right", "slot 2, batch 1, head 0, key row 1, value col 3", "5.0",
                  "tolerance", "a test case"):
        assert piece in text


def test_output_coordinates_are_token_head_and_column() -> None:
    exact = np.zeros((2, 3, 3 * 4))
    actual = exact.copy()
    actual[1, 2, 2 * 4 + 1] = 1.0
    with pytest.raises(MismatchError) as err:
        _close(actual, exact, exact, tensor="output", block=np.ones_like(exact), d_v=4)
    m = err.value.mismatch
    assert (m.slot, m.batch, m.head, m.row, m.col) == (None, 1, 2, 2, 1)
    assert "token 2" in m.report()


def test_shape_mismatch_is_reported() -> None:
    exact = np.zeros((1, 1, 2, 2))
    with pytest.raises(MismatchError) as err:
        _close(np.zeros((1, 1, 2, 3)), exact, exact)
    assert err.value.mismatch.reason == "shape"
    assert "(1, 1, 2, 3)" in err.value.mismatch.report()


def test_mask_limits_the_compared_elements() -> None:
    exact = np.zeros((2, 1, 1, 1, 1))
    actual = exact.copy()
    actual[0] = 1.0
    keep = np.array([False, True]).reshape(-1, 1, 1, 1, 1)
    assert _close(actual, exact, exact, block=np.ones_like(exact), mask=keep) == 0.0


def test_passing_ratios_are_error_over_tolerance_element_by_element() -> None:
    """Passing comparisons skip the per-element reasons: their ratios must still be |a - e| / tolerance,
    0 outside the mask, and a NaN or a failure outside the mask must not count."""
    rng = np.random.default_rng(7)
    exact = rng.standard_normal((3, 2, 2, 4, 4))
    block = np.abs(exact) + 1.0
    actual = exact.astype(np.float32)
    expected = (exact * (1 + 1e-7)).astype(np.float32)
    tolerance = Budget((np.dtype(np.float32), np.dtype(np.float32)), 2).tolerance(exact, block)
    wanted = np.abs(actual.astype(np.float64) - expected.astype(np.float64)) / tolerance
    options = {"exact": exact, "block": block, "tensor": "present_state", "d_v": 4, "depth": 2, "where": WHERE}
    assert np.array_equal(element_ratios(actual, expected, **options), wanted)
    keep = np.array([False, True, True]).reshape(-1, 1, 1, 1, 1)
    for hidden in (np.nan, 1e3):
        outside = actual.copy()
        outside[0, 1, 1, 2, 3] = hidden
        assert np.array_equal(element_ratios(outside, expected, mask=keep, **options), np.where(keep, wanted, 0.0))
    for match in (Match.BITWISE, Match.EQUAL):
        assert not element_ratios(actual, actual.copy(), match=match, **options).any()


def test_float32_subnormal_results_get_an_absolute_underflow_allowance() -> None:
    """Found by a campaign: ORT CPU returned -4.1248621595865315e-41 for -4.1247402246549695e-41
    (one float32 subnormal step); gradual underflow keeps an absolute error, not a relative one."""
    exact = _state([-4.1247402246549695e-41])
    one_step = exact.astype(np.float32) - np.float32(np.finfo(np.float32).smallest_subnormal)
    assert _close(one_step, exact, exact, storages=[np.float32, np.float64]) <= 1.0
    with pytest.raises(MismatchError):  # the allowance ends below the normal range
        _close(_state([1e-36]).astype(np.float32), exact, exact, storages=[np.float32, np.float64])


def test_float32_subnormal_results_may_be_flushed_to_zero() -> None:
    """Found by a campaign on the H200: ORT's WebGPU EP returned 0 for outputs of -2.16e-41 and
    1.53e-40 (WGSL allows flushing subnormals to zero); a normal-range value may not vanish."""
    for value in (-2.157753001511523e-41, 1.5336537854934167e-40):
        exact = _state([value])
        flushed = np.zeros_like(exact, dtype=np.float32)
        assert _close(flushed, exact, exact, storages=[np.float32, np.float64]) <= 1.0
    normal = _state([2.0 * np.finfo(np.float32).smallest_normal * 2.0**10])
    with pytest.raises(MismatchError):
        _close(np.zeros_like(normal, dtype=np.float32), normal, normal, storages=[np.float32, np.float64])


def _rounded_oracle(case) -> tuple[np.ndarray, np.ndarray]:
    """The oracle's answer to ``case`` rounded once to the case's type: a correct implementation's."""
    return tuple(x.astype(case.dtype) for x in oracles.linear_attention(**case.kwargs()))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_a_result_rounded_once_agrees_with_the_oracle_and_a_nudged_one_does_not(dtype) -> None:
    case = fixed_case("gated_delta", dtype, window=3, layout="inverse")
    output, state = _rounded_oracle(case)
    ratios = assert_agrees_with_oracle(case, (output, state), label="rounded")
    assert all(0.0 <= r <= 1.0 for r in ratios)
    nudged = state.copy()
    nudged[2, 1, 0, 3, 5] *= dtype(1.01)
    with pytest.raises(MismatchError) as err:
        assert_agrees_with_oracle(case, (output, nudged), label="nudged")
    m = err.value.mismatch
    assert (m.tensor, m.slot, m.batch, m.head, m.row, m.col) == ("present_state", 2, 1, 0, 3, 5)
    assert "[agrees-with-oracle] present_state of nudged vs oracle" in str(err.value)


def test_a_result_of_another_dtype_is_refused() -> None:
    case = fixed_case("linear")
    with pytest.raises(AssertionError, match="output of wide is float64, not float32"):
        assert_agrees_with_oracle(case, oracles.linear_attention(**case.kwargs()), label="wide")


def test_two_results_agree_within_both_budgets() -> None:
    case = fixed_case("delta", np.float16)
    output, state = _rounded_oracle(case)
    assert max(assert_results_agree(case, (output, state), (output, state), labels=("a", "b"))) == 0.0
    off = output.copy()
    off[0, 1, 2] += np.float16(0.5)
    with pytest.raises(MismatchError) as err:
        assert_results_agree(case, (off, state), (output, state), labels=("a", "b"))
    assert (err.value.mismatch.backends, err.value.mismatch.tensor) == (("a", "b"), "output")


def test_the_exact_answer_keeps_the_window_yet_measures_every_token() -> None:
    """The tolerance model takes each state's size as the recurrence goes (it keeps only the window's states): its
    magnitudes ``M_t`` and peak equal those written out from the states after every token, kept."""
    from fuzz.ops.linear_attention.strategies import Layout, Numerics, Shape, build_case
    from oracles.recurrence import run_recurrence, seed_state, window_from_states

    shape = Shape(batch=2, seq_len=40, q_heads=2, kv_heads=2, key_heads=1, d_k=5, d_v=3, state_window=3)
    layout = Layout(update_rule="gated_delta", dtype="float32", decay_per_row=True, beta_shared=False,
                    has_past=True, scale=None)
    case = build_case(shape, layout, Numerics("mixed", "raw", "mixed", "endpoints", seed=11))
    x, dims = case.inputs, case.dims()
    exact = exact_answer(x, case.attrs)
    seed = seed_state(dims, x.get("past_state"))
    output, states = run_recurrence(dims, x["query"], x["key"], x["value"], seed, x["decay"], x["beta"])
    assert len(states) == dims.seq_len
    np.testing.assert_array_equal(exact.present_state, window_from_states(dims, states))
    assert exact.peak == max(np.max(np.abs(output)), *(np.max(np.abs(s)) for s in states))
    unread = exact_answer({**x, "query": np.zeros_like(x["query"])}, case.attrs)  # no output: the states' peak
    assert unread.peak == max(np.max(np.abs(s)) for s in states) > 0
    k = np.linalg.norm(x["key"].astype(np.float64).reshape(2, 40, 1, 5), axis=-1).repeat(2, axis=2)
    v = np.linalg.norm(x["value"].astype(np.float64).reshape(2, 40, 2, 3), axis=-1)
    gamma = np.exp(x["decay"].astype(np.float64).reshape(2, 40, 2, 5).max(axis=-1))
    beta = x["beta"].astype(np.float64)
    magnitude = np.linalg.norm(seed, axis=(-2, -1))
    for t, before in enumerate([seed, *states[:-1]]):
        size = np.linalg.norm(before, axis=(-2, -1))
        term = gamma[:, t] * size * (1 + beta[:, t] * k[:, t] ** 2) + beta[:, t] * k[:, t] * v[:, t]
        magnitude = np.maximum(gamma[:, t] * magnitude, term)
        np.testing.assert_allclose(exact.magnitude[:, t + 1], np.maximum(magnitude, UNDERFLOW_FLOOR), rtol=1e-12)
