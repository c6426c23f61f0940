"""Swarm scheduling: each work unit draws its own slice of the contract and keeps it for the unit.

Swarm testing (Groce, Zhang, Eide, Chen, Regehr, "Swarm Testing", ISSTA 2012) found that random
subsets of features per test run find more bugs than every feature in every run: a run that never
draws the features masking a bug explores the rest of the space more deeply. Here a unit's
``UnitPlan`` is drawn from its seed alone (so ``--seed`` reproduces every unit, shards included):
first its op (``unit_op``, by each op's share), then the op's own plan (``fuzz/ops/<op>/swarm.py``, its
``SWARM``: size tiers, sizes, layouts, features, the forms of its kernel). This module holds what every op's
plan shares: which backends a unit may leave out and at what shares (the slowest, ``SLOW_BACKENDS``; one of the
kernel's runtimes, ``KERNEL_RUNTIMES``; the builds in worker processes, ``WORKER_BUILD_SHARES``; the kernels on
other platforms than lavapipe, each op's ``PLATFORMS``, by ``other_platforms_out``), the share of units that
climb the error ratio (``TARGETING``), a unit's time budget and the warm-up rounds.

Inside a unit the shapes repeat, so compiled kernel pipelines and ORT sessions are reused; across
units the campaign covers the contract.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

from fuzz.engine.op_testing import OpLimits, for_limits
from fuzz.engine.properties import resolve_property
from fuzz.model.case import Case
from fuzz.model.ops import Op
from fuzz.ops import registry
from kernels.geometry import CHUNK_SIZE

FEW_CHUNKS = (2 * CHUNK_SIZE + 1, 8 * CHUNK_SIZE + 1)
"""A ``T`` range over three to nine chunks of the chunked prefill, most calls ending in a partial chunk."""

TENS_OF_CHUNKS = (16 * CHUNK_SIZE - 1, 64 * CHUNK_SIZE + 1)
"""A ``T`` range over 16 to 65 chunks, the prompts of a chat turn."""

HUNDREDS_OF_CHUNKS = (100 * CHUNK_SIZE, 128 * CHUNK_SIZE + 1)
"""A ``T`` range over 100 to 129 chunks, up to a prefill of 2048 tokens and one past it."""

LONG_CALLS = "docs/results/2026-12-06-long-calls/README.md"
"""What one call of the oracle and of each backend costs at ``T`` = 256, 1024 and 2048 on a software adapter,
from which the long tiers' weights, caps and examples are set (docs/campaign.md#swarm-shares)."""


SLOW_BACKENDS = ("ort-webgpu",)
"""Backends whose cost grows fastest with the shape on a software adapter: ORT's WebGPU EP compiles
sessions and shaders per shape, far costlier than any other backend (docs/campaign.md#swarm-shares).
A unit leaves each out with probability ``SIT_OUT[cheap]`` (its cost at most ``CHEAP_COST``) or ``SIT_OUT[costly]``.
The oracle and the WGSL kernels always take part, and every backend takes part in the properties
that feed invalid input (``fuzz.campaign.worker``): a refusal costs nothing."""

KERNEL_RUNTIMES = ("wgpu", "wgpu-dawn")
"""The two runtimes of the one WGSL kernel (wgpu-native with Naga, Dawn with Tint). A planted kernel bug
shows on either, a compiler difference only where both run: a unit takes both with probability
``BOTH_RUNTIMES``, else one of them, since together they cost a large share of a campaign's worker time
(docs/campaign.md#swarm-shares)."""


CHUNKED_RUNTIME = "wgpu-chunked"
"""The kernel's chunked prefill (on wgpu-native): ``CHUNKED_UNITS`` of the units run it in place of the
token loop on wgpu-native. On lavapipe its calls cost several times the loop's, hence the small share
(docs/campaign.md#swarm-shares)."""


