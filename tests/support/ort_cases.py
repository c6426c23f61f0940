"""Cases of a few fixed sizes for the ORT backend tests.

The WebGPU EP compiles a shader per new shape (about 0.3 s each on lavapipe), so these tests vary
rules, layouts, dtypes and windows over a handful of sizes instead of drawing sizes at random.
"""

from __future__ import annotations

import numpy as np

from fuzz.model.case import Case
from oracles.validation import DELTA_RULES, GATED_RULES

HEAD_LAYOUTS = {"standard": (4, 2, 1), "inverse": (1, 2, 2)}
"""``(H_q, H_kv, n_k)``: GQA with a shared key head, and inverse GQA."""


def fixed_case(
    rule: str,
    dtype: type = np.float32,
    *,
    window: int = 0,
    seq_len: int = 5,
    layout: str = "standard",
    past: bool = True,
    per_row_decay: bool = False,
    shared_beta: bool = False,
    seed: int = 0,
    d: int = 8,
) -> Case:
    """A valid case with ``B = 2``, ``d_k = d_v = d`` and the rule's inputs (plus any extra asked)."""
    rng = np.random.default_rng(seed)
    h_q, h_kv, n_k = HEAD_LAYOUTS[layout]
    b, t = 2, seq_len
    key = rng.standard_normal((b, t, n_k, d))
    key /= np.linalg.norm(key, axis=-1, keepdims=True)
    inputs = {
        "query": rng.standard_normal((b, t, h_q * d)).astype(dtype),
        "key": key.reshape(b, t, n_k * d).astype(dtype),
        "value": rng.standard_normal((b, t, h_kv * d)).astype(dtype),
    }
    if past:
        slot = (b, h_kv, d, d)
        inputs["past_state"] = (0.5 * rng.standard_normal((window, *slot) if window else slot)).astype(dtype)
    if rule in GATED_RULES:
        inputs["decay"] = (-rng.uniform(0, 1, (b, t, h_kv * d if per_row_decay else h_kv))).astype(dtype)
    if rule in DELTA_RULES:
        inputs["beta"] = rng.uniform(0, 1, (b, t, 1 if shared_beta else h_kv)).astype(dtype)
    attrs = {"q_num_heads": h_q, "kv_num_heads": h_kv, "update_rule": rule}
    if window:
        attrs["state_window"] = window
    return Case(inputs=inputs, attrs=attrs)

