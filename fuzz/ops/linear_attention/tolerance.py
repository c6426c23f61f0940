"""LinearAttention's exact answer: the float64 oracle's result with the magnitudes its tolerances scale with.

The tolerance model is the suite's one (``fuzz.engine.tolerance``, whose docstring is the derivation); this
module supplies what is particular to LinearAttention: the block of each element (``Exact``) and its depth,
``tokens + d_k``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from fuzz.engine.tolerance import UNDERFLOW_FLOOR, array_digest, remembered
from oracles.recurrence import run_recurrence, seed_state, window_from_states, window_size
from oracles.validation import DELTA_RULES, GATED_RULES, Dims, validate


@dataclass(frozen=True)
class Exact:
    """The float64 answer to one call, with the magnitude each element's tolerance scales with.

    Rounding errors are made on the terms of each update, not on its result: a delta update whose
    retrieval cancels the value (``v - S^T k ~ 0``) leaves a small state carrying the errors of
    large terms. So a state's block is ``M_t``, the magnitude of the terms behind it:
    ``M_t = max(gamma_t * M_{t-1}, term_t)`` with ``term_t = gamma_t |S_{t-1}| (1 + b |k|^2) + b |k| |v|``
    (delta rules; ``gamma_t |S_{t-1}| + |k| |v|`` otherwise), ``gamma_t`` the largest decay factor
    of the token (1 without decay) and ``M_0 = |past|``. Earlier errors only shrink under decays
    and under ``I - b k k^T`` (norm <= 1 while ``b |k|^2 <= 2``, as generated), so the error after
    ``t`` tokens stays within ``t`` roundings of ``M_t``. An output's block is ``scale * |q| * M_t``,
    which bounds every term of the readout sum (Cauchy-Schwarz). Norms are Frobenius, per head.
    ``M_t`` is floored at ``UNDERFLOW_FLOOR`` (the underflow term of the module docstring).
    """

    output: np.ndarray
    present_state: np.ndarray
    scale: float
    q_norm: np.ndarray
    """``|q|`` per ``(batch, token, output head)``."""
    magnitude: np.ndarray
    """``M_t`` for ``t = 0..T`` tokens, per ``(batch, t, kv head)``."""
    head_map: np.ndarray
    """The kv head each output head reads."""
    peak: float
    """The largest magnitude of the output and of the state after any token (what a stored type must hold)."""

    @cached_property
    def output_block(self) -> np.ndarray:
        """Broadcast to ``output``'s shape (computed once: every comparison of a check reads it)."""
        return self._readout_block(self.magnitude[:, 1:, self.head_map])

    @cached_property
    def state_block(self) -> np.ndarray:
        """Broadcast to ``present_state``'s shape (zero for slots that represent no token; computed once)."""
        seq_len = self.magnitude.shape[1] - 1
        if self.present_state.ndim == 4:
            return np.broadcast_to(self.magnitude[:, seq_len, :, None, None], self.present_state.shape)
        window = self.present_state.shape[0]
        tokens = seq_len - window + 1 + np.arange(window)
        slots = np.where((tokens >= 1)[:, None, None], self.magnitude[:, np.maximum(tokens, 0)].swapaxes(0, 1), 0.0)
        return np.broadcast_to(slots[..., None, None], self.present_state.shape)

    def _readout_block(self, magnitude: np.ndarray) -> np.ndarray:
        per_head = self.scale * self.q_norm * magnitude
        d_v = self.output.shape[-1] // per_head.shape[-1]
        return np.repeat(per_head, d_v, axis=-1)

    def part(self, tensor: str) -> tuple[np.ndarray, np.ndarray]:
        """``(values, block)`` of ``"output"`` or ``"present_state"``."""
        if tensor == "output":
            return self.output, self.output_block
        return self.present_state, self.state_block

    def reseeded_at(self, tokens: int, storage: np.dtype) -> Blocks:
        """Blocks for a run that resumed from the state after ``tokens`` tokens, stored as ``storage``.

        ``M`` already covers that state's magnitude from then on; below the smallest normal number
        the rounding is absolute, so the seed counts as at least ``smallest_normal * sqrt(d_k * d_v)``.
        """
        d_k, d_v = self.present_state.shape[-2:]
        floor = float(np.finfo(storage).smallest_normal) * np.sqrt(d_k * d_v)
        state_block = np.maximum(self.state_block, floor)
        out_floor = self._readout_block(np.full(self.q_norm.shape, floor))
        return Blocks(self, np.maximum(self.output_block, out_floor), state_block)