SPECIALISED_RUNTIME = "wgpu-specialised"
"""The kernel's pipelines specialised on each call's sizes and layouts (on wgpu-native), the form a GPU runs
by default, which a software adapter does not compile unless asked: ``SPECIALISED_UNITS`` of the units of the
tiers that allow it (``Tier.specialised``) run it in place of wgpu-native's generic pipelines (never in the same
unit as the chunked prefill). Shapes repeat inside a unit, so a unit compiles a few pipelines more, not one per
case; still, on lavapipe those compilations dominate its calls, the more so the larger the heads
(docs/campaign.md#swarm-shares). Most such units are small-tier ones, whose pipelines compile fastest; the tiers
of heads over 64 allow it too, so that the sizes models use (128, 256) reach the specialised constants, each
unit within its time budget."""


WIDE_RUNTIME = "wgpu-wide"
"""The kernel's geometry of a GPU with subgroups of 32 (on Dawn): up to 32 row groups per column, with
the staged checkpoint stores that heads of ``d_k > 64`` then take, the path an H200 runs at real head
sizes, which lavapipe's own geometry (16 row groups) never compiles. ``WIDE_UNITS`` of the units whose
head sizes stage run it in place of Dawn's default geometry; on lavapipe its calls of such heads cost
several times Dawn's own (docs/campaign.md#swarm-shares)."""


def longest_range(seq_lens: tuple[tuple[int, int], ...]) -> tuple[int, int]:
    """The ``(min T, max T)`` range of a tier that reaches furthest (a steered unit's, where a change shows at long
    calls: ``fuzz.campaign.focus.Serves.long``)."""
    return max(seq_lens, key=lambda bounds: (bounds[1], bounds[0]))


TARGETING = 0.25
"""The share of units that climb the error/tolerance ratio (Hypothesis's target phase): the hunt for
near-tolerance cases costs bookkeeping per example that the other units spend on new cases
(docs/campaign.md#swarm-shares)."""

CHEAP_COST = 1 << 14
SIT_OUT = {True: 0.6, False: 0.9}

WORKER_BUILD_SHARES = {"ort-node": 0.5, "ort-webgpu-builtin": 0.5, "ort-web": 0.25}
"""The other WebGPU builds of ORT (``fuzz.backends.registry.WORKER_BUILDS``: a worker process each, Node, another
Python, a browser tab) and the share of the units of ``SLOW_BACKENDS`` (those in which ort-webgpu takes part, at
the op's ORT shapes, ``OpSwarm.ort_shape``, whether or
not it is in the campaign) that each joins: on a software adapter they cost what ort-webgpu costs or more (a new
session in the browser costs seconds: docs/results/2026-12-06-figures-from-comments/), so each costs a share of
the units, not every unit's rate.
Drawn after everything else, so that the other backends' plans of a seed stay as they were."""

PLATFORM_STREAM = 0x506C6174
"""Mixed into a unit's seed for the draw of the kernels on other platforms than lavapipe (each op's ``PLATFORMS``),
so that every other draw of a seed stays as it was."""


def other_platforms_out(seed: int, shares: Mapping[str, float]) -> frozenset[str]:
    """The platforms of ``shares`` (backend -> share of the op's units) that the unit of ``seed`` leaves out: each
    joins its share of the units."""
    rng = random.Random(seed ^ PLATFORM_STREAM)
    return frozenset(platform for platform, share in shares.items() if rng.random() >= share)


ORT_BUILDS = (*SLOW_BACKENDS, *WORKER_BUILD_SHARES)
"""Every WebGPU build of ORT: each compiles a shader per variant of its cache key (rule, past state, decay
layout, dtype, the workgroup ``d_k`` rounds up to, the tile ``d_v`` gives, ``T >= 16``)."""


REMOTE_ELEMENTS = 1 << 20
"""The most input elements of a case that the builds of ``WORKER_BUILD_SHARES`` check: each call ships its tensors to
a worker process, which at a long conv call of thousands of channels costs more than the rest of a unit, or gives no
answer within its time-out (``LONG_CALLS``)."""


IN_A_PAGE = ("wgpu-browser", "wgpu-conv-browser")
"""The kernels in a browser: every call's tensors cross to a page and back, as an ORT build's do to its worker."""


