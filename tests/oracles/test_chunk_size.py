"""``chunk_size`` is a tuning hint: on every backend, setting it changes not one bit of any result."""

from __future__ import annotations

import numpy as np
import pytest
from support.random_cases import random_case

from fuzz.backends import REGISTRY, Unavailable, Unsupported, create
from fuzz.corpus.classifier import Classifier

CHUNK_SIZES = (1, 2, 3, 64)


@pytest.mark.parametrize("name", list(REGISTRY))
def test_chunk_size_changes_nothing(name):
    try:
        backend = create(name)
    except Unavailable as err:
        pytest.skip(f"backend {name} unavailable here: {err}")
    if "LinearAttention" not in backend.capabilities().ops:
        backend.close()
        pytest.skip(f"backend {name} does not run LinearAttention, whose attribute chunk_size is")
    known = Classifier.for_backends([backend])
    checked = 0
    try:
        for index in range(4):  # one case per update rule, T long enough to span several chunks
            case = random_case(np.random.default_rng(index), index, seq_len=9, window=4 * (index % 2))
            if known.affecting(name, case) is not None:
                continue  # a documented issue of this build (e.g. 1.27.0 refuses inputs a rule does not use)
            try:
                plain = backend.run(case)
            except Unsupported:
                continue  # a valid case outside what it runs (e.g. onnx-reference: H_q a multiple of H_kv)
            checked += 1
            for chunk in CHUNK_SIZES:
                hinted = backend.run(case.with_attrs(chunk_size=chunk))
                for a, b in zip(plain, hinted, strict=True):
                    assert a.tobytes() == b.tobytes(), f"{name} chunk_size={chunk}: {case.summary()}"
    finally:
        backend.close()
    assert checked, f"every case is affected by a documented issue of {name}, or outside what it runs"


def test_chunk_size_must_be_an_integer():
    from oracles import ValidationError, linear_attention

    case = random_case(np.random.default_rng(0), 0, seq_len=2)
    with pytest.raises(ValidationError, match="chunk_size: expected an integer"):
        linear_attention(**case.kwargs(), chunk_size=1.5)
