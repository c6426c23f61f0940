"""Coverage you can see: every axis of each op's contract cut into buckets, and the interactions where bugs hide.

``buckets(case)`` names the buckets one case falls in, as ``"axis: bucket"`` labels (also Hypothesis
``event()``s); ``UNIVERSE`` lists every bucket a campaign can reach, so a summary shows each one with
its count, zeros included, and names the buckets never reached. The ``op`` axis counts the cases of each
op; LinearAttention's axes are below, CausalConvWithState's (``conv ...``) in ``fuzz.campaign.conv_coverage``;
``OP_AXES`` says which axes are whose, ``reached_by_op`` counts each op's buckets. The head-size buckets are the WGSL
kernel's own geometry classes (``kernels.geometry``: rows per invocation and row groups for ``d_k``,
column tiles for ``d_v``), and ``T`` is also counted in the chunked prefill's chunks
(``kernels.geometry.CHUNK_SIZE``), derived from the kernel rather than restated: how a call ends in them
(``chunks``), and, for the cases a chunked prefill checked (``buckets(case, chunked=True)``), how many it ran
(``prefill chunks``).
"""

from __future__ import annotations

from collections import Counter
from functools import cache

from fuzz.campaign.bucketing import OPEN, STATE_BINDINGS, in_range, state_binding
from fuzz.campaign.conv_coverage import CONV_AXES, conv_buckets
from fuzz.engine.bad_inputs import RULES
from fuzz.engine.strategies import BETAS, DECAYS, KEY_NORMS, MAGNITUDES
from fuzz.model.case import POISON_KINDS, Case
from fuzz.model.ops import CAUSAL_CONV, LINEAR_ATTENTION, OPS
from fuzz.model.pack import slice_of, slices
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

UNIVERSE: dict[str, tuple[str, ...]] = {"op": tuple(OPS), **AXES, **INTERACTIONS, **CONV_AXES}

OP_AXES: dict[str, tuple[str, ...]] = {LINEAR_ATTENTION.name: (*AXES, *INTERACTIONS),
                                       CAUSAL_CONV.name: tuple(CONV_AXES)}
"""Each op's own axes (the ``op`` axis is everyone's)."""


def buckets(case: Case, *, chunked: bool = False) -> list[str]:
    """The ``"axis: bucket"`` labels of one case (an invalid case: its broken rule and dtype), its op first;
    ``chunked``: a chunked prefill checks the case (its chunks are then counted). A packed case's labels are those
    of its slices, the cases it checks (``fuzz.model.pack``: every slice has one shape)."""
    if slices(case) > 1:
        case = slice_of(case, 0)
    if case.op is not LINEAR_ATTENTION:
        return [f"op: {case.op.name}", *(f"{axis}: {bucket}" for axis, bucket in conv_buckets(case).items())]
    return [f"op: {case.op.name}", *_linear_attention_buckets(case, chunked)]


def _linear_attention_buckets(case: Case, chunked: bool) -> list[str]:
    try:
        d = case.dims()
    except ValidationError:
        return [f"broken rule: {case.notes.get('broken_rule', 'unknown')}", f"dtype: {case.dtype}"]
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
    return [f"{axis}: {bucket}" for axis, bucket in found.items()]


def table(counts: Counter) -> dict[str, dict[str, int]]:
    """Every bucket of ``UNIVERSE`` with its count (zeros included), plus any label outside it, by axis."""
    rows = {axis: {bucket: 0 for bucket in names} for axis, names in UNIVERSE.items()}
    for label, count in counts.items():
        axis, _, bucket = label.partition(": ")
        rows.setdefault(axis, {})[bucket] = rows.get(axis, {}).get(bucket, 0) + count
    return rows


def counted(label: str) -> bool:
    """Whether an ``"axis: bucket"`` label is one of ``UNIVERSE``'s buckets (those the progress line counts)."""
    axis, _, bucket = label.partition(": ")
    return bucket in UNIVERSE.get(axis, ())


def reached(counts: Counter, axes: tuple[str, ...] | None = None) -> tuple[int, int]:
    """``(buckets reached, buckets)`` of ``axes`` (default: all of ``UNIVERSE``)."""
    chosen = {axis: UNIVERSE[axis] for axis in (axes or UNIVERSE)}
    total = sum(len(names) for names in chosen.values())
    hit = sum(1 for axis, names in chosen.items() for b in names if counts.get(f"{axis}: {b}", 0))
    return hit, total


def axes_of(ops: list[str]) -> tuple[str, ...]:
    """The axes of a campaign of ``ops``: each op's own (what its progress line counts)."""
    return tuple(axis for op in ops for axis in OP_AXES[op])


def reached_by_op(counts: Counter) -> dict[str, tuple[int, int]]:
    """Op name -> ``(buckets reached, buckets)`` of its own axes."""
    return {op: reached(counts, axes) for op, axes in OP_AXES.items()}


def never_reached(rows: dict[str, dict[str, int]]) -> list[str]:
    """The ``"axis: bucket"`` labels of ``UNIVERSE`` with a count of zero."""
    return [f"{axis}: {b}" for axis, names in UNIVERSE.items() for b in names if not rows.get(axis, {}).get(b)]
