"""LinearAttention's coverage buckets: every axis of its contract cut into buckets, and the interactions where
bugs hide (``fuzz.campaign.coverage`` puts every op's in one table).

The head-size buckets are the WGSL kernel's own geometry classes (``kernels.geometry``: rows per invocation and
row groups for ``d_k``, column tiles for ``d_v``), and ``T`` is also counted in the chunked prefill's chunks
(``kernels.geometry.CHUNK_SIZE``), derived from the kernel rather than restated: how a call ends in them
(``chunks``), and, for the cases a chunked prefill checked (``buckets(case, chunked=True)``), how many it ran
(``prefill chunks``).
"""

from __future__ import annotations

from functools import cache

from fuzz.campaign.bucketing import OPEN, STATE_BINDINGS, OpCoverage, in_range, state_binding
from fuzz.model.case import POISON_KINDS, Case
from fuzz.ops.linear_attention.bad_inputs import RULES
from fuzz.ops.linear_attention.strategies import BETAS, DECAYS, KEY_NORMS, MAGNITUDES
from kernels.geometry import CHUNK_SIZE, geometry
from kernels.geometry import d_k_classes as geometry_classes
from oracles.validation import DELTA_RULES, MAX_STATE_WINDOW, UPDATE_RULES, Dims, ValidationError


@cache
def d_k_classes() -> tuple[tuple[int, int, str], ...]:
    """``(lowest d_k, highest d_k, label)`` of each geometry class of the kernel, up to ``d_k = 256``."""
    return tuple((c.lowest, c.highest, f"d_k {c.lowest}-{c.highest} ({c.rows_per_invocation} rows x "
                                       f"{c.row_groups} groups)") for c in geometry_classes())


def _d_k_bucket(d_k: int) -> str:
    return next(label for lo, hi, label in d_k_classes() if lo <= d_k <= hi)


def _tiles_bucket(d_k: int, d_v: int) -> str:
    tiles = geometry(d_k, d_v).d_v_tiles
    return "1 tile" if tiles == 1 else ("2 tiles" if tiles == 2 else ("3-4 tiles" if tiles <= 4 else "5+ tiles"))




SEQ_LENS = ((1, 1), (2, 8), (9, 16), (17, 32), (33, 64), (65, 256), (257, OPEN))
PREFILL_CHUNKS = ((1, 1), (2, 2), (3, 15), (16, 99), (100, OPEN))
"""Chunks a chunked prefill runs: one, two (the first boundary between chunks), a few, tens, over a hundred (a
prompt of 2048 tokens is 128)."""
MODEL_HEAD_SIZES = (64, 128, 256)
"""Head sizes (``d_k = d_v``) of the models the op serves, each a bucket of its own: a geometry class spans many
sizes, and these are the ones real calls run."""
KV_HEADS = ((1, 1), (2, 4), (5, 8), (9, OPEN))
GQA = ((2, 2), (3, 4), (6, OPEN))


def _heads(d: Dims) -> str:
    if d.q_heads == d.kv_heads:
        return "MHA"
    if d.q_heads > d.kv_heads:
        return f"GQA {in_range(d.q_heads // d.kv_heads, GQA)}"
    return f"inverse {in_range(d.kv_heads // d.q_heads, GQA)}"


def _key_heads(d: Dims) -> str:
    if d.key_heads == 1:
        return "n_k = 1"
    return "n_k = H_kv" if d.key_heads == d.kv_heads else "1 < n_k < H_kv"


def _layout(present: bool | None, names: tuple[str, str]) -> str:
    return "none" if present is None else names[int(present)]


def _scale(case: Case) -> str:
    if "scale" not in case.attrs:
        return "absent"
    return "0.0 (default)" if case.attrs["scale"] == 0 else "explicit"


def _chunks(d: Dims) -> str:
    if d.seq_len < CHUNK_SIZE:
        return "part of one"
    if d.seq_len == CHUNK_SIZE:
        return "one whole"
    return "whole chunks" if d.seq_len % CHUNK_SIZE == 0 else "a part after whole ones"


