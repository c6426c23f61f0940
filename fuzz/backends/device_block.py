"""A hybrid block's draft and resumed calls on the GPU: the convolution, the q/k/v split and LinearAttention in
one command buffer per call, both selects on the GPU, nothing but the tokens and the results crossing to the host.

The two kernels must share one device (``kernels.resident.ResidentKernel``: ``CausalConvKernel`` and
``LinearAttentionKernel`` of one WebGPU implementation and adapter). Each op keeps its own pair of state
buffers (one, aliased); after the draft each kernel's ``accept`` selects the slot of the accepted prefix (by
rebinding it as the next seed, or copying it on the GPU; for 0 accepted, keeping or restoring the seed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fuzz.backends.base import Backend, Rejected, Unsupported
from fuzz.backends.device_chain import bound_like
from fuzz.model.block import BlockCall, BlockResult, BlockRun
from kernels.device import DeviceTensor, GpuDevice, KernelUnsupported
from kernels.qkv_split import SplitCall, get_split
from kernels.resident import BoundCall, ResidentKernel
from oracles import ValidationError
from oracles import validate as la_validate
from oracles.causal_conv import validate as conv_validate


@dataclass
class BoundBlock:
    """One block call bound on the device: its conv call, split and LinearAttention call, and what it owns."""

    conv: BoundCall
    split: SplitCall
    la: BoundCall
    owned: list[DeviceTensor]

    def encode(self, encoder: Any, conv: BoundCall | None = None, la: BoundCall | None = None,
               begin: dict[str, Any] | None = None, end: dict[str, Any] | None = None) -> None:
        """Record the three passes (``conv`` and ``la``: the calls as rebound, default the bound ones); ``begin``
        and ``end`` are timestamp writes of the first pass's beginning and the last pass's end."""
        (conv or self.conv).encode(encoder, timestamp_writes=begin)
        self.split.encode(encoder)
        (la or self.la).encode(encoder, timestamp_writes=end)

    def release(self) -> None:
        self.split.release()
        for call in (self.conv, self.la):
            call.release()
        for tensor in {id(t): t for t in [*self.owned, self.conv.output, self.la.output]}.values():
            tensor.release()


def _shaped(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A zero-byte array of a shape and dtype: all that validation reads of an input."""
    return np.broadcast_to(np.zeros((), dtype), shape)


def _dims(call: BlockCall, run: BlockRun) -> tuple[Any, Any]:
    """The validated dims of a call's convolution and of its LinearAttention (whose q, k and v the split makes)."""
    conv_dims = conv_validate(**call.conv.kwargs())
    tokens = (conv_dims.batch, conv_dims.seq_len)
    query, key, value = (_shaped((*tokens, width), conv_dims.dtype)
                         for width in (run.widths.query, run.widths.key, run.widths.value))
    la_past = run.draft.la_inputs["past_state"]
    la_dims = la_validate(query, key, value, _shaped(la_past.shape, la_past.dtype), call.la_inputs.get("decay"),
                          call.la_inputs.get("beta"), **call.la_attrs)
    return conv_dims, la_dims


def bind_block(conv: ResidentKernel, la: ResidentKernel, call: BlockCall, run: BlockRun,
          states: tuple[DeviceTensor, DeviceTensor, DeviceTensor, DeviceTensor]) -> BoundBlock:
    """Upload a call's inputs and bind its three passes to the block's state buffers ``states``: (conv past,
    conv present, LinearAttention past, present)."""
    device = conv.device
    conv_past, conv_present, la_past, la_present = states
    conv_dims, la_dims = _dims(call, run)
    conv_inputs = {name: device.upload(x, name) for name, x in call.conv.inputs.items() if name != "past_state"}
    conv_call = conv.prepare(**conv_inputs, past_state=conv_past, present_state=conv_present,
                             **conv.attributes(conv_dims))
    batch, seq_len, dtype = conv_dims.batch, conv_dims.seq_len, conv_dims.dtype
    qkv = [device.tensor((batch, seq_len, width), dtype, name) for name, width in
           (("query", run.widths.query), ("key", run.widths.key), ("value", run.widths.value))]
    split = get_split(device).bind(conv_call.output, *qkv, channels_last=run.channels_last)
    la_inputs = {name: device.upload(x, name) for name, x in call.la_inputs.items() if name != "past_state"}
    query, key, value = qkv
    la_call = la.prepare(query, key, value, la_past, la_inputs.get("decay"), la_inputs.get("beta"),
                         present_state=la_present, **la.attributes(la_dims))
    return BoundBlock(conv_call, split, la_call, [*conv_inputs.values(), *qkv, *la_inputs.values()])


