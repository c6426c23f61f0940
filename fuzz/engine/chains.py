"""Chains of calls cut from one case: what a speculative decoder does between rollbacks.

A chain case holds the tokens of every call of the chain back to back (``T`` is the sum of the
calls' lengths) and the past state of the first call; its notes say how long each call is (calls of
one chain may differ, as a decoder's verify and decode calls do, so that one device-resident present
state is written by calls of ``T >= W`` and ``T < W`` in turn), how many tokens of
each call but the last were accepted (``oracles.rollback``: 0, or a count the window represents;
all of them continues from the last state) and which select-and-resume path a device-resident
backend should ask for (``"rebind"`` where the slot's offset allows it, else a GPU copy;
``"copy"`` always). ``Chain`` reads those notes back and cuts the case into its calls, so a
backend and the property see the same chain, and a saved chain case replays as it ran.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Literal

import numpy as np
from hypothesis import strategies as st

from fuzz.engine.case import Case
from fuzz.engine.strategies import Limits, build_case, layouts, numerics, one_of_values, seq_lens, shapes, windows
from oracles.prefix import SEQUENCE_INPUTS
from oracles.rollback import represented_acceptances

MAX_CALLS = 4
"""Calls per chain: 2 to this, each a kernel dispatch (the campaign runs every property round-robin)."""

AcceptMode = Literal["rebind", "copy"]
"""How a device-resident chain is asked to resume (``kernels.LinearAttentionKernel.accept``'s ``mode``)."""

ACCEPT_MODES: tuple[AcceptMode, ...] = ("rebind", "copy")


def token_spans(case: Case, *spans: tuple[int, int]) -> Case:
    """The case restricted to the concatenation of token spans ``[start, stop)``."""
    def cut(x: np.ndarray) -> np.ndarray:
        return np.concatenate([x[:, a:b] for a, b in spans], axis=1)
    return case.with_inputs(**{n: cut(x) for n, x in case.inputs.items() if n in SEQUENCE_INPUTS})


@dataclass(frozen=True)
class Chain:
    """The calls of a chain case: their lengths, what was accepted of each, and the resume path asked for."""

    call_lens: tuple[int, ...]
    """Tokens of each call, in order."""
    accepted: tuple[int, ...]
    """Tokens accepted of each call but the last (what the next call resumes from)."""
    mode: AcceptMode

    def __post_init__(self) -> None:
        if len(self.accepted) != len(self.call_lens) - 1:
            raise ValueError(f"chain: {len(self.call_lens)} calls need {len(self.call_lens) - 1} acceptances, "
                             f"got {len(self.accepted)}")

    @property
    def calls(self) -> int:
        """How many calls the chain makes (one more than it accepts from)."""
        return len(self.call_lens)

    @classmethod
    def of(cls, case: Case) -> Chain:
        """The chain a case's notes describe (``notes()`` wrote them; a case saved when every call of a
        chain had one length says ``call_len`` instead of ``call_lens``)."""
        notes = case.notes
        accepted = tuple(int(a) for a in notes["chain_accepted"])
        lens = notes["call_lens"] if "call_lens" in notes else [notes["call_len"]] * (len(accepted) + 1)
        return cls(tuple(int(n) for n in lens), accepted, notes["accept_mode"])

    def notes(self) -> dict[str, Any]:
        """The case notes that describe this chain (JSON-ready)."""
        return {"call_lens": list(self.call_lens), "chain_accepted": list(self.accepted), "accept_mode": self.mode}

    def call(self, case: Case, index: int, past_state: np.ndarray | None = None) -> Case:
        """Call ``index`` of the chain as a case of its own: its tokens, seeded with ``past_state``
        (default: the case's, which is the first call's)."""
        start = sum(self.call_lens[:index])
        call = token_spans(case, (start, start + self.call_lens[index]))
        return call if past_state is None else call.with_inputs(past_state=past_state)


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
    """A chain of 2 to ``MAX_CALLS`` calls of one shape with a past state and ``W >= 1``.

    Each call's length is drawn on its own (``seq_lens``: ``T = W`` and ``T = W - 1`` often, so a present
    state written by a call of ``T >= W`` is often the next decode call's, whose leading slots must then be
    stored as zeros again: ``kernels.BoundCall.encode``). Each acceptance is drawn like
    ``strategies.resume_cases``' (0 first, so failures shrink to it),
    then the path asked for and the binding: an aliased one resumes by copy only, and accepting 0
    tokens there restores a saved seed. Half the chains have wide slots (``_wide_slots``).
    """
    w = draw(windows(limits, 1))
    calls = draw(st.integers(2, MAX_CALLS))
    call_lens = tuple(draw(seq_lens(limits, w)) for _ in range(calls))
    sizes = _wide_slots(limits) if draw(st.booleans()) else limits
    shape = draw(shapes(sizes, state_window=st.just(w), seq_len=st.just(sum(call_lens))))
    layout = draw(layouts(limits, has_past=True))
    accepted = tuple(draw(one_of_values((0, *represented_acceptances(n, w)))) for n in call_lens[:-1])
    chain = Chain(call_lens, accepted, draw(one_of_values(ACCEPT_MODES)))
    return build_case(shape, layout, draw(numerics()), aliased=draw(st.booleans()), notes=chain.notes())
