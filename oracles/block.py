"""A gated DeltaNet layer's two stateful ops joined: the convolution's channels are LinearAttention's q, k and v.

A hybrid model's gated DeltaNet layer (Qwen3.5, Qwen3-Next) projects its input to one tensor of
``H_q * d_k + n_k * d_k + H_kv * d_v`` channels, runs the causal depthwise convolution over it
(CausalConvWithState, kernel 4, SiLU), and splits the result along its channels, in that order, into the
query, key and value of the linear attention. ``split_qkv`` is that split, from either layout of the
convolution's output to LinearAttention's ``(B, T, width)`` inputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class QkvWidths:
    """The channels of query, key and value, in the order they lie in the convolution's output."""

    query: int
    """``H_q * d_k``."""
    key: int
    """``n_k * d_k``."""
    value: int
    """``H_kv * d_v``."""

    @property
    def channels(self) -> int:
        """The convolution's channels: the three widths together."""
        return self.query + self.key + self.value


def split_qkv(conv_output: np.ndarray, widths: QkvWidths, channels_last: bool) -> tuple[np.ndarray, ...]:
    """``(query, key, value)``, each ``(B, T, width)`` and contiguous, from a convolution output of
    ``widths.channels`` channels: ``(B, T, C)`` channels last, ``(B, C, T)`` channels first."""
    tokens_first = conv_output if channels_last else np.moveaxis(conv_output, 1, 2)
    if tokens_first.ndim != 3 or tokens_first.shape[2] != widths.channels:
        raise ValueError(f"split_qkv: a (B, T, {widths.channels}) output expected (in its layout), got "
                         f"{conv_output.shape} {'channels last' if channels_last else 'channels first'}")
    q_end = widths.query
    k_end = q_end + widths.key
    return tuple(np.ascontiguousarray(tokens_first[..., a:b])
                 for a, b in ((0, q_end), (q_end, k_end), (k_end, widths.channels)))
