"""The calls of a hybrid block around one rollback: CausalConvWithState, then LinearAttention on its output.

A gated DeltaNet layer runs the convolution over its q/k/v projection and LinearAttention on the result, split
into query, key and value (``oracles.block.split_qkv``), both with the window. A speculative decoder verifies
``T`` draft tokens through both (``draft``), accepts the first ``accepted``, selects the matching slot of both
states, and resumes with the next tokens (``resume``). ``BlockRun`` is what an implementation needs to run that
(``fuzz.backends.device_block`` on the GPU; ``fuzz.engine.hybrid_block`` through any backends' ``run``);
``BlockResult`` what one call of it returns.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from fuzz.model.case import Case
from fuzz.model.chain import AcceptMode
from oracles.block import QkvWidths


@dataclass(frozen=True)
class BlockCall:
    """One call of the block: the convolution's call, and LinearAttention's inputs besides q, k and v."""

    conv: Case
    """The convolution's inputs (its tokens; the first call's past state) and attributes."""
    la_inputs: Mapping[str, np.ndarray]
    """``decay`` and ``beta`` where the call has them, ``past_state`` for the first call."""
    la_attrs: Mapping[str, Any]


@dataclass(frozen=True)
class BlockRun:
    """A draft call, the tokens accepted of it, and the call that resumes from there."""

    draft: BlockCall
    resume: BlockCall
    accepted: int
    widths: QkvWidths
    channels_last: bool
    aliased: bool
    """Each op's past and present state bound to one read-write buffer."""
    mode: AcceptMode
    """How a device-resident run is asked to resume (``kernels.resident.ResidentKernel.accept``)."""


@dataclass(frozen=True)
class BlockResult:
    """One call's results: the convolution's output and state, LinearAttention's output and state."""

    conv_output: np.ndarray
    conv_state: np.ndarray
    output: np.ndarray
    state: np.ndarray
    seeded_by: str = "past_state"
    """How the call's two seeds were handed to it: ``past_state``, or each op's select-and-resume path
    (``"conv rebind, linear attention copy"``)."""
