"""The benchmarked calls: shapes, deterministic inputs, and one kernel call bound on the device.

Every configuration runs the default update rule (``gated_delta``, the most work per token) with
per-head decay and beta, ``H_q = H_kv``, and a past state. Past and present state are separate
buffers (not aliased), so select-a-slot-and-resume is a rebind (where slots are aligned) or one
slot copy, never with scratch, and the original past state survives a zero-token acceptance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernels import BoundCall, DeviceTensor, LinearAttentionKernel

UPDATE_RULE = "gated_delta"


@dataclass(frozen=True)
class Shape:
    """``B, H_kv (= H_q), d_k, d_v`` of a benchmarked call, named as in ``oracles.Dims``."""

    batch: int
    kv_heads: int
    d_k: int
    d_v: int

    @classmethod
    def parse(cls, text: str) -> Shape:
        """``"B,H,dk,dv"`` (e.g. ``"1,32,128,128"``)."""
        try:
            values = [int(part) for part in text.split(",")]
        except ValueError:
            raise ValueError(f"shape {text!r}: expected four integers B,H,dk,dv") from None
        if len(values) != 4 or min(values) < 1:
            raise ValueError(f"shape {text!r}: expected four positive integers B,H,dk,dv")
        return cls(*values)

    @property
    def q_heads(self) -> int:
        """``H_q``: every benchmarked call has as many query heads as value heads."""
        return self.kv_heads

    @property
    def label(self) -> str:
        return f"B={self.batch} H={self.kv_heads} dk={self.d_k} dv={self.d_v}"

    def slot_shape(self) -> tuple[int, int, int, int]:
        return (self.batch, self.kv_heads, self.d_k, self.d_v)


REFERENCE_SHAPE = Shape(1, 32, 128, 128)
"""docs/spec.md §5's reference size: fp16 state is 1 MiB per slot."""

QUICK_SHAPE = Shape(1, 4, 32, 32)
"""The small shape of ``--quick`` (a software adapter runs it in well under a millisecond)."""


def attributes(shape: Shape, window: int) -> dict[str, object]:
    """The node attributes of a benchmarked call (``state_window`` omitted at ``W = 0``)."""
    attrs: dict[str, object] = {
        "q_num_heads": shape.q_heads, "kv_num_heads": shape.kv_heads, "update_rule": UPDATE_RULE,
    }
    if window:
        attrs["state_window"] = window
    return attrs


def host_inputs(shape: Shape, seq_len: int, window: int, dtype: str, seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs of moderate magnitude (unit-norm keys, decay in (-0.5, 0), beta in (0, 1)) in ``dtype``."""
    rng = np.random.default_rng(seed)
    b, h, d_k, d_v = shape.slot_shape()
    key = rng.standard_normal((b, seq_len, h, d_k))
    key /= np.linalg.norm(key, axis=-1, keepdims=True)
    arrays = {
        "query": rng.standard_normal((b, seq_len, h * d_k)),
        "key": key.reshape(b, seq_len, h * d_k),
        "value": rng.standard_normal((b, seq_len, h * d_v)),
        "past_state": 0.1 * rng.standard_normal(((window,) if window else ()) + shape.slot_shape()),
        "decay": -0.5 * rng.random((b, seq_len, h)),
        "beta": rng.random((b, seq_len, h)),
    }
    return {name: array.astype(dtype) for name, array in arrays.items()}


class Workload:
    """One configuration's inputs on the device and its bound call; ``release`` frees everything."""

    def __init__(self, kernel: LinearAttentionKernel, shape: Shape, seq_len: int, window: int, dtype: str) -> None:
        self.kernel = kernel
        self.shape = shape
        self.seq_len = seq_len
        self.window = window
        self.dtype = dtype
        device = kernel.device
        self.inputs: dict[str, DeviceTensor] = {
            name: device.upload(array, name) for name, array in host_inputs(shape, seq_len, window, dtype).items()
        }
        given = self.inputs
        self.call: BoundCall = kernel.prepare(
            given["query"], given["key"], given["value"], given.get("past_state"), given.get("decay"),
            given.get("beta"), q_num_heads=shape.q_heads, kv_num_heads=shape.kv_heads, update_rule=UPDATE_RULE,
            state_window=window)

    def fence(self) -> None:
        """Wait for the queue by reading the output back (the same bytes ORT's fence reads)."""
        self.kernel.device.download(self.call.output)

    def release(self) -> None:
        for tensor in [*self.inputs.values(), self.call.output, self.call.present_state]:
            tensor.release()
        self.call.release()
