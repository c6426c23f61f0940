"""The GatedDeltaNet oracle against ONNX Runtime's CUDA EP (1.31.1): 88 one-node models recorded on a GPU machine by
``scripts/gdn_reference.py`` (every update rule in both dtypes, inverse GQA, varlen batches, each gate and beta
activation, ``qk_l2_norm``, capacities 1-8 with capture counts below, at and above the tokens, capture switched
off, no capture), kept in ``corpus/gdn-cuda-reference/``. The CUDA EP is the one implementation of the capsule
that nobody here wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oracles.gated_delta_net import gated_delta_net

REFERENCE = Path(__file__).resolve().parents[2] / "corpus" / "gdn-cuda-reference"
CUDA = "CUDAExecutionProvider"

TOLERANCE = {"float32": (1e-5, 1e-5), "float16": (2e-3, 2e-3)}
"""``(atol, rtol)`` of the op's ``output`` by input dtype: float32 is ORT's accumulation against float64; float16
adds the output's own rounding (half a unit in the last place, 2**-11 relative). The state and the capsule are
float32 whatever the dtype, so they take the float32 pair."""


def _cases() -> list[dict[str, Any]]:
    return json.loads((REFERENCE / "cases.json").read_text())["cases"]


@pytest.fixture(scope="module")
def arrays() -> Any:
    with np.load(REFERENCE / "cases.npz") as data:
        yield {k: data[k] for k in data.files}


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c["id"])
def test_the_oracle_agrees_with_the_cuda_ep(case: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    assert case["results"][CUDA] == "ok", case["results"][CUDA]
    key = case["id"]
    inputs = {name.rsplit("/", 1)[1]: value for name, value in arrays.items() if name.startswith(f"{key}/input/")}
    output, final, capsule = gated_delta_net(**inputs, **case["attrs"])
    expected = {"output": output, "final_state": final, "state_update": capsule}
    for name in case["outputs"]:
        got = arrays[f"{key}/{CUDA}/{name}"].astype(np.float64)
        atol, rtol = TOLERANCE[case["spec"]["dtype"] if name == "output" else "float32"]
        want = expected[name]
        captured = ~np.isnan(want)  # entries past a request's captured prefix are unspecified
        np.testing.assert_allclose(got[captured], want[captured], atol=atol, rtol=rtol, err_msg=f"{key} {name}")
        if name == "state_update" and case["spec"]["active"] == 0:
            assert not got.any(), f"{key}: capture switched off, yet the CUDA EP's state_update is not zero-filled"


def test_the_reference_covers_what_it_says() -> None:
    specs = [c["spec"] for c in _cases()]
    assert {s["rule"] for s in specs} == {"linear", "gated", "delta", "gated_delta"}
    assert {s["dtype"] for s in specs} == {"float32", "float16"}
    assert {s["capacity"] for s in specs} == set(range(9))
    assert {s["gate"] for s in specs} == {"none", "qwen"} and {s["beta_act"] for s in specs} == {"none", "sigmoid"}
    assert {s["active"] for s in specs} == {None, 0, 1} and {s["l2"] for s in specs} == {0, 1}
    assert any(s["varlen"] and len(s["lens"]) > 1 for s in specs)
    assert any(s["hv"] > s["hq"] > 1 for s in specs)
    counts = [(c, t, s["capacity"]) for s in specs if s["counts"] for c, t in zip(s["counts"], s["lens"], strict=True)]
    assert any(c > t for c, t, _ in counts) and any(c < min(t, cap) for c, t, cap in counts)
