"""LinearAttention's swarm plans: each of its units draws its own slice of the op's contract from its seed.

A unit of LinearAttention (``fuzz.campaign.swarm``: swarm testing, Groce et al.; the op drawn first) draws:

- a size tier (``TIERS``): most units small and fast, some at the sizes real models use (head sizes
  of 64-256, up to 32 heads, batch up to 4), a few at the lengths of real prompts (to 2049 tokens, over
  a hundred chunks of the chunked prefill), budgeted by cost: a tier caps state size times sequence
  length (so 32 heads come with small heads, d = 256 with few, a long call with a small state), and a
  unit stops drawing examples after ``UNIT_SECONDS`` (a long tier's: fewer examples, its own time); the
  first ``WARM_UP_ROUNDS`` keep to the small tier;
- within the tier, a pool of one or two head sizes weighted towards the sizes models use, odd and
  non-power-of-two sizes, and sizes on both sides of each boundary of the kernel's geometry classes
  (``kernels.geometry``: rows per invocation change at 64, 128, 192; row groups double at
  4, 8, 16, 32; column tiles at powers of two up to 64);
- one head layout: MHA, GQA with ratios up to 8 in either direction, ``n_k`` any divisor of ``H_kv``
  (shared key heads strictly between 1 and ``H_kv`` drawn often where they exist);
- a range of ``T`` (1-8 most often, long calls sometimes, around the chunked prefill's threshold in one
  small unit of six), a batch cap, and which features are on:
  a subset of the update rules, of the decay and beta layouts, of the dtypes, explicit scales, and
  whether the slowest backend takes part (``SLOW_BACKENDS``), which of the two runtimes of the
  WGSL kernel run it (``KERNEL_RUNTIMES``: one of them, or both), whether the chunked prefill, a GPU's
  specialised pipelines or a GPU's geometry (``CHUNKED_RUNTIME``, ``SPECIALISED_RUNTIME``,
  ``WIDE_RUNTIME``) runs in place of one of them, whether the kernel also runs on another platform than
  lavapipe (``PLATFORMS``: SwiftShader, a browser), and whether the
  unit climbs the error ratio (``TARGETING``). The oracle always takes part.

The names in capitals above that this module does not define are the swarm's, shared by every op
(``fuzz.campaign.swarm``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from fuzz.campaign.swarm import (
    CHEAP_COST,
    CHUNKED_RUNTIME,
    FEW_CHUNKS,
    HUNDREDS_OF_CHUNKS,
    KERNEL_RUNTIMES,
    ORT_BUILDS,
    SIT_OUT,
    SLOW_BACKENDS,
    SPECIALISED_RUNTIME,
    TARGETING,
    TENS_OF_CHUNKS,
    UNIT_SECONDS,
    WIDE_RUNTIME,
    OpSwarm,
    UnitPlan,
    longest_range,
    other_builds_out,
    other_platforms_out,
    subset,
)
from fuzz.model.case import Case
from fuzz.ops.linear_attention.strategies import Limits
from kernels.geometry import CHUNK_SIZE, geometry
from oracles.validation import UPDATE_RULES, ValidationError


@dataclass(frozen=True)
class Tier:
    """A size class of units: how often it is drawn and what it may draw."""

    name: str
    weight: float
    head_sizes: tuple[int, ...]
    """Head sizes a unit's pool is drawn from (with repeats as weights)."""
    max_heads: int
    seq_lens: tuple[tuple[int, int], ...]
    """``(min T, max T)`` ranges a unit draws one of (with repeats as weights)."""
    max_batch: int
    max_cost: int
    """Cap on the state elements of one slot (``B * H_kv * d_k * d_v``) times the longest ``T``: what
    a backend call costs grows with both. A single head of the largest size is always allowed."""
    examples: int | None = None
    """Most examples a unit draws (None: the campaign's count per unit): a tier of long calls checks few cases,
    each costing the oracle and the kernels up to seconds on a software adapter (``LONG_CALLS``)."""
    seconds: float | None = None
    """Wall time after which a unit stops drawing examples (None: ``UNIT_SECONDS``)."""
    chunked_units: float | None = None
    """The share of its units that run the chunked prefill (None: ``CHUNKED_UNITS``): long calls are what the
    chunked prefill is for."""
    specialised: bool = False
    """Whether ``SPECIALISED_UNITS`` of its units run the specialised pipelines."""


