"""The arms of the swarm a campaign schedules between: an op, a size tier and a form of the op's kernel.

A unit's arm fixes what costs and what finds most: the op, the tier (its sizes, hence its cost per case) and,
where the op's kernel has several forms (LinearAttention's: token loops, chunked prefill, pipelines specialised on
the shape, a GPU's wide geometry), which one runs. Within its arm a unit still draws the rest of its plan from its
seed (the op's ``OpSwarm.plan``). Tiers and forms are read from each op's ``OpSwarm``, so a new tier, form or op
is a new arm.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fuzz.campaign.focus import Focus
from fuzz.campaign.swarm import op_share, swarm_of
from fuzz.campaign.worker import SWARM
from fuzz.ops import registry


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
    arms: list[Arm] = []
    for op in (name for name in registry.op_names() if name in ops):
        swarm = swarm_of(op)
        share = op_share(op, tuple(ops))
        arms += [Arm(op, name, form, share * weight * form_share, i == 0)
                 for i, (name, weight) in enumerate(swarm.tiers) for form, form_share in swarm.forms(name).items()]
    return tuple(arms)


def fits(arm: Arm, focus: Focus) -> bool:
    """Whether a unit of ``arm`` serves ``focus``: its op is focused, and its form is one a focused kernel runs (any,
    where no kernel of the op is focused, or the op's kernel has one form)."""
    form_of = swarm_of(arm.op).form_of_backend if arm.form else {}
    forms = {form_of[b] for b in focus.backends if b in form_of}
    return arm.op in focus.ops and (not forms or not arm.form or arm.form in forms)
