"""A seeded generator of valid cases for plain (non-Hypothesis) sweeps in the foundation tests.

Hypothesis strategies explore and shrink; these sweeps are fixed lists that cover every axis of
docs/spec.md §1 with a NumPy seed, so a failing sweep index is reproducible by itself.
"""

from __future__ import annotations

import numpy as np

from fuzz.model.case import Case
from oracles.validation import DELTA_RULES, GATED_RULES, UPDATE_RULES


def _head_layout(rng: np.random.Generator, index: int) -> tuple[int, int, int]:
    """``(H_q, H_kv, n_k)``: even indices standard GQA, odd ones inverse GQA; ``n_k`` divides ``H_kv``."""
    small, ratio = int(rng.choice([1, 2])), int(rng.choice([1, 2, 4]))
    h_q, h_kv = (small * ratio, small) if index % 2 == 0 else (small, small * ratio)
    n_k = int(rng.choice([d for d in (1, 2, 4) if h_kv % d == 0]))
    return h_q, h_kv, n_k


def random_case(
    rng: np.random.Generator,
    index: int,
    *,
    window: int = 0,
    seq_len: int | None = None,
    dtype: np.dtype | None = None,
    with_past: bool | None = None,
) -> Case:
    """Case number ``index`` of a sweep: rule, layouts and options cycle with the index, sizes are random."""
    rule = UPDATE_RULES[index % 4]
    dtype = np.dtype(dtype or (np.float32 if (index // 4) % 2 == 0 else np.float16))
    h_q, h_kv, n_k = _head_layout(rng, index // 8)
    d_k, d_v = int(rng.integers(1, 17)), int(rng.integers(1, 17))
    batch = int(rng.integers(1, 4))
    t = seq_len if seq_len is not None else int(rng.integers(1, 9))

    def normal(*shape: int, scale: float = 1.0) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(dtype)

    key = normal(batch, t, n_k, d_k)
    key /= np.maximum(np.linalg.norm(key.astype(np.float64), axis=-1, keepdims=True), 1e-3).astype(dtype)
    inputs = {
        "query": normal(batch, t, h_q * d_k),
        "key": key.reshape(batch, t, n_k * d_k),
        "value": normal(batch, t, h_kv * d_v),
    }
    if with_past if with_past is not None else (index // 3) % 4 != 0:
        slot = (batch, h_kv, d_k, d_v)
        inputs["past_state"] = normal(*((window, *slot) if window else slot), scale=0.5)
    layout_bit = (index // 5) % 2
    if rule in GATED_RULES or index % 7 == 0:
        width = h_kv * d_k if layout_bit else h_kv
        inputs["decay"] = (-rng.uniform(0.0, 2.0, (batch, t, width))).astype(dtype)
    if rule in DELTA_RULES or index % 7 == 1:
        width = 1 if (index // 6) % 2 else h_kv
        inputs["beta"] = rng.uniform(0.0, 1.0, (batch, t, width)).astype(dtype)
    attrs = {"q_num_heads": h_q, "kv_num_heads": h_kv, "update_rule": rule}
    if index % 3 == 0:
        attrs["scale"] = float(rng.uniform(0.1, 1.0))
    if window:
        attrs["state_window"] = window
    return Case(inputs=inputs, attrs=attrs)


def sweep(seed: int, count: int, **options) -> list[Case]:
    """``count`` cases from one seed."""
    rng = np.random.default_rng(seed)
    return [random_case(rng, i, **options) for i in range(count)]
