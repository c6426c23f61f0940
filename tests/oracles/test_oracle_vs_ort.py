"""The oracle against ONNX Runtime's own kernels at W = 0: a 200-case seeded sweep per EP.

Each EP's output and state must agree with the float64 oracle's exact answer within the suite's
tolerance model (``fuzz.engine.tolerance``), through ``assert_agrees_with_oracle``.
"""

from __future__ import annotations

import pytest
from support.random_cases import sweep

import oracles
from fuzz.corpus.classifier import Classifier
from fuzz.engine.compare import MismatchError, assert_agrees_with_oracle

CASES = sweep(seed=20261130, count=200)
@pytest.mark.parametrize("ep", ["ort-cpu", "ort-webgpu"])
@pytest.mark.parametrize("index", range(len(CASES)))
def test_oracle_agrees_with_ort(ep, index, need):
    """Each EP within the tolerance model of the oracle; a case hit by a known EP bug checks the bug instead.

    For a known issue of the EP's version the test asserts both that the EP still disagrees with the contract (fails
    the comparison with the case's exact answer) and that it computes what the issue's model
    says (passes the comparison with the exact answer of the case as the EP misreads it), so
    neither a fix nor a change of symptom can pass unnoticed.
    """
    case = CASES[index]
    backend = need(ep)
    results = backend.run(case)
    issue = Classifier.for_backends([backend]).affecting(ep, case)
    if issue is None:
        assert_agrees_with_oracle(case, results, label=ep)
        return
    try:
        assert_agrees_with_oracle(case, results, label=ep)
    except MismatchError:
        pass
    else:
        pytest.fail(f"known issue {issue.id} no longer reproduces on {case.summary()}")
    assert_agrees_with_oracle(issue.misread(case), results, label=f"{ep} (known issue {issue.id})")


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