def takes_part(backend: str, case: Case) -> bool:
    """Whether ``backend`` checks ``case`` in a swarm unit of valid input: an ORT build only at ORT's shapes, a
    build in a worker process or a kernel in a browser only up to ``REMOTE_ELEMENTS`` input elements."""
    remote = backend in WORKER_BUILD_SHARES or backend in IN_A_PAGE
    if remote and sum(x.size for x in case.inputs.values()) > REMOTE_ELEMENTS:
        return False
    return backend not in ORT_BUILDS or swarm_of(case.op).ort_shape(case)

WARM_UP_ROUNDS = 2
"""Rounds of units (one unit per property each) that keep to the small tier at the start."""


UNIT_SECONDS = 8.0
"""Wall time after which a unit stops drawing new examples (a failure it is shrinking is finished
first): the cost budget that keeps a unit of large shapes from starving the rest."""


@dataclass(frozen=True)
class UnitPlan:
    """What one unit draws from, and how many examples it runs."""

    tier: str
    limits: OpLimits
    """The op's limits: ``Limits`` (LinearAttention) or ``ConvLimits`` (``fuzz.ops.causal_conv.swarm``)."""
    examples: int
    sit_out: frozenset[str] = frozenset()
    """Backends this unit leaves out (of ``SLOW_BACKENDS``, ``WORKER_BUILD_SHARES``, ``KERNEL_RUNTIMES`` and the op's
    ``PLATFORMS``)."""
    seconds: float = math.inf
    """Wall time after which the unit stops drawing examples (``UNIT_SECONDS`` for a swarm unit)."""
    targeting: bool = True
    """Whether the unit steers towards the worst error/tolerance ratio (``TARGETING`` of swarm units do)."""
    only: frozenset[str] | None = None
    """When set, exactly these backends run, whatever ``sit_out`` says (a focused unit: ``fuzz.campaign.focus``)."""

    def describe(self) -> str:
        """One line for logs and the report."""
        sizes = self.limits.describe()
        return (f"{self.tier}: {sizes}, {self.examples} examples"
                + (f", without {','.join(sorted(self.sit_out))}" if self.sit_out else "")
                + (", climbing the error ratio" if self.targeting else ""))


def subset(rng: random.Random, items: tuple, keep_all: float) -> tuple:
    """All of ``items`` with probability ``keep_all``, else a random non-empty subset (order kept)."""
    if rng.random() < keep_all:
        return items
    chosen = [x for x in items if rng.random() < 0.5]
    return tuple(chosen) or (rng.choice(items),)


def sitting_out(plan: UnitPlan, names: tuple[str, ...]) -> frozenset[str]:
    """The backends among ``names`` that ``plan`` leaves out, never every kernel runtime of the campaign
    (the first of them in ``KERNEL_RUNTIMES`` order then runs). A steered unit (``only``) runs its backends alone,
    and of the kernel's forms and other platforms among them the ones its plan drew, as any unit: each compiles
    pipelines of its own, which on a software adapter cost more than the unit's cases. Another op's kernel on another
    platform always sits out: it runs none of the unit's cases, and only starting its process would say so."""
    forms = (*KERNEL_RUNTIMES, CHUNKED_RUNTIME, SPECIALISED_RUNTIME, WIDE_RUNTIME)
    platforms = {p for op in registry.op_names() for p in swarm_of(op).platforms}
    others = platforms - set(swarm_of(for_limits(plan.limits).op.name).platforms)
    if plan.only is not None:
        drawn = set(forms) | platforms
        out = (set(names) - plan.only) | (set(plan.sit_out) & drawn & set(names))
        runtimes = [r for r in forms if r in names and r in plan.only]
    else:
        out = set(plan.sit_out) & set(names)
        runtimes = [r for r in forms if r in names]
    if runtimes and set(runtimes) <= out:
        out.discard(runtimes[0])
    return frozenset(out | (others & set(names)))


def other_builds_out(rng: random.Random, *, slow_unit: bool) -> frozenset[str]:
    """The builds of ``WORKER_BUILD_SHARES`` a unit leaves out: each joins its share of the units ORT's WebGPU EP is
    in."""
    return frozenset(build for build, share in WORKER_BUILD_SHARES.items()
                     if not (rng.random() < share and slow_unit))


