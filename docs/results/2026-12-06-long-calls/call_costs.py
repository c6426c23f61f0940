"""What one call costs at long ``T``: building a case (the float64 oracle and the tolerance model), the oracle alone,
and each backend, twice (the first call compiles its pipelines or sessions; the second is the call).

Run from the repository root, e.g.::

    nice .venv/bin/python docs/results/2026-12-06-long-calls/call_costs.py la oracle,wgpu,wgpu-dawn 1x1x16,1x2x128 \
        256,1024,2048
    nice .venv/bin/python docs/results/2026-12-06-long-calls/call_costs.py conv oracle,wgpu-conv 1024,8192 256,2048

LinearAttention shapes are ``BxHxd`` (MHA, ``d_k = d_v = d``; gated delta rule, per-head decay and beta, a past
state, float32); conv shapes are channels (one batch entry, channels last, kernel 4, SiLU, a bias, a window of 2,
float32). Prints one JSON line per shape and ``T``: seconds.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from fuzz.backends import create
from fuzz.model.case import Case
from fuzz.ops.causal_conv.strategies import ConvLayout, ConvShape, build_conv_case
from fuzz.ops.linear_attention.strategies import Layout, Numerics, Shape, build_case
from oracles import linear_attention
from oracles.causal_conv import causal_conv_with_state

NUMERICS = Numerics("unit", "normalised", "moderate", "uniform", 1)


def la_case(shape: str, seq_len: int) -> Case:
    b, h, d = (int(n) for n in shape.split("x"))
    sizes = Shape(batch=b, seq_len=seq_len, q_heads=h, kv_heads=h, key_heads=h, d_k=d, d_v=d, state_window=0)
    layout = Layout(update_rule="gated_delta", dtype="float32", decay_per_row=False, beta_shared=False,
                    has_past=True, scale=None)
    return build_case(sizes, layout, NUMERICS)


def conv_case(shape: str, seq_len: int) -> Case:
    sizes = ConvShape(batch=1, seq_len=seq_len, state_window=2, ndim=1, channels_last=True,
                      channel_shape=(int(shape),), spatial=(), kernel=(4,), dilation=1)
    layout = ConvLayout(activation="silu", dtype="float32", has_bias=True, has_past=True, write_defaults=False)
    return build_conv_case(sizes, layout, NUMERICS)


def timed(call: Any, *args: Any, **kwargs: Any) -> float:
    started = time.perf_counter()
    call(*args, **kwargs)
    return round(time.perf_counter() - started, 3)


def main() -> None:
    op, names, shapes, lengths = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(","), sys.argv[4].split(",")
    build, oracle = (la_case, linear_attention) if op == "la" else (conv_case, causal_conv_with_state)
    backends = {name: create(name) for name in names if name != "oracle"}
    for shape in shapes:
        for seq_len in (int(t) for t in lengths):
            started = time.perf_counter()
            case = build(shape, seq_len)
            row: dict[str, Any] = {"shape": shape, "T": seq_len, "case": round(time.perf_counter() - started, 3)}
            if "oracle" in names:
                row["oracle"] = timed(oracle, **case.inputs, **case.attrs)
            for name, backend in backends.items():
                try:
                    row[name] = [timed(backend.run, case) for _ in range(2)]
                except Exception as err:  # a backend's refusal or time-out is a result here
                    row[name] = f"{type(err).__name__}: {str(err)[:100]}"
            print(json.dumps(row), flush=True)
    for backend in backends.values():
        backend.close()


if __name__ == "__main__":
    main()