def _dispatch(device: GpuDevice, bound: BoundBlock, conv: BoundCall, la: BoundCall) -> BlockResult:
    """The three passes in one command buffer, then the results downloaded."""
    encoder = device.device.create_command_encoder()
    bound.encode(encoder, conv, la)
    device.queue.submit([encoder.finish()])
    conv_output, conv_state, output, state = device.download_all([conv.output, conv.present_state, la.output,
                                                                  la.present_state])
    return BlockResult(conv_output, conv_state, output, state)


def run_block_on_device(conv: ResidentKernel, la: ResidentKernel, run: BlockRun) -> tuple[BlockResult, BlockResult]:
    """The draft call and the resumed one, on one device: ``(draft results, resumed results)``.

    Raises ``KernelUnsupported`` (before anything is allocated) for a call either kernel cannot run here, and
    ``ValueError`` where the kernels do not share a device.
    """
    if conv.device is not la.device:
        raise ValueError("run_block_on_device: the two kernels must share one device")
    device = conv.device
    for call in (run.draft, run.resume):
        conv_dims, la_dims = _dims(call, run)
        conv.check_call(conv_dims)
        la.check_call(la_dims)
    conv_past = device.upload(run.draft.conv.inputs["past_state"], "conv-past")
    la_past = device.upload(run.draft.la_inputs["past_state"], "la-past")
    conv_present = conv_past if run.aliased else device.tensor(conv_past.shape, conv_past.dtype, "conv-present")
    la_present = la_past if run.aliased else device.tensor(la_past.shape, la_past.dtype, "la-present")
    states = (conv_past, conv_present, la_past, la_present)
    bound: list[BoundBlock] = []
    saved: list[DeviceTensor] = []
    try:
        draft = bind_block(conv, la, run.draft, run, states)
        bound.append(draft)
        if run.aliased and run.accepted == 0:  # the call overwrites the seeds it reads
            saved = [conv.save_seed(conv_present), la.save_seed(la_present)]
        first = _dispatch(device, draft, draft.conv, draft.la)
        conv_pick = conv.accept(draft.conv, run.accepted, saved[0] if saved else None, mode=run.mode)
        la_pick = la.accept(draft.la, run.accepted, saved[1] if saved else None, mode=run.mode)
        resume = bind_block(conv, la, run.resume, run, states)
        bound.append(resume)
        resumed = _dispatch(device, resume, bound_like(resume.conv, conv_pick.call),
                            bound_like(resume.la, la_pick.call))
        how = f"conv {conv_pick.path}, linear attention {la_pick.path}"
        return first, BlockResult(resumed.conv_output, resumed.conv_state, resumed.output, resumed.state, how)
    finally:
        for b in bound:
            b.release()
        for tensor in {id(t): t for t in [*saved, *states]}.values():
            tensor.release()


def run_block_resident(conv: Backend, la: Backend, run: BlockRun) -> tuple[BlockResult, BlockResult]:
    """``run_block_on_device`` on the kernels behind two backends, the kernels' errors as the suite's outcomes:
    ``Unsupported`` where either cannot run a call here (or has no device-resident kernel), ``Rejected`` for
    input either refuses."""
    who = f"{conv.name}+{la.name}"
    conv_kernel, la_kernel = conv.resident_kernel(), la.resident_kernel()
    if conv_kernel is None or la_kernel is None:
        raise Unsupported(who, "the block runs device-resident on two kernels of one device")
    try:
        return run_block_on_device(conv_kernel, la_kernel, run)
    except KernelUnsupported as err:
        raise Unsupported(who, str(err)) from err
    except ValidationError as err:
        raise Rejected(who, str(err)) from err
