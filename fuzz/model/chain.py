"""A chain of calls cut from one case: what a speculative decoder does between rollbacks.

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

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from fuzz.model.case import Case

AcceptMode = Literal["rebind", "copy"]
"""How a device-resident chain is asked to resume (``kernels.LinearAttentionKernel.accept``'s ``mode``)."""

ACCEPT_MODES: tuple[AcceptMode, ...] = ("rebind", "copy")


def token_spans(case: Case, *spans: tuple[int, int]) -> Case:
    """The case restricted to the concatenation of token spans ``[start, stop)`` of its sequence axis."""
    axis = case.op.sequence_axis(case.attrs)

    def cut(x: np.ndarray) -> np.ndarray:
        return np.concatenate([np.take(x, np.arange(a, b), axis=axis) for a, b in spans], axis=axis)
    return case.with_inputs(**{n: cut(x) for n, x in case.inputs.items() if n in case.op.sequence_inputs})


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
