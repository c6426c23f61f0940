"""A bug's targeted case: built from the catalogue's fields, checked once, with a verdict.

``build_case`` realises the fields (sizes, dtype, window, layout, seed) through the strategies' own builders
(``fuzz.ops.linear_attention.strategies.build_case``, ``fuzz.ops.causal_conv.strategies.build_conv_case``), so a
targeted case is a case a campaign could draw, deterministic in its seed. ``check`` runs the target's property on
its backends: ``fails`` (the property fails, or a backend or the oracle raises), ``passes``, or ``vacuous`` (a
backend sat out or nothing was compared: the case proves nothing here). A bug is proven wrong by its case when the
case fails with the bug planted and passes without it.

``python -m fuzz.bench.hunt.targeted ID...`` checks the named bugs' cases in this process's tree and prints one
JSON line per bug: how ``--check`` runs them in a planted copy, where the kernels, oracles and engine imported are
the copy's.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fuzz import environment
from fuzz.backends import Backend, create
from fuzz.bench.hunt.catalogue import CATALOGUE, Bug, Target, load, select
from fuzz.engine.hybrid_block import Block
from fuzz.engine.properties import resolve_property
from fuzz.model.case import Case
from fuzz.model.chain import Chain
from fuzz.model.findings import PropertyFailure
from fuzz.ops.causal_conv.strategies import ConvLayout, ConvShape, build_conv_case
from fuzz.ops.gated_delta_net.strategies import GdnLayout, GdnShape, build_gdn_case
from fuzz.ops.linear_attention.strategies import Layout, Numerics, Shape, poisoned
from fuzz.ops.linear_attention.strategies import build_case as build_la_case
from fuzz.ops.state_replay.strategies import build_replay_case
from oracles.block import QkvWidths
from oracles.validation import DELTA_RULES, GATED_RULES

FAILS, PASSES, VACUOUS = "fails", "passes", "vacuous"

COMMON = {"seed": 1, "batch": 1, "seq_len": 3, "window": 1, "dtype": "float32", "past": True, "aliased": False,
          "poison": None, "magnitude": "unit", "draft_len": None, "accepted": None, "chain": None}
"""Fields of every targeted case, with their defaults."""

LINEAR_ATTENTION = {**COMMON, "q_heads": 1, "kv_heads": 1, "key_heads": 1, "d_k": 4, "d_v": 4, "rule": "linear",
                    "decay": None, "beta": None, "scale": None, "keys": "normalised", "decay_regime": "moderate",
                    "beta_regime": "uniform"}
"""A LinearAttention case's fields: ``decay`` is ``head`` or ``row`` (default ``head`` for a gated rule), ``beta``
``head`` or ``shared`` (default ``head`` for a delta rule)."""

CONV = {**COMMON, "channels": 4, "kernel": 4, "dilation": 1, "channels_last": False, "activation": "none",
        "bias": True, "block": None}
"""A CausalConvWithState case's fields; ``block`` (a table of LinearAttention's heads, sizes, rule and layouts)
makes it a hybrid block, whose channels are the block's q/k/v widths."""


GDN = {"seed": 1, "lengths": [3], "ragged": False, "q_heads": 1, "group": 1, "d_k": 4, "d_v": 4, "rank4": False,
       "packed": False, "rule": "gated_delta", "dtype": "float32", "gate_activation": "none", "beta_activation": "none",
       "qk_l2_norm": 0, "capacity": 0, "capture_counts": None, "active": None, "initial_state": True}
"""A GatedDeltaNet case's fields (``fuzz.ops.gated_delta_net.strategies``: ``GdnShape`` and ``GdnLayout``)."""

REPLAY = {**GDN, "capacity": 4, "request": 0, "kept": 1, "pads": [0, 0, 0], "shared": False}
"""A GatedDeltaNetStateReplay case's fields: the GatedDeltaNet call whose capsule row ``request`` it replays
``kept`` entries of (``fuzz.ops.state_replay.strategies.build_replay_case``)."""

DEFAULTS = {"LinearAttention": LINEAR_ATTENTION, "CausalConvWithState": CONV, "GatedDeltaNet": GDN,
            "GatedDeltaNetStateReplay": REPLAY}