PREFILL_SEQ_LENS = (CHUNK_SIZE - 1, 2 * CHUNK_SIZE + 3)
"""A ``T`` range over one to two chunks of the chunked prefill (``kernels.geometry.CHUNK_SIZE``), edges on
both sides: small units draw it, so that campaigns reach whole and partial chunks often."""

GEOMETRY_EDGES = (4, 5, 8, 9, 16, 17, 32, 33, 64, 65, 128, 129, 192, 193, 256)
"""Head sizes on both sides of a change of the kernel's geometry class (row groups, rows per
invocation, column tiles)."""

TIERS = (
    Tier("small", 0.6, head_sizes=(1, 2, 3, 4, 5, 6, 7, 8, 8, 9, 11, 12, 16, 16, 17, 24, 31, 32, 32, 33),
         max_heads=8, seq_lens=((1, 8), (1, 8), (1, 8), (1, 9), (1, 16), PREFILL_SEQ_LENS), max_batch=4,
         max_cost=1 << 14, specialised=True),
    Tier("medium", 0.3, head_sizes=(16, 17, 32, 33, 48, 63, 64, 64, 65, 80, 96, 127, 128, 128, 129),
         max_heads=32, seq_lens=((1, 8), (1, 8), (1, 16), (9, 24), (17, 32)), max_batch=4,
         max_cost=1 << 16),
    Tier("large", 0.1, head_sizes=(64, 64, 96, 128, 128, 128, 129, 160, 192, 193, 255, 256, 256),
         max_heads=32, seq_lens=((1, 8), (1, 8), (9, 16), (17, 64)), max_batch=4,
         max_cost=1 << 17, specialised=True),
    Tier("long", 0.15, head_sizes=(1, 2, 3, 4, 5, 8, 9, 16, 16, 17, 31, 32, 32, 33),
         max_heads=8, seq_lens=(FEW_CHUNKS, TENS_OF_CHUNKS, HUNDREDS_OF_CHUNKS), max_batch=2,
         max_cost=1 << 22, examples=12, chunked_units=0.6),
    Tier("long large", 0.015, head_sizes=(64, 65, 96, 127, 128, 128, 128, 129),
         max_heads=2, seq_lens=(FEW_CHUNKS, TENS_OF_CHUNKS, HUNDREDS_OF_CHUNKS), max_batch=1,
         max_cost=1 << 25, examples=4, seconds=12.0, chunked_units=0.2, specialised=True),
    Tier("long largest", 0.01, head_sizes=(192, 193, 255, 256, 256, 256),
         max_heads=1, seq_lens=(FEW_CHUNKS, (16 * CHUNK_SIZE - 1, 32 * CHUNK_SIZE + 1)), max_batch=1,
         max_cost=1 << 25, examples=4, seconds=12.0, chunked_units=0.2, specialised=True),
)
"""The tiers, as data (a tier's name is its key in summaries and ``ORT_HEAD_SIZES``). The long tiers reach the
prefill lengths of real prompts at a cost the measured calls set (``LONG_CALLS``): small heads at any length; heads
of 64-129 in one or two heads of one batch entry; heads of 192-256 alone, to 513 tokens, where a call of one head
of 256 costs what one of 128 costs at 2048 tokens."""

BOTH_RUNTIMES = 0.4

CHUNKED_UNITS = 0.1

SPECIALISED_UNITS = 0.08

WIDE_UNITS = 0.2

