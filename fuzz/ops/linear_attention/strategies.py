"""Hypothesis strategies for valid LinearAttention calls, named for the domain (docs/spec.md §1-2).

A case is drawn in three layers, each a small strategy of its own:

1. ``shapes``: batch, sequence length, window and the head layout (standard or inverse GQA,
   shared key heads), head sizes from 1 to 256 with odd sizes, all under a ``Limits`` cap.
2. ``layouts``: update rule, dtype, decay and beta layouts (optional ones included too, since
   their shapes are validated even where the rule ignores them), past state, scale as set.
3. ``numerics``: the value regimes that stress the recurrence while staying valid (magnitudes
   from fp16 subnormals to large, normalised or raw keys, decays from 0 to strongly negative,
   beta at 0 and 1), realised from one drawn seed so a case stays cheap to generate and the
   shrinker works on the choices, not on thousands of floats.

Every case is checked against the float64 oracle while it is built: values whose stored results
would overflow the dtype are scaled down by a power of two (exact), so a valid case never
demands an out-of-range answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Protocol

import numpy as np
from hypothesis import strategies as st

from fuzz.model.case import POISON_KINDS, Case
from fuzz.model.pack import PACK
from fuzz.ops.linear_attention.tolerance import exact_answer
from oracles.rollback import represented_acceptances
from oracles.validation import DELTA_RULES, GATED_RULES, MAX_STATE_WINDOW, UPDATE_RULES

HEAD_SIZES = (1, 2, 3, 4, 5, 7, 8, 16, 17, 31, 32, 63, 64, 65, 127, 128, 255, 256)
"""Head sizes tried first (powers of two, their neighbours, odd sizes), before any size in range."""

MAGNITUDES = ("small-int", "unit", "large", "tiny", "mixed")
"""Value regimes of query, key, value and past state; ``small-int`` first so failures shrink to it."""

KEY_NORMS = ("raw", "normalised")
"""Keys as drawn, or L2-normalised per head (as gated delta networks do)."""

DECAYS = ("moderate", "near-zero", "strong", "mixed")
"""Log-space decay regimes: ``-U(0,1)``; ``-U(0,1e-3)`` with exact zeros; ``-U(5,20)``; all mixed."""

BETAS = ("uniform", "zero", "one", "endpoints")
"""Beta regimes: ``U(0,1)``; all 0; all 1; a mix of 0, 1 and ``U(0,1)``."""

DELTA_KEY_NORM_CAP = 1.4
"""Raw keys of delta rules are capped at this L2 norm: with ``beta <= 1``, ``beta*|k|^2 < 2`` keeps
the delta update ``I - beta k k^T`` from amplifying the state (valid input, bounded answers)."""

OVERFLOW_HEADROOM = 256.0
"""Stored results are kept below ``finfo(dtype).max / OVERFLOW_HEADROOM``."""

PER_HEAD_FIRST = st.sampled_from((False, True))
"""``decay_per_row`` / ``beta_shared`` of a present input: per-head first, so failures shrink to it.
``sampled_from``, not ``booleans``: the derandomized searches that the mutant tests' shrink bounds
are tuned on follow this choice sequence."""

PACK_SIZES = (1, 3, 5, 7)
"""How many cases of one shape a packing strategy puts side by side in the batch axis of one call
(``fuzz.model.pack``), drawn evenly: a quarter of its examples stay single calls (so a batch-indexing bug
also shows in a case of its own), and 1 comes first, so a failure shrinks towards a single call. Odd, so that a
size or offset in proportion to the batch (a state slot's bytes, a binding's offset) is divisible by the same
powers of two as its slice's: packs of 2, 4 and 8 made slots aligned where the slices' were not, and hid a
kernel's wrong seed for slots that cannot be bound at their offset."""

PACK_ELEMENTS = 1 << 15
"""The most elements of inputs and state a pack's batch entries hold together: packing pays where a call's
fixed cost outweighs its work (small cases), and keeps a pack of them small."""

STRATEGY_CACHE = 512
"""Strategy objects kept per factory: the same arguments give the same (immutable) strategy, so a
draw does not rebuild it and Hypothesis does not recompute its properties for every example."""


