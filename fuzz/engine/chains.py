"""Chains of calls for ``device-chain`` (``fuzz.model.chain.Chain``), for any op and LinearAttention's own.

A chain's calls' lengths, what was accepted of each and the resume path asked for are drawn (``chain_lengths``,
``chain_of``) and written into the case's notes, which ``Chain.of`` reads back. ``window_chain_cases`` draws the
chain's case through any op's strategy of valid cases; LinearAttention's ``chain_cases`` also draws slots wide
enough to be rebound on a GPU.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import Any

from hypothesis import strategies as st

from fuzz.model.case import Case
from fuzz.model.chain import ACCEPT_MODES, Chain
from fuzz.ops.linear_attention.strategies import (
    CasesFn,
    Limits,
    build_case,
    layouts,
    numerics,
    one_of_values,
    seq_lens,
    shapes,
    windows,
)
from oracles.rollback import represented_acceptances

MAX_CALLS = 4
"""Calls per chain: 2 to this, each a kernel dispatch (the campaign runs every property round-robin)."""


def chain_lengths(draw: st.DrawFn, limits: Any, w: int) -> tuple[int, ...]:
    """2 to ``MAX_CALLS`` call lengths, each drawn on its own (``seq_lens``: ``T = W`` and ``T = W - 1`` often, so
    a present state written by a call of ``T >= W`` is often the next decode call's, whose leading slots must then
    be stored as zeros again: ``kernels.resident.BoundCall.encode``)."""
    return tuple(draw(seq_lens(limits, w)) for _ in range(draw(st.integers(2, MAX_CALLS))))


def chain_of(draw: st.DrawFn, call_lens: tuple[int, ...], w: int) -> Chain:
    """The chain of calls of ``call_lens``: each acceptance drawn like the select-and-resume cases' (0 first, so
    failures shrink to it), then the path asked for."""
    accepted = tuple(draw(one_of_values((0, *represented_acceptances(n, w)))) for n in call_lens[:-1])
    return Chain(call_lens, accepted, draw(one_of_values(ACCEPT_MODES)))


@st.composite
def window_chain_cases(draw: st.DrawFn, cases: CasesFn, limits: Any) -> Case:
    """A chain of calls of one shape with a past state and ``W >= 1``, through the op's strategy of valid cases
    (``cases``, under ``limits``: as ``fuzz.engine.window_cases`` takes them); an aliased binding half the time
    (it resumes by copy only, and accepting 0 tokens there restores a saved seed)."""
    w = draw(st.integers(1, limits.max_window))
    chain = chain_of(draw, chain_lengths(draw, limits, w), w)
    return draw(cases(limits, state_window=st.just(w), seq_len=st.just(sum(chain.call_lens)), has_past=True,
                      aliased=draw(st.booleans()), notes=chain.notes()))


@lru_cache(maxsize=16)
def _wide_slots(limits: Limits) -> Limits:
    """``limits`` with ``d_k`` and ``d_v`` the largest power of two they allow (of the pool, if pooled).

    Rebinding needs slots at offsets the device can bind: on lavapipe (16 or 32 bytes) most slots
    are, on GPUs with WebGPU's usual 256 bytes only slot 0 and slots of a multiple of 256 bytes
    (8 x 8 float32 heads, say). Chains drawn under these limits reach the rebind path there too.
    """
    pool = limits.head_dim_pool or (1 << (limits.max_head_dim.bit_length() - 1),)
    powers = [d for d in pool if d & (d - 1) == 0]
    return replace(limits, head_dim_pool=(max(powers),)) if powers else limits


@st.composite
def chain_cases(draw: st.DrawFn, limits: Limits) -> Case:
    """A LinearAttention chain (``chain_lengths``, ``chain_of``) of one shape with a past state and ``W >= 1``, an
    aliased binding half the time; half the chains have wide slots (``_wide_slots``)."""
    w = draw(windows(limits, 1))
    call_lens = chain_lengths(draw, limits, w)
    sizes = _wide_slots(limits) if draw(st.booleans()) else limits
    shape = draw(shapes(sizes, state_window=st.just(w), seq_len=st.just(sum(call_lens))))
    layout = draw(layouts(limits, has_past=True))
    chain = chain_of(draw, call_lens, w)
    return build_case(shape, layout, draw(numerics()), aliased=draw(st.booleans()), notes=chain.notes())
