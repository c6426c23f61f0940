"""The arms of the swarm a campaign schedules between: an op, a size tier and a form of LinearAttention's kernel.

A unit's arm fixes what costs and what finds most: the op, the tier (its sizes, hence its cost per case) and,
for LinearAttention, which form of the WGSL kernel runs (token loops, chunked prefill, pipelines specialised on
the shape, a GPU's wide geometry). Within its arm a unit still draws the rest of its plan from its seed
(``fuzz.campaign.swarm.plan``, ``fuzz.campaign.conv_swarm.plan``). Tiers are read from ``TIERS`` and
``CONV_TIERS``, so a new tier is a new arm.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fuzz.campaign import conv_swarm, swarm
from fuzz.campaign.focus import Focus
from fuzz.campaign.worker import SWARM
from fuzz.model.ops import CAUSAL_CONV, LINEAR_ATTENTION

FORM_OF_BACKEND = {swarm.CHUNKED_RUNTIME: swarm.CHUNKED_FORM, swarm.SPECIALISED_RUNTIME: swarm.SPECIALISED_FORM,
                   swarm.WIDE_RUNTIME: swarm.WIDE_FORM, **{r: swarm.LOOP_FORM for r in swarm.KERNEL_RUNTIMES}}
"""The form of LinearAttention's kernel each kernel backend runs."""


@dataclass(frozen=True)
class Arm:
    """One arm: ``op``, ``tier`` (a swarm tier's name, or the fixed ``--limits`` name) and ``form`` (a swarm form of
    LinearAttention's kernel, ``""`` for the conv and fixed limits). ``weight`` is about the share of units the
    swarm gives it when each unit draws its own plan: the op's, the tier's and the form's shares together."""

    op: str
    tier: str
    form: str = ""
    weight: float = 1.0
    first: bool = False
    """Of the op's first tier: the only tier of the warm-up rounds (``swarm.WARM_UP_ROUNDS``)."""

    @property
    def key(self) -> str:
        return " ".join(x for x in (self.op, self.tier, self.form) if x)


def arms_of(ops: Sequence[str], limits: str) -> tuple[Arm, ...]:
    """Every arm of a campaign of ``ops`` under ``--limits limits``: the swarm's (op, tier, form), or one per op for
    a fixed slice."""
    if limits != SWARM:
        return tuple(Arm(op, limits, first=True) for op in ops)
    conv = conv_swarm.CONV_UNITS if {LINEAR_ATTENTION.name, CAUSAL_CONV.name} <= set(ops) else 1.0
    arms: list[Arm] = []
    if LINEAR_ATTENTION.name in ops:
        arms += [Arm(LINEAR_ATTENTION.name, t.name, form, (1 - conv) * t.weight * share, t is swarm.TIERS[0])
                 for t in swarm.TIERS for form, share in swarm.form_shares(t).items()]
    if CAUSAL_CONV.name in ops:
        arms += [Arm(CAUSAL_CONV.name, t.name, "", conv * t.weight, t is conv_swarm.CONV_TIERS[0])
                 for t in conv_swarm.CONV_TIERS]
    return tuple(arms)


def fits(arm: Arm, focus: Focus) -> bool:
    """Whether a unit of ``arm`` serves ``focus``: its op is focused, and its form is one a focused kernel runs (any,
    where no LinearAttention kernel is focused)."""
    forms = {FORM_OF_BACKEND[b] for b in focus.backends if b in FORM_OF_BACKEND}
    return arm.op in focus.ops and (not forms or not arm.form or arm.form in forms)
