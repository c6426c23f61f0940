"""The oracle against ONNX Runtime's own kernels at W = 0: a 200-case seeded sweep per EP.

The metric is the one the foundation issue states: the largest absolute difference divided by the
largest magnitude of the float64 oracle's tensor. Bounds: f32 computation (1e-5) for float32; for
float16, one rounding of the stored value (half an ulp, 2^-11 of the largest magnitude) on top.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.random_cases import sweep

import oracles
from fuzz.backends import Unavailable, create
from fuzz.corpus.known_issues import affecting
from kernels.tolerance import F16_ROUNDING, F32_RELATIVE

CASES = sweep(seed=20261130, count=200)
BOUND = {np.dtype(np.float32): F32_RELATIVE, np.dtype(np.float16): F32_RELATIVE + F16_ROUNDING}
_BACKENDS: dict[str, object] = {}


def backend(name: str):
    """One backend per test process (sessions stay cached across the sweep); skip if unavailable."""
    if name not in _BACKENDS:
        try:
            _BACKENDS[name] = create(name)
        except Unavailable as err:
            _BACKENDS[name] = err
    found = _BACKENDS[name]
    if isinstance(found, Unavailable):
        pytest.skip(f"backend {name} unavailable here: {found}")
    return found


def relative_error(actual: np.ndarray, reference: np.ndarray) -> float:
    scale = float(np.abs(reference).max())
    error = float(np.abs(actual.astype(np.float64) - reference).max())
    return error / scale if scale else error


def assert_agrees(ep: str, results: tuple, reference: tuple, case) -> None:
    bound = BOUND[case.dtype]
    for name, mine, ref in zip(("output", "present_state"), results, reference, strict=True):
        assert mine.shape == ref.shape, f"{name} shape {mine.shape} != {ref.shape}: {case.summary()}"
        error = relative_error(mine, ref)
        assert error <= bound, f"{ep} {name}: relative error {error:.3g} > {bound:.3g} for {case.summary()}"


@pytest.mark.parametrize("ep", ["ort-cpu", "ort-webgpu"])
@pytest.mark.parametrize("index", range(len(CASES)))
def test_oracle_agrees_with_ort(ep, index):
    """Each EP within bounds of the oracle; a case hit by a known EP bug checks the bug instead.

    For a known issue the test asserts both that the EP still disagrees with the contract (by more
    than 1% of the largest magnitude) and that it computes exactly what the issue's model says,
    so neither a fix nor a change of symptom can pass unnoticed.
    """
    case = CASES[index]
    results = backend(ep).run(case)
    reference = oracles.linear_attention(**case.kwargs())
    issue = affecting(ep, case)
    if issue is None:
        assert_agrees(ep, results, reference, case)
        return
    worst = max(relative_error(mine, ref) for mine, ref in zip(results, reference, strict=True))
    assert worst > 1e-2, f"known issue {issue.id} no longer reproduces ({worst:.3g}) on {case.summary()}"
    assert_agrees(ep, results, oracles.linear_attention(**issue.misread(case).kwargs()), case)


def test_sweep_covers_every_axis():
    """The sweep reaches every rule, both GQA directions, n_k < H_kv, both layouts, past, scale, dtypes."""
    dims = [case.dims() for case in CASES]
    assert {d.update_rule for d in dims} == set(oracles.validation.UPDATE_RULES)
    assert any(d.q_heads > d.kv_heads for d in dims) and any(d.kv_heads > d.q_heads for d in dims)
    assert any(d.key_heads < d.kv_heads for d in dims)
    assert {d.decay_per_row for d in dims} >= {True, False}
    assert {d.beta_shared for d in dims} >= {True, False}
    assert {d.has_past for d in dims} == {True, False}
    assert any("scale" in case.attrs for case in CASES)
    assert {str(d.dtype) for d in dims} == {"float32", "float16"}