@dataclass(frozen=True)
class OpSwarm:
    """One op's part of the swarm: its share of the units, its tiers and kernel forms (the campaign's arms), its
    plan, and which of its cases the ORT builds check."""

    share: float | None
    """The op's share of the units whose property applies to several ops; None: the rest (the op every property
    applies to, LinearAttention), after the ops that have a share."""
    tiers: tuple[tuple[str, float], ...]
    """``(name, weight)`` of each size tier, the first the tier of the warm-up rounds."""
    forms: Callable[[str], dict[str, float]]
    """``forms(tier)``: each form of the op's kernel a unit of ``tier`` may run, with its share of the tier's units
    (``{"": 1.0}`` where the op's kernel has one form)."""
    plan: Callable[..., UnitPlan]
    """``plan(seed, base_examples, *, warming_up, tier_name, form, only, longest)``: the op's plan of a unit."""
    ort_shape: Callable[[Case], bool]
    """Whether the ORT builds check a valid case of the op (``takes_part``)."""
    form_of_backend: Mapping[str, str] = field(default_factory=dict)
    """The form of the op's kernel each of its kernel backends runs, where its kernel has several."""
    platforms: tuple[str, ...] = ()
    """The backends that run the op's kernel on another platform (a browser, a second Vulkan driver): drawn into a
    share of the units like the kernel's forms, in a steered unit too (``sitting_out``), since each is several times
    slower than the adapter's own and compiles every pipeline anew."""
    own_units: float | None = None
    """Where set, the share of a campaign's units that the properties applying to this op alone take together
    (``turns``); None: each such property takes every turn of the round-robin, as every other property does."""


def swarm_of(op: Op | str) -> OpSwarm:
    """The swarm of ``op`` (an ``Op`` or its name): its package's ``SWARM``."""
    return cast(OpSwarm, registry.part(op, "swarm").SWARM)


OP_STREAM = 0x436F6E76
"""Mixed into a unit's seed for the op draw, so the op has its own random stream."""


def unit_op(seed: int, ops: tuple[str, ...]) -> str:
    """The op a swarm unit with this seed tests, among ``ops`` (those its property applies to): each op with a
    share (``OpSwarm.share``) takes that share of the draws, in the registry's order; the op without one, the rest."""
    if len(ops) == 1:
        return ops[0]
    draw, edge = random.Random(seed ^ OP_STREAM).random(), 0.0
    chosen = [name for name in registry.op_names() if name in ops]
    for name in chosen:
        share = swarm_of(name).share
        if share is not None:
            edge += share
            if draw < edge:
                return name
    return next((name for name in chosen if swarm_of(name).share is None), chosen[0])


def turns(properties: Sequence[str], ops: Sequence[str]) -> dict[str, float]:
    """The share of the round-robin's rounds in which each property takes its turn (``fuzz.campaign.shard``).

    A property whose only op among ``ops`` has ``own_units`` takes part of the turns, so that the properties of
    that op together take ``own_units`` of the campaign's units; every other property takes every turn. A campaign
    of such properties alone takes every turn of each."""
    own: dict[str, list[str]] = {}
    for name in properties:
        applies = [op for op in ops if resolve_property(name).applies_to(op)]
        if len(applies) == 1 and swarm_of(applies[0]).own_units is not None:
            own.setdefault(applies[0], []).append(name)
    shared = len(properties) - sum(map(len, own.values()))
    shares = {op: float(swarm_of(op).own_units or 0.0) for op in own}
    result = dict.fromkeys(properties, 1.0)
    if shared == 0:
        return result
    per_round = shared / (1.0 - sum(shares.values()))
    for op, names in own.items():
        result.update(dict.fromkeys(names, min(1.0, shares[op] * per_round / len(names))))
    return result


def op_share(op: str, ops: tuple[str, ...]) -> float:
    """About the share of the units of a campaign of ``ops`` that test ``op`` (``unit_op``'s draw)."""
    if len(ops) == 1:
        return 1.0
    share = swarm_of(op).share
    return share if share is not None else 1 - sum(swarm_of(o).share or 0.0 for o in ops if o != op)
