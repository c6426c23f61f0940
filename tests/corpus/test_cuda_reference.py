"""The oracle against the 64 window results of ONNX Runtime's CUDA EP (the one existing implementation)."""

from __future__ import annotations

import numpy as np
import pytest

from fuzz.corpus.cuda_reference import load_reference, reference_dir
from oracles import linear_attention

try:
    REFERENCE = load_reference()
except FileNotFoundError as err:
    REFERENCE = []
    MISSING = str(err)
else:
    MISSING = ""

# The CUDA results were measured at about 2e-7 (fp32) and 4.4e-4 (fp16) of the largest magnitude.
BOUND = {"float32": 1e-6, "float16": 1e-3}


def test_reference_is_present():
    assert REFERENCE, MISSING or f"no cases in {reference_dir()}"
    assert len(REFERENCE) == 64


@pytest.mark.parametrize("index", range(64))
def test_oracle_matches_cuda(index):
    if not REFERENCE:
        pytest.skip(MISSING)
    ref = REFERENCE[index]
    output, present = linear_attention(**ref.case.kwargs())
    bound = BOUND[ref.meta["dtype"]]
    for name, mine, theirs in (("output", output, ref.output), ("present_state", present, ref.present_state)):
        scale = max(float(np.abs(mine).max()), np.finfo(np.float32).tiny)
        error = float(np.abs(mine - theirs.astype(np.float64)).max()) / scale
        assert error <= bound, f"case {ref.id} {name}: {error:.3g} > {bound:g} ({ref.case.summary()})"
    window, seq_len = ref.case.state_window, ref.case.seq_len
    leading = max(window - seq_len, 0)
    assert np.all(ref.present_state[:leading] == 0), f"CUDA leading slots not zero in case {ref.id}"
