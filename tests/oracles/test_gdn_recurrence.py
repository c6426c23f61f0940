"""GatedDeltaNet's float64 oracle against LinearAttention's (docs/spec.md §10), two oracles written apart.

LinearAttention is given the gates GatedDeltaNet computes in the op (computed here from the formulas of §8), the
normalised query and key under ``qk_l2_norm``, the transposed initial state and the same memory as ``(B, T, H*d)``;
both must then give the same output and the same state, transposed.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fuzz.model.case import Case
from fuzz.ops.gated_delta_net.strategies import GdnLayout, GdnShape, build_gdn_case, gdn_layouts, gdn_shapes
from oracles import linear_attention
from oracles.gated_delta_net import gated_delta_net


def _normalised(x: np.ndarray) -> np.ndarray:
    return x / np.sqrt((x * x).sum(-1, keepdims=True) + 1e-12)


def as_linear_attention(case: Case) -> dict:
    """The LinearAttention call of a rank-4, unpacked GatedDeltaNet case, gates and norms computed here."""
    x, a = case.inputs, case.attrs
    q, k, v = (x[n].astype(np.float64) for n in ("query", "key", "value"))
    if a.get("qk_l2_norm"):
        q, k = _normalised(q), _normalised(k)
    b, s, hq, _ = q.shape
    hv = v.shape[2]
    call = {"query": q.reshape(b, s, -1), "key": k.reshape(b, s, -1), "value": v.reshape(b, s, -1),
            "q_num_heads": hq, "kv_num_heads": hv, "update_rule": a["update_rule"], "scale": a.get("scale", 0.0)}
    if "initial_state" in x:
        call["past_state"] = x["initial_state"].astype(np.float64).transpose(0, 1, 3, 2)
    if "decay" in x:
        g = x["decay"].astype(np.float64)
        if a.get("gate_activation") == "qwen":
            per_key = g.ndim == 4
            a_log = x["a_log"].astype(np.float64).reshape(-1, *((1,) if per_key else ()))
            dt = x["dt_bias"].astype(np.float64).reshape(-1, *((1,) if per_key else ()))
            g = -np.exp(a_log) * np.log1p(np.exp(g + dt))
        call["decay"] = g.reshape(b, s, -1)
    if "beta" in x:
        beta = x["beta"].astype(np.float64)
        call["beta"] = 1 / (1 + np.exp(-beta)) if a.get("beta_activation") == "sigmoid" else beta
    return call


@settings(max_examples=150, deadline=None)
@given(shape=gdn_shapes(), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_gated_delta_net_is_linear_attention_with_the_state_transposed(shape: GdnShape, data: st.DataObject,
                                                                       seed: int) -> None:
    uniform = (shape.lengths[0] or 1,) * len(shape.lengths)
    shape = replace(shape, ragged=False, rank4=True, packed=False, lengths=uniform)
    layout: GdnLayout = data.draw(gdn_layouts(shape))
    case = build_gdn_case(shape, layout, seed)
    output, final, _ = gated_delta_net(**case.kwargs())
    la_output, la_state = linear_attention(**as_linear_attention(case))
    np.testing.assert_allclose(output.reshape(la_output.shape), la_output, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(final, la_state.transpose(0, 1, 3, 2), rtol=1e-9, atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(shape=gdn_shapes(), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_spellings_and_packing_change_no_value(shape: GdnShape, data: st.DataObject, seed: int) -> None:
    """Rank 3 or 4, ragged or uniform, packed or separate: the same tokens give the same results."""
    layout = data.draw(gdn_layouts(shape))
    layout = replace(layout, has_initial_state=True)
    reference = build_gdn_case(replace(shape, rank4=False, packed=False), layout, seed)
    case = build_gdn_case(shape, layout, seed)
    got, want = gated_delta_net(**case.kwargs()), gated_delta_net(**reference.kwargs())
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g.reshape(w.shape), w)


def test_an_empty_request_keeps_its_initial_state() -> None:
    case = build_gdn_case(GdnShape(lengths=(2, 0, 3), ragged=True, q_heads=1, group=2, d_k=3, d_v=2),
                          GdnLayout(capacity=2, capture_counts=(2, 2, 2)), seed=3)
    _, final, capsule = gated_delta_net(**case.kwargs())
    np.testing.assert_array_equal(final[1], case.inputs["initial_state"][1])
    assert np.isnan(capsule[1]).all()
