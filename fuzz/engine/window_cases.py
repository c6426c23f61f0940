"""The window's cases, written once for every op: short calls, poisoned past slots, select-and-resume.

Each takes the op's strategy for valid cases (``cases(limits, *, state_window=, seq_len=, has_past=,
notes=)``: LinearAttention's ``fuzz.ops.linear_attention.strategies.cases``, CausalConvWithState's
``fuzz.ops.causal_conv.strategies.conv_cases``) and the op's limits (anything with ``max_window``,
``min_seq_len``, ``max_seq_len`` and ``max_next_tokens``), and draws the window's part first.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from fuzz.model.case import POISON_KINDS, Case
from fuzz.ops.linear_attention.strategies import CasesFn, one_of_values, poisoned, seq_lens
from oracles.rollback import represented_acceptances

ALIASED_SHARE = 4
"""One general case in this many binds past and present state to one buffer (``bound_as_a_decoder_does``)."""


@st.composite
def bound_as_a_decoder_does(draw: st.DrawFn, cases: CasesFn, limits: Any, packs: bool = False) -> Case:
    """A general case, one in ``ALIASED_SHARE`` with past and present state bound to one buffer: a decoder's usual
    binding, and the only one that reads the seed from the present state, so a property that compares backends
    meets that path with every size, layout and dtype it draws, not only in the aliasing property's share. An
    aliased case never packs; the others pack as ``packs`` says."""
    if draw(st.integers(1, ALIASED_SHARE)) == 1:
        return draw(cases(limits, aliased=True))
    return draw(cases(limits, packs=packs))


@st.composite
def short_window_cases(draw: st.DrawFn, cases: CasesFn, limits: Any, packs: bool = False) -> Case:
    """``T < W`` with a past state (sometimes poisoned, sometimes bound as the present state too): the leading
    ``W - T`` slots must come out exactly zero, cleared over whatever the past left in them where one buffer holds
    both. ``packs``: sometimes several such cases in one call (``valid_cases``), each entry's past poisoned alike;
    an aliased binding never packs (``fuzz.engine.packing``)."""
    if limits.max_window < 2:
        raise ValueError("short_window_cases: needs a max_window >= 2")
    w = draw(st.integers(2, limits.max_window))
    aliased = draw(st.booleans())
    case = draw(cases(limits, state_window=st.just(w), seq_len=st.integers(1, min(w - 1, limits.max_seq_len)),
                      has_past=True, aliased=aliased, packs=packs and not aliased))
    return draw(st.sampled_from([None, *POISON_KINDS]).map(lambda kind: poisoned(case, kind)))


@st.composite
def poisoned_window_cases(draw: st.DrawFn, cases: CasesFn, limits: Any, packs: bool = False) -> Case:
    """``W >= 2`` with a past state whose slots ``0..W-2`` hold NaN, Inf, huge values or garbage bits, sometimes
    bound as the present state too (``packs`` and aliasing as for ``short_window_cases``)."""
    aliased = draw(st.booleans())
    case = draw(cases(limits, min_window=2, has_past=True, aliased=aliased, packs=packs and not aliased))
    return poisoned(case, draw(one_of_values(POISON_KINDS)))


@st.composite
def resume_window_cases(draw: st.DrawFn, cases: CasesFn, limits: Any) -> Case:
    """A draft call followed by the tokens of the next call, for select-and-resume.

    The case holds ``T = draft + next`` positions; ``notes["draft_len"]`` says where the draft ends and
    ``notes["accepted"]`` how many draft positions were accepted: 0 (resume from the original past) or
    any count the window represents (0 first, so failures shrink to it).
    """
    w = draw(st.integers(1, limits.max_window))
    draft = draw(seq_lens(limits, w))
    extra = draw(st.integers(1, limits.max_next_tokens))
    accepted = draw(one_of_values((0, *represented_acceptances(draft, w))))
    return draw(cases(limits, state_window=st.just(w), seq_len=st.just(draft + extra),
                      notes={"draft_len": draft, "accepted": accepted}))