def _prefill_chunks(d: Dims) -> str:
    return in_range(-(-d.seq_len // CHUNK_SIZE), PREFILL_CHUNKS)


def _t_vs_w(d: Dims) -> str:
    if d.state_window == 0:
        return "W = 0"
    return "T < W" if d.seq_len < d.state_window else ("T = W" if d.seq_len == d.state_window else "T > W")


AXES: dict[str, tuple[str, ...]] = {
    "rule": UPDATE_RULES,
    "dtype": ("float32", "float16"),
    "d_k class": tuple(label for _, _, label in d_k_classes()),
    "d_v tiles": ("1 tile", "2 tiles", "3-4 tiles", "5+ tiles"),
    "head size": tuple(str(d) for d in MODEL_HEAD_SIZES),
    "heads": ("MHA", *(f"GQA {in_range(lo, GQA)}" for lo, _ in GQA),
              *(f"inverse {in_range(lo, GQA)}" for lo, _ in GQA)),
    "H_kv": tuple(in_range(lo, KV_HEADS) for lo, _ in KV_HEADS),
    "n_k": ("n_k = 1", "1 < n_k < H_kv", "n_k = H_kv"),
    "T": tuple(in_range(lo, SEQ_LENS) for lo, _ in SEQ_LENS),
    "chunks": ("part of one", "one whole", "a part after whole ones", "whole chunks"),
    "prefill chunks": tuple(in_range(lo, PREFILL_CHUNKS) for lo, _ in PREFILL_CHUNKS),
    "B": ("1", "2", "3", "4"),
    "W": tuple(str(w) for w in range(MAX_STATE_WINDOW + 1)),
    "T vs W": ("W = 0", "T < W", "T = W", "T > W"),
    "decay": ("none", "per head", "per key row"),
    "beta": ("none", "per head", "shared"),
    "state": STATE_BINDINGS,
    "poison": POISON_KINDS,
    "scale": ("absent", "0.0 (default)", "explicit"),
    "values": MAGNITUDES,
    "keys": KEY_NORMS,
    "decay regime": DECAYS,
    "beta regime": BETAS,
    "accepted": ("none", "some", "all"),
    "broken rule": tuple(RULES),
}
"""Every axis and its buckets (``broken rule``: the invalid inputs of ``error-parity``)."""


def _interactions() -> dict[str, tuple[str, ...]]:
    # a (B, T, 1) beta with H_kv = 1 is the per-head layout (oracles.Dims): no "shared, H_kv = 1" bucket
    beta_rules = tuple(f"{rule}, beta {beta}, {h}" for rule in sorted(DELTA_RULES) for beta in ("per head", "shared")
                       for h in ("H_kv = 1", "H_kv > 1") if (beta, h) != ("shared", "H_kv = 1"))
    heads_by_key = tuple(f"{n}, {h}" for n in AXES["n_k"] for h in ("MHA", "GQA", "inverse"))
    windows = tuple(f"W {w}, {tw}" for w in range(1, MAX_STATE_WINDOW + 1) for tw in ("T < W", "T = W", "T > W")
                    if not (w == 1 and tw == "T < W"))
    dtype_by_class = tuple(f"{dtype}, {label}" for dtype in AXES["dtype"] for label in AXES["d_k class"])
    return {"delta rule x beta x H_kv": beta_rules, "n_k x heads": heads_by_key, "W x T vs W": windows,
            "dtype x d_k class": dtype_by_class}


INTERACTIONS = _interactions()
"""Combinations where bugs hide: a shared beta read per head, grouped key heads under GQA, the
window's leading slots, fp16 storage at each geometry class."""

def buckets(case: Case, chunked: bool) -> dict[str, str]:
    """Axis -> bucket of one LinearAttention case (an invalid case: its broken rule and dtype); ``chunked``: a
    chunked prefill checks the case (its chunks are then counted)."""
    try:
        d = case.dims()
    except ValidationError:
        return {"broken rule": case.notes.get("broken_rule", "unknown"), "dtype": str(case.dtype)}
    heads = _heads(d)
    found = {
        "rule": d.update_rule, "dtype": str(d.dtype), "d_k class": _d_k_bucket(d.d_k),
        "d_v tiles": _tiles_bucket(d.d_k, d.d_v), "heads": heads, "H_kv": in_range(d.kv_heads, KV_HEADS),
        "n_k": _key_heads(d), "T": in_range(d.seq_len, SEQ_LENS), "chunks": _chunks(d), "B": str(d.batch),
        "W": str(d.state_window),
        "T vs W": _t_vs_w(d), "decay": _layout(d.decay_per_row, ("per head", "per key row")),
        "beta": _layout(d.beta_shared, ("per head", "shared")), "state": state_binding(case), "scale": _scale(case),
        "n_k x heads": f"{_key_heads(d)}, {heads.split()[0]}", "dtype x d_k class": f"{d.dtype}, {_d_k_bucket(d.d_k)}",
    }
    if d.d_k == d.d_v and d.d_k in MODEL_HEAD_SIZES:
        found["head size"] = str(d.d_k)
    if chunked:
        found["prefill chunks"] = _prefill_chunks(d)
    if case.poison:
        found["poison"] = case.poison
    regimes = {"magnitude": "values", "keys": "keys", "decay": "decay regime", "beta": "beta regime"}
    found.update({axis: case.notes[key] for key, axis in regimes.items() if key in case.notes})
    if "accepted" in case.notes:
        accepted, drafted = int(case.notes["accepted"]), int(case.notes["draft_len"])
        found["accepted"] = "none" if accepted == 0 else ("all" if accepted == drafted else "some")
    if d.update_rule in DELTA_RULES and d.beta_shared is not None:
        found["delta rule x beta x H_kv"] = (f"{d.update_rule}, beta {_layout(d.beta_shared, ('per head', 'shared'))},"
                                            f" {'H_kv > 1' if d.kv_heads > 1 else 'H_kv = 1'}")
    if d.state_window:
        found["W x T vs W"] = f"W {d.state_window}, {_t_vs_w(d)}"
    return found


COVERAGE = OpCoverage(axes={**AXES, **INTERACTIONS}, buckets=buckets)
"""LinearAttention's axes and interactions, and the buckets of its cases."""