PLATFORMS = {"wgpu-swiftshader": 0.1, "wgpu-browser": 0.05}
"""The kernel on other WebGPU platforms than lavapipe (``fuzz.backends.wgpu_swiftshader``,
``fuzz.backends.wgpu_browser``), each with the share of LinearAttention's units it joins: their calls cost several
times lavapipe's and a browser holds a gigabyte, so each checks a small share of the units
(docs/campaign.md#swarm-shares). Drawn by ``other_platforms_out``, from a stream of their own."""

LOOP_FORM, CHUNKED_FORM, SPECIALISED_FORM, WIDE_FORM = "loop", "chunked", "specialised", "wide"
"""The forms of LinearAttention's kernel a unit can be made to run (``plan``'s ``form``): the token loops alone
(``KERNEL_RUNTIMES``), or the chunked prefill, the specialised pipelines or the wide geometry in place of one
of them."""


def form_shares(tier: Tier) -> dict[str, float]:
    """The forms a unit of ``tier`` may run, each with about the share of the tier's units ``plan`` gives it when
    it draws the form itself: the chunked prefill at the tier's own share, the specialised pipelines only in the
    tiers that allow them (they compile per call shape), the wide geometry only where the tier has head sizes whose
    checkpoint stores it stages."""
    staged = sum(geometry(d, d, wide=True).staged_stores for d in tier.head_sizes) / len(tier.head_sizes)
    chunked = CHUNKED_UNITS if tier.chunked_units is None else tier.chunked_units
    shares = {CHUNKED_FORM: chunked, SPECIALISED_FORM: SPECIALISED_UNITS if tier.specialised else 0.0,
              WIDE_FORM: WIDE_UNITS * staged}
    return {LOOP_FORM: 1 - sum(shares.values()), **{form: share for form, share in shares.items() if share}}


ORT_HEAD_SIZES = {"small": (3, 16, 17), "medium": (33, 64), "large": (128, 129), "long": (3, 16, 17),
                  "long large": (128, 129), "long largest": (128, 129)}
"""The head sizes at which the ORT builds check a LinearAttention case, per tier (``ort_shape``): a scalar path,
a vector path and one past it among small heads; the sizes models use above, and one past a power of two.
Their shaders then repeat across units and across runs (Mesa's cache keeps them), while the kernels and the
oracle check every size the unit draws. A unit in which ORT takes part has one of these in its pool
(docs/campaign.md#swarm-shares)."""

ORT_SIZES = frozenset(d for sizes in ORT_HEAD_SIZES.values() for d in sizes)
"""Every size of ``ORT_HEAD_SIZES``, whatever the tier."""

ORT_SIZE_STREAM = 0x4F5254
"""Mixed into a unit's seed for the draw of ORT's head size, so that the rest of the plan keeps its own stream."""


def ort_shape(case: Case) -> bool:
    """Whether the ORT builds check this LinearAttention case: ``d_k`` and ``d_v`` among ``ORT_HEAD_SIZES``.
    A case that is not valid is theirs whatever its sizes."""
    try:
        dims = case.dims()
    except ValidationError:
        return True
    return dims.d_k in ORT_SIZES and dims.d_v in ORT_SIZES


MIN_STATE_ELEMENTS = 256
"""The state cap of a unit is never below this, whatever its ``T``."""

KV_HEADS = (1, 1, 2, 2, 3, 4, 4, 6, 8, 8, 12, 16, 24, 32)
GQA_RATIOS = (2, 3, 4, 6, 8)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


GROUPED_LAYOUTS = 0.5
"""The share of GQA and inverse-GQA layouts kept to groups on both sides: two or more kv heads under grouped query
heads, or two or more query heads each repeated over a group of kv heads. With one head on either side every head
reads the same one, and a group mapped wrongly (interleaved, tiled) goes unseen
(docs/campaign.md#swarm-shares)."""