def one_of_values(values: tuple) -> st.SearchStrategy:
    """``st.sampled_from(values)``, one strategy object per tuple of values. Hypothesis reuses the
    integers and booleans strategies it built, but builds (and validates on first draw) a new
    ``sampled_from`` on every call, a measurable share of a campaign's time (docs/campaign.md#history)."""
    return _sampled(tuple((type(v), v) for v in values))  # (0, 1) == (False, True): the types keep them apart


@lru_cache(maxsize=STRATEGY_CACHE)
def _sampled(typed: tuple[tuple[type, Any], ...]) -> st.SearchStrategy:
    return st.sampled_from(tuple(v for _, v in typed))


@dataclass(frozen=True)
class Limits:
    """Size caps for generated cases: small enough for lavapipe in CI, bigger on request."""

    max_batch: int = 3
    max_seq_len: int = 10
    max_heads: int = 4
    """Cap on ``H_q`` and ``H_kv``."""
    max_head_dim: int = 32
    """Cap on ``d_k`` and ``d_v``."""
    max_window: int = MAX_STATE_WINDOW
    max_next_tokens: int = 3
    """Tokens of the second call in select-and-resume cases."""
    max_state_elements: int = 1 << 16
    """Cap on ``B * H_kv * d_k * d_v`` (one window slot)."""
    dtypes: tuple[str, ...] = ("float32", "float16")
    explicit_scales: bool = True
    """Draw explicit ``scale`` values too (each one is a new ORT session; CI keeps them off)."""
    head_dim_pool: tuple[int, ...] = ()
    """When set, ``d_k`` and ``d_v`` come only from these sizes (few compiled kernels, caches hit)."""
    head_layout_pool: tuple[tuple[int, int, int], ...] = ()
    """When set, ``(H_q, H_kv, n_k)`` comes only from these layouts."""
    min_seq_len: int = 1
    """Smallest ``T`` drawn where a property leaves the choice open (a swarm unit of long calls)."""
    rules: tuple[str, ...] = UPDATE_RULES
    """The update rules drawn."""
    decay_per_row: tuple[bool, ...] = (False, True)
    """The decay layouts drawn for a present decay (False: per head, True: per key row)."""
    beta_shared: tuple[bool, ...] = (False, True)
    """The beta layouts drawn for a present beta (False: per head, True: one shared by all heads)."""

    def __post_init__(self) -> None:
        for name in ("max_batch", "max_seq_len", "max_heads", "max_head_dim", "max_next_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"Limits.{name} must be >= 1, got {getattr(self, name)}")
        if not 0 <= self.max_window <= MAX_STATE_WINDOW:
            raise ValueError(f"Limits.max_window must be in [0, {MAX_STATE_WINDOW}], got {self.max_window}")
        if self.max_state_elements < 1:
            raise ValueError(f"Limits.max_state_elements must be >= 1, got {self.max_state_elements}")
        unknown = set(self.dtypes) - {"float32", "float16"}
        if not self.dtypes or unknown:
            raise ValueError(f"Limits.dtypes must be a non-empty subset of float32/float16, got {self.dtypes}")
        if not 1 <= self.min_seq_len <= self.max_seq_len:
            raise ValueError(f"Limits.min_seq_len must be in [1, {self.max_seq_len}], got {self.min_seq_len}")
        for name, universe in (("rules", UPDATE_RULES), ("decay_per_row", (False, True)),
                               ("beta_shared", (False, True))):
            chosen = getattr(self, name)
            if not chosen or set(chosen) - set(universe):
                raise ValueError(f"Limits.{name} must be a non-empty subset of {universe}, got {chosen}")

    def describe(self) -> str:
        """One line for logs and the report."""
        layout = "/".join(str(h) for h in self.head_layout_pool[0]) if self.head_layout_pool else "any"
        return (f"d in {list(self.head_dim_pool)}, Hq/Hkv/nk {layout}, T {self.min_seq_len}-{self.max_seq_len}, "
                f"B<={self.max_batch}, rules {','.join(self.rules)}, {','.join(self.dtypes)}")

    @classmethod
    def ci(cls) -> Limits:
        """Tiny sizes for CI: every axis reached (T = W = 8 included), few distinct sessions."""
        return cls(max_batch=2, max_seq_len=9, max_heads=4, max_head_dim=8, max_next_tokens=2,
                   max_state_elements=256, explicit_scales=False)

    @classmethod
    def default(cls) -> Limits:
        """Interactive fuzzing: moderate sizes, all scale forms."""
        return cls()

    @classmethod
    def campaign(cls) -> Limits:
        """The default campaign: every axis, but shapes from a small pool so compiled kernels and
        ORT sessions are reused (standard, grouped, inverse and shared-key head layouts)."""
        return cls(max_batch=2, max_seq_len=9, max_heads=4, max_head_dim=8, max_next_tokens=2,
                   max_state_elements=512, explicit_scales=False, head_dim_pool=(1, 3, 8),
                   head_layout_pool=((1, 1, 1), (2, 1, 1), (1, 2, 1), (2, 2, 1)))

    @classmethod
    def big(cls) -> Limits:
        """Campaign sizes: head sizes up to 256, longer sequences, more heads and batch."""
        return cls(max_batch=4, max_seq_len=24, max_heads=8, max_head_dim=256, max_next_tokens=4,
                   max_state_elements=1 << 20)


@dataclass(frozen=True)
class Shape:
    """The sizes of one call, named as in ``oracles.Dims``."""

    batch: int
    seq_len: int
    q_heads: int
    kv_heads: int
    key_heads: int
    d_k: int
    d_v: int
    state_window: int

    @property
    def entry_elements(self) -> int:
        """Elements of one batch entry: its tokens' query, key and value, and its state slots."""
        tokens = self.seq_len * ((self.q_heads + self.key_heads) * self.d_k + self.kv_heads * self.d_v)
        return tokens + max(1, self.state_window) * self.kv_heads * self.d_k * self.d_v


@dataclass(frozen=True)
class Layout:
    """Everything about a call that is not a size or a value, named as in ``oracles.Dims``."""

    update_rule: str
    dtype: str
    decay_per_row: bool | None
    """True for a ``(B, T, H_kv*d_k)`` decay, False for ``(B, T, H_kv)``, None = no decay input.
    (At ``d_k = 1`` both are one shape, which ``Dims`` reports as per-head.)"""
    beta_shared: bool | None
    """True for a ``(B, T, 1)`` beta, False for ``(B, T, H_kv)``, None = no beta input.
    (At ``H_kv = 1`` both are one shape, which ``Dims`` reports as per-head.)"""
    has_past: bool
    scale: float | None
    """The ``scale`` attribute as set (``0.0`` = default explicitly), None = absent."""


@dataclass(frozen=True)
class Numerics:
    """The value regimes of one case, realised from ``seed``."""

    magnitude: str
    keys: str
    decay: str
    beta: str
    seed: int


# ---- layer 1: shapes --------------------------------------------------------------------------

@lru_cache(maxsize=STRATEGY_CACHE)
def head_dims(limits: Limits, cap: int | None = None) -> st.SearchStrategy[int]:
    """A head size ``d_k``/``d_v``: the notable sizes first, then anything in ``1..cap``."""
    top = min(limits.max_head_dim, cap or limits.max_head_dim)
    pool = [d for d in limits.head_dim_pool if d <= top]
    if pool:
        return st.sampled_from(pool)
    notable = [d for d in HEAD_SIZES if d <= top]
    return st.sampled_from(notable) | st.integers(1, top)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@lru_cache(maxsize=STRATEGY_CACHE)
@st.composite
def head_layouts(draw: st.DrawFn, max_heads: int) -> tuple[int, int, int]:
    """``(H_q, H_kv, n_k)`` in either GQA direction, with ``n_k`` any divisor of ``H_kv``."""
    kv_heads = draw(st.integers(1, max_heads))
    inverse = draw(st.booleans()) and kv_heads > 1
    if inverse:
        q_heads = draw(one_of_values(tuple(_divisors(kv_heads)[:-1])))
    else:
        q_heads = kv_heads * draw(st.integers(1, max(1, max_heads // kv_heads)))
    key_heads = draw(one_of_values(tuple(_divisors(kv_heads))))
    return q_heads, kv_heads, key_heads


@lru_cache(maxsize=STRATEGY_CACHE)
def windows(limits: Limits, min_window: int = 0) -> st.SearchStrategy[int]:
    """``state_window`` in ``min_window..limits.max_window`` (W = 0 is the legacy 4-D state)."""
    if min_window > limits.max_window:
        raise ValueError(f"windows: min_window {min_window} exceeds Limits.max_window {limits.max_window}")
    return st.integers(min_window, limits.max_window)


class SequenceCaps(Protocol):
    """The ``T`` range of any op's limits (``Limits``, ``ConvLimits``)."""

    min_seq_len: int
    max_seq_len: int


@lru_cache(maxsize=STRATEGY_CACHE)
def seq_lens(limits: SequenceCaps, window: int) -> st.SearchStrategy[int]:
    """``T >= 1``, boosting the window boundaries ``T = W`` and ``T = W - 1`` (T < W)."""
    edges = sorted({t for t in (window, window - 1) if limits.min_seq_len <= t <= limits.max_seq_len})
    anywhere = st.integers(limits.min_seq_len, limits.max_seq_len)
    return st.sampled_from(edges) | anywhere if edges else anywhere


@lru_cache(maxsize=STRATEGY_CACHE)
@st.composite
def shapes(
    draw: st.DrawFn,
    limits: Limits,
    *,
    state_window: st.SearchStrategy[int] | None = None,
    seq_len: st.SearchStrategy[int] | None = None,
) -> Shape:
    """Sizes under ``limits``; ``state_window``/``seq_len`` strategies override the defaults.

    ``seq_len`` may depend on the window: pass a strategy, or None for ``seq_lens(limits, W)``.
    """
    w = draw(state_window if state_window is not None else windows(limits))
    t = draw(seq_len if seq_len is not None else seq_lens(limits, w))
    d_k = draw(head_dims(limits))
    d_v = draw(head_dims(limits, cap=max(1, limits.max_state_elements // d_k)))
    room = max(1, limits.max_state_elements // (d_k * d_v))
    max_heads = max(1, min(limits.max_heads, room))
    pool = [h for h in limits.head_layout_pool if max(h[:2]) <= max_heads]
    q_heads, kv_heads, key_heads = draw(one_of_values(tuple(pool)) if pool else head_layouts(max_heads))
    batch = draw(st.integers(1, max(1, min(limits.max_batch, room // kv_heads))))
    return Shape(batch=batch, seq_len=t, q_heads=q_heads, kv_heads=kv_heads, key_heads=key_heads,
                 d_k=d_k, d_v=d_v, state_window=w)


# ---- layer 2: layouts -------------------------------------------------------------------------

@lru_cache(maxsize=STRATEGY_CACHE)
def scales(limits: Limits) -> st.SearchStrategy[float | None]:
    """The ``scale`` attribute: absent, ``0.0`` (default, explicitly), or a float32-exact value."""
    default = st.sampled_from([None, 0.0])
    if not limits.explicit_scales:
        return default
    explicit = st.floats(1 / 64, 4.0, width=32, allow_subnormal=False)
    return default | st.sampled_from([1.0, 0.5, 0.125]) | explicit


def _layout_choice(allowed: tuple[bool, ...]) -> st.SearchStrategy[bool]:
    return PER_HEAD_FIRST if allowed == (False, True) else one_of_values(allowed)


@lru_cache(maxsize=STRATEGY_CACHE)
@st.composite
def layouts(draw: st.DrawFn, limits: Limits, *, has_past: bool | None = None) -> Layout:
    """Rule, dtype, decay/beta layouts (optional ones sometimes present), past, scale.

    ``has_past`` forces the past state present or absent (None: drawn).
    """
    rule = draw(one_of_values(limits.rules))
    dtype = draw(one_of_values(limits.dtypes))
    decay_per_row = beta_shared = None
    if rule in GATED_RULES or draw(st.booleans()):
        decay_per_row = draw(_layout_choice(limits.decay_per_row))
    if rule in DELTA_RULES or draw(st.booleans()):
        beta_shared = draw(_layout_choice(limits.beta_shared))
    return Layout(
        update_rule=rule, dtype=dtype, decay_per_row=decay_per_row, beta_shared=beta_shared,
        has_past=draw(st.booleans()) if has_past is None else has_past, scale=draw(scales(limits)),
    )


# ---- layer 3: numerics ------------------------------------------------------------------------

@lru_cache(maxsize=STRATEGY_CACHE)
def numerics() -> st.SearchStrategy[Numerics]:
    """Value regimes and the seed that realises them."""
    return st.builds(
        Numerics,
        magnitude=st.sampled_from(MAGNITUDES),
        keys=st.sampled_from(KEY_NORMS),
        decay=st.sampled_from(DECAYS),
        beta=st.sampled_from(BETAS),
        seed=st.integers(0, 2**32 - 1),
    )


def values(rng: np.random.Generator, shape: tuple[int, ...], magnitude: str, dtype: np.dtype) -> np.ndarray:
    """Float64 values in one magnitude regime (``MAGNITUDES``), to be cast to ``dtype``."""
    half = dtype == np.float16
    if magnitude == "small-int":
        return rng.integers(-2, 3, shape).astype(np.float64)
    x = rng.standard_normal(shape)
    if magnitude == "large":
        return x * 2.0 ** rng.integers(3, 6 if half else 16)
    if magnitude == "tiny":
        if not half:
            return x * 2.0**-20
        # fp16 normals start at 2^-14: about a third of these land in the subnormal range
        return x * 2.0 ** rng.integers(-22, -12, shape)
    if magnitude == "mixed":
        # one scale per token (per key row for a state): magnitudes spread over 2^12 in a call
        return x * 2.0 ** rng.integers(-6, 7, (*shape[:-1], 1))
    return x


def decays(rng: np.random.Generator, shape: tuple[int, ...], regime: str) -> np.ndarray:
    """Log-space decays ``g <= 0`` (``exp(g)`` in ``(0, 1]``) in one regime."""
    near_zero = -rng.uniform(0.0, 1e-3, shape) * (rng.random(shape) < 0.75)
    moderate = -rng.uniform(0.0, 1.0, shape)
    strong = -rng.uniform(5.0, 20.0, shape)
    pick = {"near-zero": near_zero, "moderate": moderate, "strong": strong}
    if regime in pick:
        return pick[regime]
    choice = rng.integers(0, 3, shape)
    return np.choose(choice, [near_zero, moderate, strong])


def betas(rng: np.random.Generator, shape: tuple[int, ...], regime: str) -> np.ndarray:
    """Betas in ``[0, 1]``, endpoints included."""
    if regime == "zero":
        return np.zeros(shape)
    if regime == "one":
        return np.ones(shape)
    uniform = rng.uniform(0.0, 1.0, shape)
    if regime == "uniform":
        return uniform
    return np.choose(rng.integers(0, 3, shape), [np.zeros(shape), np.ones(shape), uniform])


def _keys(rng: np.random.Generator, shape: Shape, layout: Layout, num: Numerics, dtype: np.dtype) -> np.ndarray:
    k = values(rng, (shape.batch, shape.seq_len, shape.key_heads, shape.d_k), num.magnitude, dtype)
    norm = np.linalg.norm(k, axis=-1, keepdims=True)
    if num.keys == "normalised":
        k = np.where(norm > 0, k / np.where(norm > 0, norm, 1.0), k)
    elif layout.update_rule in DELTA_RULES:
        k = k / np.maximum(1.0, norm / DELTA_KEY_NORM_CAP)
    return k.reshape(shape.batch, shape.seq_len, shape.key_heads * shape.d_k)


def _overflow_shift(arrays: dict[str, np.ndarray], attrs: dict[str, Any], dtype: np.dtype) -> int:
    """Power of two by which ``value`` and ``past_state`` must shrink so every stored result fits.

    The recurrence is linear in ``(past_state, value)`` jointly, so dividing both by ``2^s`` divides
    every state and output by ``2^s`` exactly. (The oracle's answer is remembered: the checks of an
    unshifted case reuse it.)
    """
    return shift_to_fit(exact_answer(arrays, attrs).peak, dtype)


def shift_to_fit(peak: float, dtype: np.dtype) -> int:
    """The power of two by which results as large as ``peak`` must shrink to stay below
    ``finfo(dtype).max / OVERFLOW_HEADROOM``."""
    limit = float(np.finfo(dtype).max) / OVERFLOW_HEADROOM
    return max(0, int(np.ceil(np.log2(peak / limit)))) if peak > limit else 0


def build_case(shape: Shape, layout: Layout, num: Numerics, *, aliased: bool = False,
               notes: dict[str, Any] | None = None) -> Case:
    """Realise one valid case from its three layers (deterministic in ``num.seed``)."""
    rng = np.random.default_rng(num.seed)
    dtype = np.dtype(layout.dtype)
    b, t, h_kv = shape.batch, shape.seq_len, shape.kv_heads
    arrays: dict[str, np.ndarray] = {
        "query": values(rng, (b, t, shape.q_heads * shape.d_k), num.magnitude, dtype),
        "key": _keys(rng, shape, layout, num, dtype),
        "value": values(rng, (b, t, h_kv * shape.d_v), num.magnitude, dtype),
    }
    if layout.has_past:
        slot = (b, h_kv, shape.d_k, shape.d_v)
        arrays["past_state"] = values(
            rng, (shape.state_window, *slot) if shape.state_window else slot, num.magnitude, dtype)
    if layout.decay_per_row is not None:
        arrays["decay"] = decays(rng, (b, t, h_kv * (shape.d_k if layout.decay_per_row else 1)), num.decay)
    if layout.beta_shared is not None:
        arrays["beta"] = betas(rng, (b, t, 1 if layout.beta_shared else h_kv), num.beta)
    arrays = {name: x.astype(dtype) for name, x in arrays.items()}

    attrs: dict[str, Any] = {"q_num_heads": shape.q_heads, "kv_num_heads": shape.kv_heads,
                             "update_rule": layout.update_rule, "state_window": shape.state_window}
    if layout.scale is not None:
        attrs["scale"] = layout.scale
    labels = {"magnitude": num.magnitude, "keys": num.keys, "decay": num.decay, "beta": num.beta,
              "seed": num.seed, **(notes or {})}
    shift = _overflow_shift(arrays, attrs, dtype)
    if shift:
        for name in ("value", "past_state"):
            if name in arrays:
                arrays[name] = (arrays[name] / dtype.type(2.0**shift)).astype(dtype)
        labels["rescaled"] = f"value and past_state / 2^{shift}"
    return Case(inputs=arrays, attrs=attrs, aliased=aliased, notes=labels)


# ---- cases ------------------------------------------------------------------------------------

CasesFn = Callable[..., st.SearchStrategy[Case]]
"""An op's strategy for valid cases (``cases``, ``fuzz.ops.causal_conv.strategies.conv_cases``)."""


def valid_cases(shapes_of: Callable[..., st.SearchStrategy[Any]], windows_of: Callable[..., st.SearchStrategy[int]],
                layouts_of: Callable[..., st.SearchStrategy[Any]], build: Callable[..., Case]) -> CasesFn:
    """An op's strategy for valid cases from its three layers: sizes (``shapes_of(limits, state_window=,
    seq_len=)``), what is not a size or a value (``layouts_of(limits, has_past=)``) and the numerics, realised
    by ``build(shape, layout, numerics, aliased=, notes=)``; in that order, so failures shrink layer by layer.

    The strategy is ``cases(limits, *, min_window=0, has_past=None, aliased=False, state_window=None,
    seq_len=None, notes=None, packs=False)``: ``min_window`` raises the smallest ``W`` (``state_window`` replaces
    the window strategy outright); ``seq_len`` replaces the ``T`` strategy; ``has_past`` forces the past state
    present or absent; ``aliased`` binds past and present state to one buffer (implies a past state); ``packs``
    draws last how many cases of the drawn shape to pack into one call (``pack_sizes``): the case is built with
    that many times the batch and noted as a pack (``fuzz.model.pack``), its slices the cases.
    """

    @st.composite
    def drawn(draw: st.DrawFn, limits: Any, *, min_window: int = 0, has_past: bool | None = None,
              aliased: bool = False, state_window: st.SearchStrategy[int] | None = None,
              seq_len: st.SearchStrategy[int] | None = None, notes: dict[str, Any] | None = None,
              packs: bool = False) -> Case:
        windowed = state_window if state_window is not None else windows_of(limits, min_window)
        shape = draw(shapes_of(limits, state_window=windowed, seq_len=seq_len))
        layout = draw(layouts_of(limits, has_past=True if aliased else has_past))
        num = draw(numerics())
        count = draw(pack_sizes(shape.batch * shape.entry_elements)) if packs else 1
        if count > 1:
            shape, notes = replace(shape, batch=shape.batch * count), {**(notes or {}), PACK: count}
        return build(shape, layout, num, aliased=aliased, notes=notes)

    return drawn


def pack_sizes(elements: int) -> st.SearchStrategy[int]:
    """How many cases of ``elements`` each (one case's batch entries) to pack: the ``PACK_SIZES`` that keep a pack
    within ``PACK_ELEMENTS``."""
    return one_of_values(tuple(n for n in PACK_SIZES if n == 1 or n * elements <= PACK_ELEMENTS))


cases = valid_cases(shapes, windows, layouts, build_case)
"""A valid LinearAttention case reaching every axis of docs/spec.md §1-2 under ``limits``
(``valid_cases``'s keywords)."""


@st.composite
def resume_cases(draw: st.DrawFn, limits: Limits) -> Case:
    """A draft call followed by the tokens of the next call, for select-and-resume.

    The case holds ``T = draft + next`` tokens; ``notes["draft_len"]`` says where the draft ends and
    ``notes["accepted"]`` how many draft tokens were accepted: 0 (resume from the original past) or
    any count the window represents, drawn so that Hypothesis explores and shrinks it like any axis.
    """
    w = draw(windows(limits, 1))
    draft = draw(seq_lens(limits, w))
    extra = draw(st.integers(1, limits.max_next_tokens))
    shape = draw(shapes(limits, state_window=st.just(w), seq_len=st.just(draft + extra)))
    layout = draw(layouts(limits))
    accepted = draw(one_of_values((0, *represented_acceptances(draft, w))))
    return build_case(shape, layout, draw(numerics()), notes={"draft_len": draft, "accepted": accepted})


# ---- poison -----------------------------------------------------------------------------------

def poison_values(kind: str, shape: tuple[int, ...], dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    """Values of one poison kind: NaN, alternating +-Inf, +-the largest finite value, random bits."""
    dtype = np.dtype(dtype)
    if kind == "nan":
        return np.full(shape, np.nan, dtype=dtype)
    sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    if kind == "inf":
        return (sign * np.inf).astype(dtype)
    if kind == "huge":
        return (sign * np.finfo(dtype).max).astype(dtype)
    if kind == "bits":
        uint = np.dtype(f"u{dtype.itemsize}")
        return rng.integers(0, np.iinfo(uint).max, shape, dtype=uint, endpoint=True).view(dtype)
    raise ValueError(f"poison_values: kind must be one of {POISON_KINDS}, got {kind!r}")


def poisoned(case: Case, kind: str | None) -> Case:
    """The case with past slots ``0..W-2`` replaced by poison (``kind=None``: unchanged)."""
    if kind is None:
        return case
    past = case.inputs.get("past_state")
    if past is None or case.state_window < 2:
        raise ValueError("poisoned: needs a past state with state_window >= 2")
    rng = np.random.default_rng(int(case.notes.get("seed", 0)) + 1)
    bad = past.copy()
    bad[:-1] = poison_values(kind, bad[:-1].shape, past.dtype, rng)
    return replace(case.with_inputs(past_state=bad), poison=kind)


def with_clean_past(case: Case) -> Case:
    """The case with past slots ``0..W-2`` set to zeros: the clean twin of a poisoned case."""
    past = case.inputs.get("past_state")
    if past is None or case.state_window < 2:
        return replace(case, poison=None)
    clean = past.copy()
    clean[:-1] = 0
    return replace(case.with_inputs(past_state=clean), poison=None)
