"""How each op is tested: its strategies, its exact answer with tolerance blocks, where its elements are.

``fuzz.model.ops.Op`` is the contract of an op; an ``OpTesting`` adds what the engine needs on top of it,
which draws on Hypothesis and the tolerance model and so sits in this layer: the op's ``Limits`` presets,
its strategies (valid cases, the window's cases through ``fuzz.engine.window_cases``, invalid cases, and
device chains where the op has them), its float64 answer with the blocks of the tolerance model, the
depth of each result, and how an element of a result is named in a mismatch report. The properties
(``fuzz.engine.properties``) are written once against this; ``for_op(op)`` finds an op's,
``for_limits(limits)`` the one whose limits a unit draws from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from hypothesis import strategies as st

from fuzz.engine import tolerance
from fuzz.engine.bad_inputs import RULES, invalid_cases
from fuzz.engine.chains import chain_cases, window_chain_cases
from fuzz.engine.conv_bad_inputs import CONV_RULES, invalid_conv_cases
from fuzz.engine.conv_strategies import ConvLimits, conv_cases
from fuzz.engine.conv_tolerance import conv_depth, exact_conv_answer
from fuzz.engine.strategies import Limits, cases, resume_cases
from fuzz.engine.window_cases import poisoned_window_cases, resume_window_cases, short_window_cases
from fuzz.model.case import Case
from fuzz.model.ops import CAUSAL_CONV, LINEAR_ATTENTION, Op

OpLimits = Limits | ConvLimits
"""The limits of any op: which op a unit tests follows from the type of its limits."""

Strategy = Callable[[Any], st.SearchStrategy[Case]]
"""A strategy of cases under an op's limits."""

Coordinates = dict[str, Any]
"""Where an element is, in the op's own terms: ``slot`` and ``batch`` (or None), and the rest as
``(name, index)`` pairs under ``"coordinates"``, or LinearAttention's ``head``/``row``/``col``."""

PRESETS = ("ci", "default", "campaign", "big")
"""The ``Limits`` presets every op has, by name (``--limits``)."""


@dataclass(frozen=True)
class OpTesting:
    """Everything the engine needs to test one op."""

    op: Op
    limits_type: type
    """``Limits`` or ``ConvLimits``: its ``ci()``, ``default()``, ``campaign()``, ``big()`` presets."""
    cases: Callable[..., st.SearchStrategy[Case]]
    """Valid cases: ``cases(limits, *, min_window=0, has_past=None, aliased=False, state_window=None,
    seq_len=None, notes=None, packs=False)``."""
    resume_cases: Strategy
    invalid_cases: Strategy
    rules: tuple[str, ...]
    """The rules ``invalid_cases`` breaks, as ``notes["broken_rule"]`` names them."""
    exact: Callable[[dict[str, Any], dict[str, Any]], Any]
    """The float64 answer with tolerance blocks (``part(tensor)``, ``peak``, ``reseeded_at``)."""
    depth: Callable[[Any, str, int | None], int]
    """``depth(dims, tensor, tokens)``: sequential operations behind one element (``tokens``: those the call ran,
    when not the case's own ``T``)."""
    locate: Callable[[Any, str, tuple[int, ...]], Coordinates]
    """``locate(dims, tensor, index)``: an element's coordinates in the op's terms."""
    chain_cases: Strategy | None = None
    """Device-resident chains (``device-chain``), where the op has a kernel that runs them."""

    def short_cases(self, limits: Any, packs: bool = False) -> st.SearchStrategy[Case]:
        return short_window_cases(self.cases, limits, packs)

    def poisoned_cases(self, limits: Any, packs: bool = False) -> st.SearchStrategy[Case]:
        return poisoned_window_cases(self.cases, limits, packs)

    def preset(self, name: str) -> Any:
        """The op's limits preset ``name`` (one of ``PRESETS``)."""
        if name not in PRESETS:
            raise KeyError(f"unknown limits {name!r}; known: {', '.join(PRESETS)}")
        return getattr(self.limits_type, name)()