def _grouped(kv_heads: int, direction: str, max_heads: int) -> bool:
    """Whether ``kv_heads`` allows a ``direction`` layout with two or more heads on each side under ``max_heads``."""
    if direction == "gqa":
        return kv_heads >= 2 and 2 * kv_heads <= max_heads
    return any(kv_heads % r == 0 and kv_heads // r >= 2 for r in GQA_RATIOS)


def head_layout(rng: random.Random, max_heads: int) -> tuple[int, int, int]:
    """``(H_q, H_kv, n_k)``: MHA, GQA or inverse GQA with ratios up to 8, ``n_k`` a divisor of ``H_kv``."""
    allowed = [h for h in KV_HEADS if h <= max_heads]
    direction = rng.choice(("mha", "gqa", "inverse"))
    grouped = direction != "mha" and rng.random() < GROUPED_LAYOUTS
    if grouped:
        allowed = [h for h in allowed if _grouped(h, direction, max_heads)] or allowed
    kv_heads = allowed[-1] if rng.random() < 0.2 else rng.choice(allowed)  # the most heads the unit allows, often
    ratios = [r for r in GQA_RATIOS if kv_heads * r <= max_heads] if direction == "gqa" else \
        [r for r in GQA_RATIOS if kv_heads % r == 0] if direction == "inverse" else []
    if grouped and direction == "inverse":
        ratios = [r for r in ratios if kv_heads // r >= 2] or ratios
    ratio = (ratios[-1] if rng.random() < 0.3 else rng.choice(ratios)) if ratios else 1
    q_heads = kv_heads * ratio if direction == "gqa" else kv_heads // ratio
    divisors = _divisors(kv_heads)
    between = divisors[1:-1]
    key_heads = rng.choice(between) if between and rng.random() < 0.5 else rng.choice([1, kv_heads])
    return q_heads, kv_heads, key_heads


def narrowed(limits: Limits, size: int, state: int) -> Limits:
    """A unit's limits kept to one head size (``size``, the unit's first draw: ORT's size where ORT takes part) and one
    dtype, for the units that run the chunked prefill or the specialised pipelines: their pipelines compile
    several times slower than the token loop's (the chunked prefill) or once per call shape (specialised), so a
    unit of two sizes and both dtypes compiled up to eight of them where one suffices to find a bug of either
    form (docs/campaign.md#swarm-shares). The unit's other axes (rules, layouts, ``T``, the window) stay as
    drawn; ``state`` is the tier's state cap at the unit's ``T``."""
    return replace(limits, head_dim_pool=(size,), max_head_dim=size, dtypes=limits.dtypes[:1],
                   max_state_elements=max(state, limits.max_heads * size ** 2))


def plan(seed: int, base_examples: int, *, warming_up: bool = False, tier_name: str | None = None,
         form: str | None = None, only: frozenset[str] | None = None, longest: bool = False) -> UnitPlan:
    """The plan of the unit whose seed is ``seed`` (deterministic); ``base_examples`` for a cheap unit.

    ``warming_up`` (the first ``WARM_UP_ROUNDS`` of a campaign) keeps to the small tier: the shader
    and session caches of a fresh machine then fill on cheap cases first. A unit the campaign steers
    (``fuzz.campaign.steering``) is given its tier (``tier_name``), its kernel ``form`` (of ``form_shares``), the
    backends it runs (``only``: an ORT build among them takes part at its head sizes) and, where the change shows
    at long calls, the tier's longest ``T`` range (``longest``); the rest is drawn.
    """
    rng = random.Random(seed)
    tier = rng.choices(TIERS, weights=[t.weight for t in TIERS])[0]
    if warming_up:
        tier = TIERS[0]
    if tier_name is not None:
        tier = next(t for t in TIERS if t.name == tier_name)
    min_t, max_t = longest_range(tier.seq_lens) if longest else rng.choice(tier.seq_lens)
    state = max(MIN_STATE_ELEMENTS, tier.max_cost // max_t)
    sit_out = frozenset(b for b in SLOW_BACKENDS if rng.random() < SIT_OUT[state * max_t <= CHEAP_COST])
    draws = [rng.choice(tier.head_sizes) for _ in range(rng.choice((1, 2)))]
    ort = sit_out != frozenset(SLOW_BACKENDS) if only is None else bool(only & set(ORT_BUILDS))
    if ort:  # ORT takes part: one of its sizes in the pool, for its cases
        draws[0] = random.Random(seed ^ ORT_SIZE_STREAM).choice(ORT_HEAD_SIZES[tier.name])
    sizes = tuple(sorted(set(draws)))
    layout = head_layout(rng, max(1, min(tier.max_heads, state // max(sizes) ** 2)))
    batch = rng.choice(range(1, tier.max_batch + 1))
    limits = Limits(
        max_batch=batch, max_seq_len=max_t, min_seq_len=min_t, max_heads=max(layout[:2]), max_head_dim=max(sizes),
        max_next_tokens=rng.choice((1, 2, 3, 4)), max_state_elements=max(state, max(layout[:2]) * max(sizes) ** 2),
        dtypes=rng.choice((("float32", "float16"), ("float32",), ("float16",))),
        explicit_scales=rng.random() < 0.25, head_dim_pool=sizes, head_layout_pool=(layout,),
        rules=subset(rng, UPDATE_RULES, keep_all=0.5), decay_per_row=subset(rng, (False, True), keep_all=0.5),
        beta_shared=subset(rng, (False, True), keep_all=0.5),
    )
    targeting = rng.random() < TARGETING
    if rng.random() >= BOTH_RUNTIMES:
        sit_out |= {rng.choice(KERNEL_RUNTIMES)}
    native = rng.random()  # which form of wgpu-native's kernel the unit runs: chunked, specialised or generic
    chunked_share = CHUNKED_UNITS if tier.chunked_units is None else tier.chunked_units
    chunked = native < chunked_share if form is None else form == CHUNKED_FORM
    sit_out |= {KERNEL_RUNTIMES[0] if chunked else CHUNKED_RUNTIME}
    specialised = (tier.specialised and chunked_share <= native < chunked_share + SPECIALISED_UNITS
                   if form is None else form == SPECIALISED_FORM)
    sit_out |= {KERNEL_RUNTIMES[0] if specialised else SPECIALISED_RUNTIME}
    if chunked or specialised:
        limits = narrowed(limits, draws[0], state)
    staged = any(geometry(d, d, wide=True).staged_stores for d in limits.head_dim_pool)
    wide = staged and rng.random() < WIDE_UNITS if form is None else form == WIDE_FORM
    sit_out |= {KERNEL_RUNTIMES[1] if wide else WIDE_RUNTIME}
    sit_out |= other_builds_out(rng, slow_unit=SLOW_BACKENDS[0] not in sit_out)
    sit_out |= other_platforms_out(seed, PLATFORMS)
    return UnitPlan(tier=tier.name, limits=limits, examples=min(base_examples, tier.examples or base_examples),
                    sit_out=sit_out, seconds=tier.seconds or UNIT_SECONDS, targeting=targeting, only=only)


FORM_OF_BACKEND = {CHUNKED_RUNTIME: CHUNKED_FORM, SPECIALISED_RUNTIME: SPECIALISED_FORM, WIDE_RUNTIME: WIDE_FORM,
                   **dict.fromkeys(KERNEL_RUNTIMES, LOOP_FORM)}
"""The form of LinearAttention's kernel each kernel backend runs."""

SWARM = OpSwarm(share=None, tiers=tuple((t.name, t.weight) for t in TIERS),
                forms=lambda name: form_shares(next(t for t in TIERS if t.name == name)), plan=plan,
                ort_shape=ort_shape, form_of_backend=FORM_OF_BACKEND, platforms=tuple(PLATFORMS))
"""LinearAttention's part of the swarm: every unit the other ops' shares leave."""
