"""The forward test grids of causal-conv1d, as data, and the mapping from its conventions
(``support.causal_conv1d_reference``) to CausalConvWithState's inputs and attributes (docs/spec.md §7).

Upstream: github.com/Dao-AILab/causal-conv1d at ``0d2252d161f25f7907bbd05985c08ab98d255874`` (2026-03-10), read on
2026-12-03: ``tests/test_causal_conv1d.py`` and the references in ``causal_conv1d/causal_conv1d_interface.py``.
Hugging Face's Qwen3-Next ``torch_causal_conv1d_update`` is causal-conv1d's update without ``cache_seqlens``, with a
state of ``width`` positions (one more than read) and SiLU always; its tests are model tests and add no parameter.

**Ported**:

- ``test_causal_conv1d`` (the whole-sequence function): every combination of layout, initial and final states that
  upstream runs (channels first runs neither), float32 and float16, bias, SiLU, widths 2, 3, 4, at ``dim = 64`` for
  ``seqlen`` 2 (shorter than a width-4 state) and 129 (one decode position is the update's ``seqlen = 1``), and
  at ``dim = 4128`` (not a multiple of 64) for ``seqlen = 151`` with bias and SiLU; upstream's other lengths (1, 8
  to 4096) and combinations at 4128 channels are left out for time.
- ``test_causal_conv1d_update`` (decode): its whole grid (float32 and float16, bias, SiLU, circular buffer or not,
  ``seqlen`` 1, 4, 5, widths 2, 3, 4, ``dim`` 2048, 2064, 4096), with batch 2 instead of 64 (rows are independent).

Inputs are drawn from upstream's distributions with NumPy, seeded by the case's name (not torch's draws), so the
state length of an update (``width - 1 <= state_len < width + 10``) and its ``cache_seqlens`` vary by case.

**How the contracts differ, and the mapping**: ``x (batch, dim, seqlen)`` is our channels-first ``input``, or, where
upstream stores it channels last, our ``channels_last = 1`` input ``(batch, seqlen, dim)``; ``weight (dim, width)``
is ``(dim, 1, width)``; ``initial_states`` is ``past_state``. Upstream keeps ``weight`` and ``bias`` in float32
beside float16 activations; our op has one element type, so they are rounded to float16 (both sides then run on
the rounded values). An update's ``conv_state`` may be longer than the ``width - 1`` positions it reads, and circular
with ``cache_seqlens``: our state is exactly the positions read, oldest first, so the mapping reads those out as
``past_state`` and compares our ``present_state`` with the same positions of upstream's updated buffer (the
buffer's older positions are a copy the caller keeps). ``state_window`` is ours: windowed rows re-run an upstream
row with a window, each slot checked against the reference's state after that prefix.

Left out (``OUTSIDE_CONTRACT``): bfloat16, backward passes, variable-length packing, and the state pool of
``conv_state_indices``.
"""

from __future__ import annotations

import itertools
import zlib
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from fuzz.model.case import Case
from fuzz.model.ops import CAUSAL_CONV

from . import causal_conv1d_reference as ref

UPSTREAM = "Dao-AILab/causal-conv1d@0d2252d161f25f7907bbd05985c08ab98d255874"
FN, UPDATE = "test_causal_conv1d", "test_causal_conv1d_update"
MAX_BATCH = 2