@dataclass(frozen=True)
class Blocks:
    """An ``Exact`` answer with widened blocks (see ``Exact.reseeded_at``)."""

    exact: Exact
    output_block: np.ndarray
    state_block: np.ndarray

    def part(self, tensor: str) -> tuple[np.ndarray, np.ndarray]:
        if tensor == "output":
            return self.exact.output, self.output_block
        return self.exact.present_state, self.state_block


def _frobenius(states: np.ndarray) -> np.ndarray:
    return np.sqrt(np.sum(np.square(states), axis=(-2, -1)))


def _term_magnitudes(dims: Dims, inputs: dict[str, np.ndarray], seed: np.ndarray,
                     norms: list[np.ndarray]) -> np.ndarray:
    """``M_t`` of ``Exact``'s docstring for ``t = 0..T``: shape ``(B, T + 1, H_kv)``; ``norms`` are the
    Frobenius norms of the states after each token, ``(B, H_kv)`` each."""
    b, t, h = dims.batch, dims.seq_len, dims.kv_heads
    f64 = np.float64
    k = np.linalg.norm(inputs["key"].astype(f64).reshape(b, t, dims.key_heads, dims.d_k), axis=-1)
    k = np.repeat(k, h // dims.key_heads, axis=2)
    v = np.linalg.norm(inputs["value"].astype(f64).reshape(b, t, h, dims.d_v), axis=-1)
    gamma = np.ones((b, t, h))
    if dims.update_rule in GATED_RULES:
        gamma = np.exp(inputs["decay"].astype(f64).reshape(b, t, h, -1).max(axis=-1))
    previous = np.stack([_frobenius(seed), *norms[:-1]], axis=1) * gamma
    if dims.update_rule in DELTA_RULES:
        beta = np.broadcast_to(inputs["beta"].astype(f64), (b, t, h))
        terms = previous * (1 + beta * k**2) + beta * k * v
    else:
        terms = previous + k * v
    magnitude = np.empty((b, t + 1, h))
    magnitude[:, 0] = _frobenius(seed)
    for i in range(t):
        magnitude[:, i + 1] = np.maximum(gamma[:, i] * magnitude[:, i], terms[:, i])
    return magnitude


def _call_digest(dims: Dims, inputs: dict[str, np.ndarray], seed: np.ndarray) -> bytes:
    """A digest of everything the oracle's answer depends on: the attributes, the token inputs and the
    seed (the past state enters only as slot ``W - 1``, so slots a poisoned case changes do not count)."""
    tokens = ((n, inputs.get(n)) for n in ("query", "key", "value", "decay", "beta"))
    return array_digest(repr(dims), (*tokens, ("seed", seed)))


def exact_answer(inputs: dict[str, np.ndarray], attrs: dict) -> Exact:
    """Run the float64 oracle on one valid call and derive the magnitudes of its tolerances.

    The last ``ANSWERS_KEPT`` answers are remembered by content; their arrays are read-only."""
    call: dict[str, Any] = {**inputs, **attrs}
    dims = validate(**call, allow_empty_sequence=False)
    seed = seed_state(dims, inputs.get("past_state"))
    return remembered(_call_digest(dims, inputs, seed), lambda: _answer(dims, inputs, seed))


def _answer(dims: Dims, inputs: dict[str, np.ndarray], seed: np.ndarray) -> Exact:
    norms: list[np.ndarray] = []
    peaks: list[float] = []

    def measure(state: np.ndarray) -> None:  # every state's size, without keeping T states
        norms.append(_frobenius(state))
        peaks.append(float(np.max(np.abs(state))))

    output, states = run_recurrence(
        dims, inputs["query"], inputs["key"], inputs["value"], seed, inputs.get("decay"), inputs.get("beta"),
        keep=window_size(dims), each=measure,
    )
    b, t = dims.batch, dims.seq_len
    q_norm = np.linalg.norm(inputs["query"].astype(np.float64).reshape(b, t, dims.q_heads, dims.d_k), axis=-1)
    if dims.q_heads >= dims.kv_heads:
        head_map = np.arange(dims.q_heads) // (dims.q_heads // dims.kv_heads)
    else:
        head_map = np.arange(dims.kv_heads)
        q_norm = np.repeat(q_norm, dims.kv_heads // dims.q_heads, axis=2)
    answer = Exact(
        output=output, present_state=window_from_states(dims, states), scale=dims.scale, q_norm=q_norm,
        magnitude=np.maximum(_term_magnitudes(dims, inputs, seed, norms), UNDERFLOW_FLOOR), head_map=head_map,
        peak=max(float(np.max(np.abs(output), initial=0.0)), *peaks),
    )
    for array in (answer.output, answer.present_state, answer.q_norm, answer.magnitude, answer.head_map):
        array.setflags(write=False)
    return answer
