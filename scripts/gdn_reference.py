"""Record ONNX Runtime's answers to a grid of one-node ``com.microsoft::GatedDeltaNet`` models, with state-update
capture, on every execution provider this onnxruntime offers (the CUDA EP on a GPU machine), for the oracle to be
checked against later on any machine.

Usage: python3 scripts/gdn_reference.py OUTDIR [--providers CUDAExecutionProvider,CPUExecutionProvider]

Writes OUTDIR/cases.npz (every case's inputs and each provider's outputs, keyed ``<case>/<name>``) and
OUTDIR/cases.json (each case's attributes, shapes and, per provider, ``ok`` or the error it raised), and
prints one line per case and a total. Needs only numpy, onnx and onnxruntime.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

INPUTS = ("query", "key", "value", "cu_seqlens", "decay", "beta", "initial_state", "a_log", "dt_bias",
          "capture_count", "state_update_active")
OUTPUTS = ("output", "final_state", "state_update")
ELEM = {np.dtype("float32"): TensorProto.FLOAT, np.dtype("float16"): TensorProto.FLOAT16,
        np.dtype("int32"): TensorProto.INT32}


def model(feeds: dict[str, np.ndarray], attrs: dict[str, Any], outputs: tuple[str, ...]) -> bytes:
    names = [n if n in feeds else "" for n in INPUTS]
    while names and not names[-1]:
        names.pop()
    node = helper.make_node("GatedDeltaNet", names, list(outputs), domain="com.microsoft", **attrs)
    graph = helper.make_graph(
        [node], "gdn",
        [helper.make_tensor_value_info(n, ELEM[feeds[n].dtype], list(feeds[n].shape)) for n in names if n],
        [helper.make_tensor_value_info(n, ELEM[np.dtype("float16")] if n == "output" and feeds["query"].dtype ==
                                       np.float16 else TensorProto.FLOAT, None) for n in outputs])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 10
    return m.SerializeToString()


def case(rng: np.random.Generator, *, lens: tuple[int, ...], hq: int, hv: int, dk: int, dv: int, rule: str,
         dtype: str, capacity: int, counts: tuple[int, ...] | None, gate: str, beta_act: str, l2: int,
         varlen: bool, active: int | None) -> tuple[dict[str, np.ndarray], dict[str, Any], tuple[str, ...]]:
    total, batch = sum(lens), len(lens)
    dt = np.dtype(dtype)

    def unit(shape: tuple[int, ...]) -> np.ndarray:
        x = rng.standard_normal(shape)
        return x / np.linalg.norm(x, axis=-1, keepdims=True)

    feeds: dict[str, np.ndarray] = {
        "query": (unit((total, hq, dk)) if not l2 else rng.standard_normal((total, hq, dk))).astype(dt),
        "key": (unit((total, hq, dk)) if not l2 else rng.standard_normal((total, hq, dk))).astype(dt),
        "value": rng.standard_normal((total, hv, dv)).astype(dt),
        "initial_state": (0.5 * rng.standard_normal((batch, hv, dv, dk))).astype(np.float32),
    }
    if varlen:
        feeds["cu_seqlens"] = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    if rule in ("gated", "gated_delta"):
        if gate == "qwen":
            feeds["decay"] = rng.standard_normal((total, hv)).astype(np.float32)
            feeds["a_log"] = (0.5 * rng.standard_normal(hv)).astype(np.float32)
            feeds["dt_bias"] = (0.5 * rng.standard_normal(hv)).astype(np.float32)
        else:
            feeds["decay"] = -rng.uniform(0.01, 1.0, (total, hv)).astype(np.float32)
    if rule in ("delta", "gated_delta"):
        feeds["beta"] = (rng.standard_normal((total, hv)) if beta_act == "sigmoid"
                         else rng.uniform(0.05, 1.0, (total, hv))).astype(np.float32)
    attrs: dict[str, Any] = {"update_rule": rule, "qk_l2_norm": l2, "state_update_capacity": capacity}
    if gate == "qwen" and rule in ("gated", "gated_delta"):
        attrs["gate_activation"] = "qwen"
    if beta_act == "sigmoid" and rule in ("delta", "gated_delta"):
        attrs["beta_activation"] = "sigmoid"
    outputs: tuple[str, ...] = ("output", "final_state")
    if capacity:
        feeds["capture_count"] = np.asarray(counts, dtype=np.int32)
        outputs = OUTPUTS
        if active is not None:
            feeds["state_update_active"] = np.asarray([active], dtype=np.int32)
    return feeds, attrs, outputs


def grid() -> list[dict[str, Any]]:
    """The cases: every rule, both dtypes, inverse GQA, varlen batches, each activation, qk_l2_norm, capacities 1..8
    with capture counts below, at and above the tokens, capture switched off, and no capture."""
    specs: list[dict[str, Any]] = []
    for rule, dtype, (hq, hv), l2 in itertools.product(("linear", "gated", "delta", "gated_delta"),
                                                        ("float32", "float16"), ((2, 2), (1, 4), (2, 4)), (0, 1)):
        specs.append(dict(lens=(5,), hq=hq, hv=hv, dk=8, dv=8, rule=rule, dtype=dtype, capacity=4, counts=(4,),
                          gate="none", beta_act="none", l2=l2, varlen=False, active=None))
    for capacity in range(1, 9):
        for lens, counts in (((6,), (capacity,)), ((3, 9), (capacity + 2, max(0, capacity - 1))),
                             ((capacity, 1, 7), (capacity, 5, 9))):
            specs.append(dict(lens=lens, hq=2, hv=4, dk=16, dv=8, rule="gated_delta", dtype="float32",
                              capacity=capacity, counts=counts, gate="qwen", beta_act="sigmoid", l2=1, varlen=True,
                              active=None))
    for gate, beta_act, active in itertools.product(("none", "qwen"), ("none", "sigmoid"), (None, 0, 1)):
        specs.append(dict(lens=(4, 2), hq=2, hv=2, dk=8, dv=16, rule="gated_delta", dtype="float32", capacity=8,
                          counts=(8, 1), gate=gate, beta_act=beta_act, l2=1, varlen=True, active=active))
    for dtype in ("float32", "float16"):
        specs.append(dict(lens=(8,), hq=4, hv=8, dk=128, dv=128, rule="gated_delta", dtype=dtype, capacity=8,
                          counts=(8,), gate="qwen", beta_act="sigmoid", l2=1, varlen=False, active=1))
        specs.append(dict(lens=(3,), hq=2, hv=2, dk=8, dv=8, rule="gated_delta", dtype=dtype, capacity=0,
                          counts=None, gate="qwen", beta_act="sigmoid", l2=1, varlen=False, active=None))
    return specs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--providers", default=",".join(p for p in ort.get_available_providers()
                                                          if p in ("CUDAExecutionProvider", "CPUExecutionProvider")))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    providers = args.providers.split(",")
    print(f"onnxruntime {ort.__version__}; providers asked: {providers}; available: {ort.get_available_providers()}")
    arrays: dict[str, np.ndarray] = {}
    manifest: list[dict[str, Any]] = []
    ok = {p: 0 for p in providers}
    for i, spec in enumerate(grid()):
        rng = np.random.default_rng(1000 + i)
        feeds, attrs, outputs = case(rng, **spec)
        key = f"case{i:03d}"
        for name, value in feeds.items():
            arrays[f"{key}/input/{name}"] = value
        entry: dict[str, Any] = {"id": key, "spec": spec, "attrs": attrs, "outputs": list(outputs), "results": {}}
        blob = model(feeds, attrs, outputs)
        for provider in providers:
            try:
                session = ort.InferenceSession(blob, providers=[provider])
                if session.get_providers()[0] != provider:
                    raise RuntimeError(f"session fell back to {session.get_providers()}")
                got = session.run(list(outputs), feeds)
                for name, value in zip(outputs, got, strict=True):
                    arrays[f"{key}/{provider}/{name}"] = value
                entry["results"][provider] = "ok"
                ok[provider] += 1
            except Exception as err:  # every refusal is recorded, word for word
                entry["results"][provider] = f"{type(err).__name__}: {str(err).splitlines()[0][:400]}"
        manifest.append(entry)
        print(f"{key} {spec['rule']} {spec['dtype']} lens={spec['lens']} hq={spec['hq']} hv={spec['hv']} "
              f"C={spec['capacity']} counts={spec['counts']} gate={spec['gate']} beta={spec['beta_act']} "
              f"l2={spec['l2']} active={spec['active']}: "
              + "; ".join(f"{p}: {r}" for p, r in entry["results"].items()), flush=True)
    np.savez_compressed(args.out / "cases.npz", **arrays)
    (args.out / "cases.json").write_text(json.dumps({"onnxruntime": ort.__version__, "onnx": onnx.__version__,
                                                             "cases": manifest}, indent=1))
    print("total: " + ", ".join(f"{p} ran {n} of {len(manifest)}" for p, n in ok.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