@dataclass(frozen=True)
class Verdict:
    """What one check of a targeted case said."""

    verdict: str
    """``FAILS``, ``PASSES`` or ``VACUOUS``."""
    detail: str
    seconds: float


def _fields(target: Target, op: str) -> dict[str, Any]:
    defaults = DEFAULTS[op]
    unknown = sorted(set(target.fields) - set(defaults))
    if unknown:
        raise ValueError(f"unknown field(s) of a {op} case: {', '.join(unknown)}")
    return {**defaults, **target.fields}


def _notes(f: dict[str, Any]) -> dict[str, Any]:
    """The chain or draft notes of a case (``chain = {calls, accepted, mode}``; ``draft_len`` and ``accepted``)."""
    if f["chain"] is not None:
        chain = f["chain"]
        return Chain(tuple(chain["calls"]), tuple(chain["accepted"]), chain.get("mode", "rebind")).notes()
    if f["draft_len"] is not None:
        return {"draft_len": f["draft_len"], "accepted": f["accepted"]}
    return {}


def _seq_len(f: dict[str, Any]) -> int:
    return sum(f["chain"]["calls"]) if f["chain"] is not None else int(f["seq_len"])


def _numerics(f: dict[str, Any]) -> Numerics:
    return Numerics(magnitude=f["magnitude"], keys=f.get("keys", "normalised"), decay=f.get("decay_regime", "moderate"),
                    beta=f.get("beta_regime", "uniform"), seed=int(f["seed"]))


def _la_case(f: dict[str, Any]) -> Case:
    rule = f["rule"]
    decay = f["decay"] or ("head" if rule in GATED_RULES else None)
    beta = f["beta"] or ("head" if rule in DELTA_RULES else None)
    shape = Shape(batch=f["batch"], seq_len=_seq_len(f), q_heads=f["q_heads"], kv_heads=f["kv_heads"],
                  key_heads=f["key_heads"], d_k=f["d_k"], d_v=f["d_v"], state_window=f["window"])
    layout = Layout(update_rule=rule, dtype=f["dtype"], decay_per_row=None if decay is None else decay == "row",
                    beta_shared=None if beta is None else beta == "shared", has_past=f["past"], scale=f["scale"])
    return build_la_case(shape, layout, _numerics(f), aliased=f["aliased"], notes=_notes(f))


def _block(table: dict[str, Any], seed: int) -> Block:
    rule = table.get("rule", "gated_delta")
    decay, beta = table.get("decay", "head"), table.get("beta", "head")
    return Block(q_heads=table["q_heads"], kv_heads=table["kv_heads"], key_heads=table["key_heads"],
                 d_k=table["d_k"], d_v=table["d_v"], update_rule=rule,
                 decay_per_row=(decay == "row") if rule in GATED_RULES else None,
                 beta_shared=(beta == "shared") if rule in DELTA_RULES else None,
                 magnitude="unit", decay="moderate", beta="uniform", seed=seed + 1)


def _conv_case(f: dict[str, Any]) -> Case:
    notes = _notes(f)
    channels = int(f["channels"])
    if f["block"] is not None:
        block = _block(f["block"], int(f["seed"]))
        widths: QkvWidths = block.widths
        channels = widths.channels
        notes = {**notes, "accept_mode": f["block"].get("mode", "copy"), "block": block.notes()}
    shape = ConvShape(batch=f["batch"], seq_len=_seq_len(f), state_window=f["window"], ndim=1,
                      channels_last=f["channels_last"], channel_shape=(channels,), spatial=(), kernel=(f["kernel"],),
                      dilation=f["dilation"])
    layout = ConvLayout(activation=f["activation"], dtype=f["dtype"], has_bias=f["bias"], has_past=f["past"],
                        write_defaults=False)
    return build_conv_case(shape, layout, _numerics(f), aliased=f["aliased"], notes=notes)


def _gdn_case(f: dict[str, Any]) -> Case:
    shape = GdnShape(lengths=tuple(f["lengths"]), ragged=f["ragged"], q_heads=f["q_heads"], group=f["group"],
                     d_k=f["d_k"], d_v=f["d_v"], rank4=f["rank4"], packed=f["packed"])
    counts = None if f["capture_counts"] is None else tuple(f["capture_counts"])
    layout = GdnLayout(update_rule=f["rule"], dtype=f["dtype"], gate_activation=f["gate_activation"],
                       beta_activation=f["beta_activation"], qk_l2_norm=f["qk_l2_norm"], capacity=f["capacity"],
                       capture_counts=counts, active=f["active"], has_initial_state=f["initial_state"])
    return build_gdn_case(shape, layout, int(f["seed"]))