@dataclass(frozen=True)
class Conv1dCase:
    """One upstream row: which test, its sizes and options (batch as ported), and our window if any."""

    test: str
    dim: int
    seqlen: int
    width: int
    bias: bool
    silu: bool
    dtype: str
    channel_last: bool = False
    initial_states: bool = False
    final_states: bool = False
    cache_seqlens: bool = False
    state_window: int = 0

    @property
    def name(self) -> str:
        flags = [("bias", self.bias), ("silu", self.silu), ("channel_last", self.channel_last),
                 ("initial", self.initial_states), ("final", self.final_states), ("cache", self.cache_seqlens)]
        tail = f"-W{self.state_window}" if self.state_window else ""
        on = "".join(f"-{n}" for n, value in flags if value)
        return f"{self.test}[dim{self.dim}-seqlen{self.seqlen}-width{self.width}-{self.dtype}{on}]{tail}"

    @property
    def positions(self) -> int:
        return self.seqlen

    @property
    def state_length(self) -> int:
        return self.width - 1

    def draw(self) -> dict[str, np.ndarray]:
        """Upstream's inputs in its layout, as the op receives them (rounded to the dtype): ``x``, ``weight``,
        ``bias``, and ``initial_states`` or ``conv_state`` (with ``cache_seqlens``) where the row has them."""
        rng = np.random.default_rng(zlib.crc32(self.name.encode()))
        b, d = MAX_BATCH, self.dim
        drawn = {"x": rng.standard_normal((b, d, self.seqlen)), "weight": rng.standard_normal((d, self.width))}
        if self.bias:
            drawn["bias"] = rng.standard_normal(d)
        if self.initial_states:
            drawn["initial_states"] = rng.standard_normal((b, d, self.state_length))
        if self.test == UPDATE:
            drawn["conv_state"] = rng.standard_normal((b, d, int(rng.integers(self.width - 1, self.width + 10))))
        arrays = {name: x.astype(self.dtype) for name, x in drawn.items()}
        if self.cache_seqlens:
            arrays["cache_seqlens"] = rng.integers(0, 1024, b)
        return arrays

    def _ends(self, drawn: dict[str, np.ndarray], seqlen: int = 0) -> np.ndarray:
        """Where the ordered state ends in an update's buffer, per row, after ``seqlen`` positions were written."""
        return drawn.get("cache_seqlens", np.zeros(MAX_BATCH, dtype=np.int64)) + (seqlen if self.cache_seqlens else 0)

    def reference(self, drawn: dict[str, np.ndarray], steps: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Upstream's reference over the first ``steps`` positions: ``(out, the state it leaves)``, both
        ``(batch, dim, ...)``; for an update, the state is the ``width - 1`` positions our op keeps."""
        steps = self.seqlen if steps is None else steps
        x, act = drawn["x"][..., :steps], "silu" if self.silu else None
        if self.test == FN:
            return ref.causal_conv1d(x, drawn["weight"], drawn.get("bias"), drawn.get("initial_states"), act)
        out, updated = ref.causal_conv1d_update(x, drawn["conv_state"], drawn["weight"], drawn.get("bias"), act,
                                                drawn.get("cache_seqlens"))
        return out, ref.ordered(updated, self._ends(drawn, steps), self.state_length)

    def _layout(self, x: np.ndarray) -> np.ndarray:
        """``(batch, dim, positions)`` in the op's layout: channels last moves ``dim`` to the end."""
        return np.ascontiguousarray(x.transpose(0, 2, 1)) if self.channel_last else x

    def op_case(self, drawn: dict[str, np.ndarray]) -> Case:
        """The same call as CausalConvWithState takes it (docs/spec.md §7); a window's unread past slots hold NaN."""
        inputs = {"input": self._layout(drawn["x"]), "weight": drawn["weight"][:, None, :]}
        if "bias" in drawn:
            inputs["bias"] = drawn["bias"]
        seed = drawn.get("initial_states")
        if "conv_state" in drawn:
            seed = ref.ordered(drawn["conv_state"], self._ends(drawn), self.state_length)
        if seed is not None:
            seed = self._layout(seed)
            if self.state_window:
                past = np.full((self.state_window, *seed.shape), np.nan, dtype=seed.dtype)
                past[-1] = seed
                seed = past
            inputs["past_state"] = seed
        attrs: dict[str, Any] = {"activation": "silu" if self.silu else "none"}
        if self.channel_last:
            attrs["channels_last"] = 1
        if self.state_window:
            attrs["state_window"] = self.state_window
        return Case(inputs=inputs, attrs=attrs, op=CAUSAL_CONV, notes={"upstream": f"{UPSTREAM} {self.name}"})

    def from_op(self, output: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The op's ``output`` and one state slot back in upstream's ``(batch, dim, ...)`` layout."""
        if not self.channel_last:
            return np.asarray(output), np.asarray(state)
        return np.asarray(output).transpose(0, 2, 1), np.asarray(state).transpose(0, 2, 1)


FLOATS = ("float32", "float16")
STATE_OPTIONS = ((False, False, False), (True, False, False), (True, True, False), (True, False, True),
                 (True, True, True))
"""``(channel_last, initial_states, final_states)`` as upstream runs them: channels first supports neither state."""

FN_CASES: tuple[Conv1dCase, ...] = (
    *(Conv1dCase(FN, 64, seqlen, width, bias, silu, dtype, *states)
      for seqlen, states, dtype, bias, silu, width in itertools.product(
          (2, 129), STATE_OPTIONS, FLOATS, (False, True), (False, True), (2, 3, 4))),
    *(Conv1dCase(FN, 4096 + 32, 151, width, True, True, dtype, *states)
      for states, dtype, width in itertools.product(STATE_OPTIONS, FLOATS, (2, 3, 4))),
)
UPDATE_CASES: tuple[Conv1dCase, ...] = tuple(
    Conv1dCase(UPDATE, dim, seqlen, width, bias, silu, dtype, cache_seqlens=cache)
    for dtype, silu, bias, cache, seqlen, width, dim in itertools.product(
        FLOATS, (False, True), (False, True), (False, True), (1, 4, 5), (2, 3, 4), (2048, 2048 + 16, 4096)))

WINDOWED: tuple[Conv1dCase, ...] = (
    Conv1dCase(UPDATE, 2048 + 16, 4, 4, True, True, "float32", state_window=4),
    Conv1dCase(UPDATE, 2048 + 16, 5, 3, True, False, "float16", cache_seqlens=True, state_window=8),
    Conv1dCase(UPDATE, 2048, 1, 2, False, True, "float32", cache_seqlens=True, state_window=1),
    Conv1dCase(FN, 64, 129, 4, True, True, "float32", True, True, True, state_window=8),
    Conv1dCase(FN, 64, 2, 3, False, True, "float16", state_window=5),
)
"""Our extension: upstream rows run with a window (``T < W`` included), slots against the reference's prefixes."""

CASES: tuple[Conv1dCase, ...] = (*FN_CASES, *UPDATE_CASES, *WINDOWED)

KERNEL_CASES: tuple[Conv1dCase, ...] = (
    Conv1dCase(UPDATE, 2048 + 16, 4, 4, True, True, "float32", cache_seqlens=True),
    Conv1dCase(UPDATE, 4096, 1, 2, False, False, "float16"),
    Conv1dCase(FN, 64, 129, 4, True, True, "float32", True, True, True),
    Conv1dCase(FN, 64, 2, 3, False, True, "float16"),
    replace(FN_CASES[-1], dtype="float32"),
    *WINDOWED[:2],
)
"""The subset run through both kernels: both entry points, both layouts and dtypes, the circular buffer, a window."""


@dataclass(frozen=True)
class OutsideContract:
    """An upstream test not ported, and why."""

    test: str
    reason: str


OUTSIDE_CONTRACT: tuple[OutsideContract, ...] = (
    OutsideContract("bfloat16 rows of every test", "the contract's types are float32 and float16 (spec §7)"),
    OutsideContract("test_causal_conv1d_update_with_batch_gather",
                    "conv_state_indices picks each row's state from a larger pool: the caller's gather and scatter "
                    "around the op; with the rows gathered it is test_causal_conv1d_update's call"),
    OutsideContract("test_causal_conv1d_update_with_padding",
                    "the state pool as above, with rows marked -1 skipped (output zero, state untouched): "
                    "batching bookkeeping, not the convolution"),
    OutsideContract("test_causal_conv1d_get_states",
                    "causal_conv1d_varlen_states gathers the last positions of packed sequences: no convolution"),
    OutsideContract("test_causal_conv1d_varlen, test_causal_conv1d_varlen_padding",
                    "packed variable-length sequences (seq_idx): another operator's contract (ORT's "
                    "VarlenCausalConvWithState)"),
    OutsideContract("test_causal_conv1d_race_condition, test_causal_conv1d_bwd_deterministic_*, "
                    "test_causal_conv1d_bwd_default_mode_is_not_reproducible",
                    "repeatability of the CUDA kernel's backward pass: the contract has no backward"),
)
