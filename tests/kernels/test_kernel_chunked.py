"""The chunked prefill (``kernels/chunked.wgsl``) against the oracle, against the token loop and against itself.

Every test runs on wgpu-native and on Dawn, with the chunked prefill forced for every call
(``prefill="chunked"``) so that short calls (``T < W``, a partial chunk) are covered too, and the
token loop forced for the comparison. The sweep's configurations are derived from their index so that
together they cover every rule with both decay layouts and both beta layouts, standard and inverse GQA,
``1 < n_k < H_kv`` and ``n_k = 1``, head sizes 1, odd, 128 and 256, d_v over two tiles, batch 1-3,
``W`` of 0 and 1 to 8 with ``T < W``, ``T = W`` and ``T > W``, with and without past state (aliased
too), fp32 and fp16, the subgroup and the workgroup reduction, and ``T`` on both sides of one and two
chunks (``C - 1``, ``C``, ``C + 1``, ``2C + 3``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from test_kernel_parity import DTYPES, IMPLEMENTATIONS, assert_bitwise, kernel_or_skip, make_inputs, poisoned

from fuzz.engine.compare import assert_agrees_with_oracle, assert_results_agree
from fuzz.model.case import Case
from kernels.linear_attention import LinearAttentionKernel, linear_attention
from kernels.options import PREFILLS, WIDE_ROW_GROUPS, KernelOptions
from kernels.shader import CHUNK_SIZE, MAX_ROW_GROUPS, KernelSpec
from oracles.validation import UPDATE_RULES, Dims

C = CHUNK_SIZE
CHUNK_EDGES = (C - 1, C, C + 1, 2 * C + 3)
"""Sequence lengths around the chunk size: a partial chunk, one whole chunk, one more token, two and a bit."""

HEADS = ((4, 2, 1), (1, 4, 2), (3, 3, 3), (2, 4, 1), (6, 2, 2), (2, 2, 1), (1, 2, 1), (8, 4, 2))
"""(H_q, H_kv, n_k): GQA, inverse GQA with 1 < n_k < H_kv, MHA, inverse with n_k = 1, ..."""
HEAD_SIZES = ((1, 5), (7, 8), (13, 3), (128, 16), (33, 12), (5, 130), (256, 7), (64, 9))
"""(d_k, d_v): d_k of 1, odd, 128, 256, a geometry edge; d_v vector and scalar, one and two tiles."""
WINDOWS = (0, 1, 3, 8, 5, 0, 2, 4)


def chunk_config(index: int) -> dict:
    """Configuration ``index`` of the sweep (see the module docstring for what the indices cover)."""
    d_k, d_v = HEAD_SIZES[index]
    return {
        "rule": UPDATE_RULES[index % 4],
        "heads": HEADS[index],
        "d_k": d_k,
        "d_v": d_v,
        "window": WINDOWS[index],
        "batch": 1 + index % 3,
        "past": index % 4 != 1,
        "decay_per_row": (index // 4) % 2 == 1,
        "beta_shared": (index // 4 + index // 2) % 2 == 1,
        "scale": 0.0 if index % 2 == 0 else 0.37,
        "path": "auto" if index % 2 == 0 else "workgroup",
    }


def seq_lens_for(index: int, window: int) -> tuple[int, ...]:
    """Two of the chunk edges (each edge in four configurations), and the window's edges (``T = W - 1 < W``
    and ``T = W``)."""
    edges = (CHUNK_EDGES[index % 4], CHUNK_EDGES[(index + 1) % 4])
    return tuple(sorted({*edges, *(t for t in (window - 1, window) if t >= 1)}))


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(HEADS)))
@pytest.mark.parametrize("dtype", DTYPES, ids=["fp32", "fp16"])
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_chunked_prefill_sweep(implementation: str, dtype: type, index: int) -> None:
    """Per T: oracle parity, token-loop parity, same bits twice, aliased = separate, W = 0 parity,
    poison-proof, exact zero leading slots."""
    config = chunk_config(index)
    kernel_or_skip(implementation, dtype, config["path"])
    window = config["window"]
    h_q, h_kv, _ = config["heads"]
    attrs = {"q_num_heads": h_q, "kv_num_heads": h_kv, "update_rule": config["rule"], "scale": config["scale"],
             "state_window": window}
    token_loop = KernelOptions(implementation, path=config["path"])
    run = {"options": replace(token_loop, prefill="chunked")}
    rng = np.random.default_rng(100 + index + 50 * int(dtype == np.float16))
    for seq_len in seq_lens_for(index, window):
        inputs = make_inputs(rng, dtype=dtype, batch=config["batch"], seq_len=seq_len, heads=config["heads"],
                             d_k=config["d_k"], d_v=config["d_v"], window=window, past=config["past"],
                             decay_per_row=config["decay_per_row"], beta_shared=config["beta_shared"])
        case = Case(inputs, attrs)
        where = f"{implementation} T={seq_len} {np.dtype(dtype)} {config}"
        chunked = linear_attention(**inputs, **attrs, **run)
        token = linear_attention(**inputs, **attrs, options=token_loop)
        assert_agrees_with_oracle(case, chunked, label=f"chunked {where}")
        assert_results_agree(case, chunked, token, labels=(f"chunked {where}", "token loop"))

        again = linear_attention(**inputs, **attrs, **run)
        assert_bitwise(again[0], chunked[0], f"output run to run, {where}")
        assert_bitwise(again[1], chunked[1], f"present_state run to run, {where}")
        aliased = linear_attention(**inputs, **attrs, **run, aliased=True)
        assert_bitwise(aliased[0], chunked[0], f"aliased output, {where}")
        assert_bitwise(aliased[1], chunked[1], f"aliased present_state, {where}")
        if window == 0:
            continue

        legacy = {**inputs}
        if "past_state" in inputs:
            legacy["past_state"] = inputs["past_state"][window - 1]
        legacy_output, legacy_state = linear_attention(**legacy, **{**attrs, "state_window": 0}, **run)
        assert_bitwise(chunked[0], legacy_output, f"output vs W=0, {where}")
        assert_bitwise(chunked[1][window - 1], legacy_state, f"slot W-1 vs W=0 state, {where}")
        leading = max(0, window - seq_len)
        assert not chunked[1][:leading].any(), f"leading {leading} slots not exactly zero, {where}"
        assert not np.signbit(chunked[1][:leading]).any(), f"leading slots hold -0.0, {where}"
        if "past_state" in inputs and window > 1:
            bad = {**inputs, "past_state": poisoned(inputs["past_state"])}
            for alias in (False, True):
                got = linear_attention(**bad, **attrs, **run, aliased=alias)
                assert_bitwise(got[0], chunked[0], f"poisoned output (aliased={alias}), {where}")
                assert_bitwise(got[1], chunked[1], f"poisoned present_state (aliased={alias}), {where}")


@pytest.mark.slow
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_chunked_prefill_gives_the_same_bits_on_every_kernel_path(implementation: str) -> None:
    """Scalar or vector columns, workgroup or subgroup reduction: the chunked prefill has one order of every
    sum too, so every path of one geometry (16 or 32 row groups at most) gives identical outputs and states."""
    kernels = {path: kernel_or_skip(implementation, np.float32, path) for path in ("scalar", "workgroup")}
    size = kernels["scalar"].device.subgroup_size
    for index, (d_k, d_v) in enumerate(((3, 8), (17, 16), (128, 12))):
        inputs = make_inputs(np.random.default_rng(index), dtype=np.float32, batch=2, seq_len=C + 3, heads=(4, 2, 1),
                             d_k=d_k, d_v=d_v, window=3, past=True, decay_per_row=index % 2 == 1, beta_shared=False)
        attrs = {"q_num_heads": 4, "kv_num_heads": 2, "update_rule": UPDATE_RULES[(index + 1) % 4], "state_window": 3}
        for bound in (MAX_ROW_GROUPS, WIDE_ROW_GROUPS):
            groups = KernelSpec.for_dims(Case(inputs, attrs).dims(), bound).row_groups
            paths = ["scalar", "workgroup", *(["subgroup"] if size is not None and groups <= size else [])]
            results = {p: linear_attention(**inputs, **attrs, options=KernelOptions(
                implementation, path=p, max_row_groups=bound, prefill="chunked")) for p in paths}
            for path in paths[1:]:
                where = f"{implementation} chunked {path}@{bound} vs scalar, d_k={d_k} d_v={d_v}"
                assert_bitwise(results[path][0], results["scalar"][0], f"output, {where}")
                assert_bitwise(results[path][1], results["scalar"][1], f"present_state, {where}")


def _dims(seq_len: int) -> Dims:
    return Dims(batch=1, seq_len=seq_len, q_heads=1, kv_heads=1, key_heads=1, d_k=8, d_v=8, state_window=0,
                update_rule="linear", scale=1.0, dtype=np.dtype("float32"), has_past=False, decay_per_row=None,
                beta_shared=None)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_prefill_choice_and_pipeline_cache(implementation: str) -> None:
    """The token loop unless the chunked prefill is asked for, at every length; the two prefills of one
    geometry are two cached pipelines."""
    kernel_or_skip(implementation)
    choices = {prefill: LinearAttentionKernel(KernelOptions(implementation, prefill=prefill)) for prefill in PREFILLS}
    default = LinearAttentionKernel(KernelOptions(implementation))
    for seq_len in (1, CHUNK_SIZE - 1, CHUNK_SIZE, 4 * CHUNK_SIZE):
        dims = _dims(seq_len)
        assert choices["chunked"].spec_for(dims).chunked and not choices["token"].spec_for(dims).chunked
        assert not default.spec_for(dims).chunked
    token, chunked = choices["token"].spec_for(_dims(1)), choices["chunked"].spec_for(_dims(1))
    assert choices["token"].pipeline(token) is not choices["token"].pipeline(chunked)
    assert choices["token"].cached_pipelines == 2 and choices["token"].compilations == 2
    with pytest.raises(ValueError, match="prefill 'sometimes'"):
        KernelOptions(implementation, prefill="sometimes")


@pytest.mark.slow
@pytest.mark.parametrize("rule", ["gated", "gated_delta"])
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_strongly_decayed_seed_is_not_lost(implementation: str, rule: str) -> None:
    """A large seed under strong decays: its share of an output stays a normal float while the product of
    the decays alone falls below the smallest float32 (about ``e**-103``), and, on GPUs that flush
    subnormals to zero, below the smallest normal one (``e**-87``). The chunked prefill must decay the
    seed as the token loop decays its state, never form that product on its own (the H200 returned 0.0
    for an output of 5.99e-31 when it did). Keys and values are zero: every output is the seed's."""
    kernel_or_skip(implementation)
    batch, seq_len, heads, d, window = 1, 9, 2, 4, 2
    rng = np.random.default_rng(7)
    inputs = {
        "query": rng.uniform(0.5, 1.0, (batch, seq_len, heads * d)).astype(np.float32),
        "key": np.zeros((batch, seq_len, heads * d), np.float32),
        "value": np.zeros((batch, seq_len, heads * d), np.float32),
        "past_state": (1e10 * rng.uniform(0.5, 1.0, (window, batch, heads, d, d))).astype(np.float32),
        "decay": np.full((batch, seq_len, heads), -15.0, np.float32),
    }
    if rule == "gated_delta":
        inputs["beta"] = np.full((batch, seq_len, heads), 0.5, np.float32)
    attrs = {"q_num_heads": heads, "kv_num_heads": heads, "update_rule": rule, "state_window": window}
    case = Case(inputs=inputs, attrs=attrs)
    chunked = linear_attention(**inputs, **attrs, options=KernelOptions(implementation, prefill="chunked"))
    token = linear_attention(**inputs, **attrs, options=KernelOptions(implementation))
    assert np.all(chunked[0][:, :seq_len - 2] != 0), "a strongly decayed seed's share of an output lost"
    assert_agrees_with_oracle(case, chunked, label="chunked")
    assert_results_agree(case, chunked, token, labels=("chunked", "token loop"))