def _target(bug: Bug) -> Target:
    if bug.target is None:
        raise ValueError(f"bug {bug.id} has no targeted case")
    return bug.target


def build_case(bug: Bug) -> Case:
    """The targeted case of ``bug``, deterministic in its seed; ``ValueError`` for an unknown field or a bug without
    one (a blind mutant)."""
    f = _fields(_target(bug), bug.op)
    if bug.op == "GatedDeltaNet":
        return _gdn_case(f)
    if bug.op == "GatedDeltaNetStateReplay":
        pads = (int(f["pads"][0]), int(f["pads"][1]), int(f["pads"][2]))
        return build_replay_case(_gdn_case(f), f["request"], f["kept"], pads=pads, shared=f["shared"])
    case = _la_case(f) if bug.op == "LinearAttention" else _conv_case(f)
    return poisoned(case, f["poison"])


def parse_swap(text: str | None) -> dict[str, str]:
    """``OLD=NEW,...``: backends a targeted case runs in place of those its catalogue entry names (the same
    cases on another platform: ``wgpu=wgpu-swiftshader``); ``ValueError`` for an item without ``=``."""
    pairs = [item.strip() for item in (text or "").split(",") if item.strip()]
    if any(item.count("=") != 1 for item in pairs):
        raise ValueError(f"--swap {text!r}: expected OLD=NEW[,OLD=NEW...]")
    return {old.strip(): new.strip() for old, new in (item.split("=") for item in pairs)}


def check(bug: Bug, backends: dict[str, Backend] | None = None, swap: dict[str, str] | None = None) -> Verdict:
    """Run ``bug``'s targeted case once, in this process's tree; ``backends`` are reused across calls by name;
    ``swap`` replaces backends of its entry by others (``parse_swap``)."""
    start = time.perf_counter()
    pool = {} if backends is None else backends
    target = _target(bug)
    names = [(swap or {}).get(name, name) for name in target.backends]

    def verdict(kind: str, detail: str) -> Verdict:
        return Verdict(kind, detail, round(time.perf_counter() - start, 2))

    try:
        case = build_case(bug)
        chosen = [pool[name] if name in pool else pool.setdefault(name, create(name)) for name in names]
        result = resolve_property(target.property).check(case, chosen)
    except PropertyFailure as failure:
        return verdict(FAILS, failure.finding.signature)
    except Exception as err:  # a backend or the oracle raising is the bug showing: what a campaign reports too
        return verdict(FAILS, f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
    if result is None:
        return verdict(VACUOUS, "the property checked nothing")
    sat_out = {who: why for who, why in result.skipped.items() if who in names or who == "*"}
    if sat_out or result.comparisons == 0:
        return verdict(VACUOUS, "; ".join(f"{who}: {why}" for who, why in sat_out.items()) or "nothing compared")
    return verdict(PASSES, f"{result.comparisons} comparisons, largest ratio {result.max_ratio:.3g}")


def main(argv: list[str] | None = None) -> int:
    """Check the named bugs' targeted cases here; one JSON line per bug (``id``, ``verdict``, ``detail``,
    ``seconds``). Exit 0 when every case ran (whatever its verdict), 2 on bad usage."""
    parser = argparse.ArgumentParser(prog="python -m fuzz.bench.hunt.targeted", description=main.__doc__)
    parser.add_argument("bugs", help="comma-separated bug ids")
    parser.add_argument("--catalogue", default=str(CATALOGUE))
    parser.add_argument("--swap", help="OLD=NEW,...: backends run in place of those the entries name")
    args = parser.parse_args(argv)
    try:
        swap = parse_swap(args.swap)
    except ValueError as err:
        parser.error(str(err))
    environment.prepare()
    pool: dict[str, Backend] = {}
    for bug in select(load(Path(args.catalogue)), args.bugs):
        v = check(bug, pool, swap)
        print(json.dumps({"id": bug.id, "verdict": v.verdict, "detail": v.detail[:300], "seconds": v.seconds}),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
