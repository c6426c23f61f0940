"""Long calls: the default swarm's plans reach every bucket of ``T``, of the chunks a chunked prefill runs and of
the head sizes models use, on every kernel path; the conv plans every bucket of conv ``T``; and cases of 2048
tokens are drawn without tripping Hypothesis's health checks."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from fuzz.campaign import swarm
from fuzz.model.case import Case
from fuzz.model.ops import CAUSAL_CONV
from fuzz.ops.causal_conv import swarm as conv_swarm
from fuzz.ops.causal_conv.coverage import SEQ_LENS as CONV_SEQ_LENS
from fuzz.ops.causal_conv.strategies import conv_cases
from fuzz.ops.linear_attention import coverage
from fuzz.ops.linear_attention import swarm as la_swarm
from fuzz.ops.linear_attention.strategies import Limits, cases
from kernels.geometry import CHUNK_SIZE

SEEDS = range(6000)
KERNEL_PATHS = (*swarm.KERNEL_RUNTIMES, swarm.CHUNKED_RUNTIME, swarm.WIDE_RUNTIME, swarm.SPECIALISED_RUNTIME)
EVERY_BACKEND = ("oracle", *KERNEL_PATHS)


@cache
def plans() -> list[swarm.UnitPlan]:
    return [la_swarm.plan(seed, 50) for seed in SEEDS]


@cache
def conv_plans() -> list[swarm.UnitPlan]:
    return [conv_swarm.plan(seed, 50) for seed in SEEDS]


def _draws(limits: Limits, lo: int, hi: int) -> bool:
    """Whether a unit of ``limits`` can draw a ``T`` in ``lo..hi``."""
    return limits.min_seq_len <= hi and limits.max_seq_len >= lo


def _running(plan: swarm.UnitPlan) -> set[str]:
    return set(EVERY_BACKEND) - swarm.sitting_out(plan, EVERY_BACKEND)


@pytest.mark.parametrize(("lo", "hi"), coverage.SEQ_LENS)
def test_every_t_bucket_is_drawn(lo: int, hi: int) -> None:
    assert any(_draws(p.limits, lo, hi) for p in plans()), (lo, hi)


@pytest.mark.parametrize(("lo", "hi"), CONV_SEQ_LENS)
def test_every_conv_t_bucket_is_drawn(lo: int, hi: int) -> None:
    assert any(_draws(p.limits, lo, hi) for p in conv_plans()), (lo, hi)


@pytest.mark.parametrize(("lo", "hi"), coverage.PREFILL_CHUNKS)
def test_every_count_of_chunks_is_run_by_a_chunked_prefill(lo: int, hi: int) -> None:
    """A unit running the chunked prefill draws calls of ``lo..hi`` chunks, small heads and large ones alike."""
    tokens = ((lo - 1) * CHUNK_SIZE + 1, hi * CHUNK_SIZE)
    chunked = [p for p in plans() if swarm.CHUNKED_RUNTIME in _running(p) and _draws(p.limits, *tokens)]
    assert any(max(p.limits.head_dim_pool) <= 32 for p in chunked), (lo, hi)
    if lo < 100:  # over a hundred chunks (1585 tokens and more) are for heads up to 129 only
        assert any(max(p.limits.head_dim_pool) >= 128 for p in chunked), (lo, hi)


@pytest.mark.parametrize("path", KERNEL_PATHS)
@pytest.mark.parametrize("size", [128, 256])
def test_every_kernel_path_runs_the_head_sizes_models_use(path: str, size: int) -> None:
    """Each kernel path runs heads of 128 and of 256; the token loops and the chunked prefill at long calls too
    (257 tokens or more), where the others cost the most on a software adapter and take the shorter ones."""
    units = [p for p in plans() if size in p.limits.head_dim_pool and path in _running(p)]
    assert units, (path, size)
    if path in (*swarm.KERNEL_RUNTIMES, swarm.CHUNKED_RUNTIME):
        assert any(p.limits.max_seq_len >= 257 for p in units), (path, size)


def test_long_tiers_draw_few_examples_and_keep_the_oracle_small() -> None:
    """A long unit checks few cases, and its cost cap keeps a call's states (the oracle's float64 memory) small."""
    tiers = {t.name: t for t in la_swarm.TIERS}
    long = [p for p in plans() if p.limits.max_seq_len > 64]
    assert long and all(p.examples == tiers[p.tier].examples < 50 for p in long)
    for p in long:
        slot = max(p.limits.max_state_elements, max(p.limits.head_dim_pool) ** 2)
        assert slot * p.limits.max_seq_len <= 1 << 26, p.describe()


def test_remote_builds_sit_out_cases_too_large_to_ship() -> None:
    big = Case(inputs={"input": np.zeros((1, 2049, 1024), "float32"), "weight": np.ones((1024, 1, 4), "float32")},
               attrs={"channels_last": 1}, op=CAUSAL_CONV)
    assert not swarm.takes_part("ort-web", big) and not swarm.takes_part("ort-node", big)
    assert swarm.takes_part("ort-webgpu", big) and swarm.takes_part("oracle", big)


@pytest.mark.slow
def test_cases_of_2048_tokens_pass_hypothesis_health_checks() -> None:
    """Cases are realised from a drawn seed, so a call of 2049 tokens draws a few choices, not its values: no
    ``data_too_large``; and at small heads no ``too_slow`` either (health checks on, unlike the suite's profiles,
    which suppress ``too_slow``: a long conv tier's case costs the oracle up to a second)."""
    la = Limits(max_batch=1, min_seq_len=2040, max_seq_len=2049, max_heads=1, max_head_dim=4, head_dim_pool=(4,),
                dtypes=("float32",), max_window=2)
    conv = next(p.limits for p in conv_plans() if p.tier == "conv long" and p.limits.max_seq_len == 2049)
    seen: list[int] = []

    @settings(max_examples=5, database=None, deadline=None)
    @given(case=cases(la))
    def small_heads(case: Case) -> None:
        seen.append(case.seq_len)

    @settings(max_examples=3, database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(case=conv_cases(conv))
    def many_channels(case: Case) -> None:
        seen.append(case.seq_len)

    small_heads()
    many_channels()
    assert len(seen) == 8 and min(seen) >= 1600


@pytest.mark.slow
def test_the_real_hybrid_layer_keeps_to_short_calls_where_a_long_tier_admits_its_channels() -> None:
    """Qwen3.5's layer (8192 channels, 32 LinearAttention heads of 128) fits a long conv tier's elements at
    hundreds of tokens, where its float64 oracle would keep gigabytes: it is drawn at ``REAL_MAX_TOKENS`` at most."""
    from fuzz.engine.hybrid_block import REAL_LAYER, REAL_MAX_TOKENS, Block, hybrid_cases

    limits = next(p.limits for p in conv_plans() if p.tier == "conv long" and p.limits.max_seq_len == 129)
    assert REAL_LAYER.widths.channels * (limits.min_seq_len + REAL_LAYER.kernel) <= limits.max_elements
    blocks: list[Block] = []

    @settings(max_examples=12, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(case=hybrid_cases(limits))
    def drawn(case: Case) -> None:
        blocks.append(Block.of(case))

    drawn()
    assert len(blocks) == 12
    assert all(b.kv_heads * b.d_k * b.d_v < REAL_LAYER.kv_heads * REAL_LAYER.d_k * REAL_LAYER.d_v for b in blocks)
    assert limits.min_seq_len > REAL_MAX_TOKENS