@pytest.mark.slow
@pytest.mark.parametrize("prefill", PREFILLS)
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_head_reads_no_row_past_its_own_d_k(implementation: str, prefill: str) -> None:
    """d_k = 5 in row groups of 4 rows: the second group's rows 5..7 are masked everywhere, for the pair matrices
    of the chunked prefill too. Read, they would be the next head's query and key rows, and a product with the
    zero a masked row holds is NaN where that row is infinite: so head 1's rows are all +Inf, and head 0's
    outputs and states must keep the bits they have when head 1's rows are finite."""
    kernel_or_skip(implementation)
    d_k, d_v = 5, 4
    inputs: dict[str, Any] = make_inputs(np.random.default_rng(11), dtype=np.float32, batch=1, seq_len=3,
                                         heads=(2, 2, 2), d_k=d_k, d_v=d_v, window=2, past=True, decay_per_row=True,
                                         beta_shared=False)
    attrs: dict[str, Any] = {"q_num_heads": 2, "kv_num_heads": 2, "update_rule": "gated_delta", "state_window": 2}
    options = KernelOptions(implementation, prefill=prefill)
    assert KernelSpec.for_sizes("float32", d_k, d_v).rows_per_thread == 4
    finite = linear_attention(**inputs, **attrs, options=options)
    spoiled: dict[str, Any] = {**inputs, **{name: inputs[name].copy() for name in ("query", "key")}}
    spoiled["query"][..., d_k:] = np.inf
    spoiled["key"][..., d_k:] = np.inf
    output, present = linear_attention(**spoiled, **attrs, options=options)
    assert_bitwise(output[..., :d_v], finite[0][..., :d_v], f"head 0's output, {prefill}")
    assert_bitwise(present[:, :, 0], finite[1][:, :, 0], f"head 0's present state, {prefill}")
