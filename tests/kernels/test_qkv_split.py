"""The q/k/v split on the GPU (``kernels.qkv_split``) copies each channel of a convolution output of either layout
into its tensor with its bits, as ``oracles.block.split_qkv`` says."""

from __future__ import annotations

import numpy as np
import pytest
from support.conv_cases import DTYPES, IMPLEMENTATIONS, conv_kernel_or_skip
from test_kernel_parity import assert_bitwise

from kernels.qkv_split import get_split
from oracles.block import QkvWidths, split_qkv


@pytest.mark.parametrize("dtype", DTYPES, ids=["fp32", "fp16"])
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_the_split_copies_every_channel_into_its_tensor(implementation: str, dtype: type) -> None:
    device = conv_kernel_or_skip(implementation, dtype).device
    widths = QkvWidths(6, 3, 5)
    batch, seq_len = 2, 67  # B * T * C past one workgroup of 64 invocations, odd widths of 2-byte values
    for channels_last in (False, True):
        shape = (batch, seq_len, widths.channels) if channels_last else (batch, widths.channels, seq_len)
        source = np.random.default_rng(seq_len).standard_normal(shape).astype(dtype)
        tensors = [device.upload(source, "source")] + [
            device.upload(np.full((batch, seq_len, w), np.nan, dtype), name)
            for name, w in (("query", widths.query), ("key", widths.key), ("value", widths.value))]
        split = get_split(device).bind(*tensors, channels_last=channels_last)
        try:
            encoder = device.device.create_command_encoder()
            split.encode(encoder)
            device.queue.submit([encoder.finish()])
            got = device.download_all(tensors[1:])
        finally:
            split.release()
            for tensor in tensors:
                tensor.release()
        for name, g, expected in zip(("query", "key", "value"), got, split_qkv(source, widths, channels_last),
                                     strict=True):
            assert_bitwise(g, expected, f"{name}, channels_last={channels_last}")