def _la_exact(inputs: dict[str, Any], attrs: dict[str, Any]) -> Any:
    return tolerance.exact_answer(inputs, attrs)


def _la_depth(dims: Any, tensor: str, tokens: int | None) -> int:
    """Tokens (one state update each) plus ``d_k`` (the dot products of retrieval and readout)."""
    return (dims.seq_len if tokens is None else tokens) + dims.d_k


def la_locate(d_v: int, tensor: str, index: tuple[int, ...]) -> Coordinates:
    """``output`` ``(B, T, H_out*d_v)``: batch, token, head, value column; a state: slot, batch, head, key row,
    value column."""
    if tensor == "output":
        batch, token, column = index
        return {"slot": None, "batch": batch, "head": column // d_v, "row": token, "col": column % d_v}
    slot = index[0] if len(index) == 5 else None
    batch, head, row, col = index[-4:]
    return {"slot": slot, "batch": batch, "head": head, "row": row, "col": col}


def _conv_locate(dims: Any, tensor: str, index: tuple[int, ...]) -> Coordinates:
    """An element of ``output`` or of a state slot: batch, channel (or channel axes), spatial indices, position."""
    slot = index[0] if tensor != "output" and dims.state_window else None
    rest = index[1:] if slot is not None else index
    batch = rest[0]
    if dims.channels_last:
        position, channels = rest[1], rest[2:]
        named = [(f"channel axis {i + 1}" if len(channels) > 1 else "channel", c) for i, c in enumerate(channels)]
    else:
        named = [("channel", rest[1]), *((f"spatial axis {i + 1}", s) for i, s in enumerate(rest[2:-1]))]
        position = rest[-1]
    what = "position" if tensor == "output" else "state position"
    return {"slot": slot, "batch": batch, "coordinates": (*named, (what, position))}


LINEAR_ATTENTION_TESTING = OpTesting(
    op=LINEAR_ATTENTION, limits_type=Limits, cases=cases, resume_cases=resume_cases, invalid_cases=invalid_cases,
    rules=RULES, exact=_la_exact, depth=_la_depth, chain_cases=chain_cases,
    locate=lambda dims, tensor, index: la_locate(dims.d_v, tensor, index),
)

def _conv_chain_cases(limits: ConvLimits) -> st.SearchStrategy[Case]:
    """Chains of ``ndim = 1`` calls: the kernels that run chains (``kernels.causal_conv``) run that alone."""
    return window_chain_cases(conv_cases, replace(limits, ndims=(1,)))


CAUSAL_CONV_TESTING = OpTesting(
    op=CAUSAL_CONV, limits_type=ConvLimits, cases=conv_cases, resume_cases=partial(resume_window_cases, conv_cases),
    invalid_cases=invalid_conv_cases, rules=CONV_RULES, exact=exact_conv_answer,
    depth=lambda dims, tensor, tokens: conv_depth(dims, tensor), locate=_conv_locate, chain_cases=_conv_chain_cases,
)

TESTING: Mapping[str, OpTesting] = {t.op.name: t for t in (LINEAR_ATTENTION_TESTING, CAUSAL_CONV_TESTING)}
"""Every op's testing, by op name."""


def for_op(op: Op | str) -> OpTesting:
    """The testing of ``op`` (an ``Op`` or its name)."""
    return TESTING[op if isinstance(op, str) else op.name]


def for_limits(limits: Any) -> OpTesting:
    """The testing of the op whose limits these are (``Limits``: LinearAttention; ``ConvLimits``: the conv)."""
    for candidate in TESTING.values():
        if isinstance(limits, candidate.limits_type):
            return candidate
    raise TypeError(f"no op has limits of type {type(limits).__name__}")


def exact_for(case: Case) -> Any:
    """The float64 answer to a valid case, with its tolerance blocks."""
    return for_op(case.op).exact(case.inputs, case.attrs)
