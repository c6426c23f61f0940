"""LinearAttention on WebGPU: a device-resident API and the NumPy-in/NumPy-out operator on top.

``LinearAttentionKernel`` owns the compiled pipelines of one ``GpuDevice`` (a bounded LRU cache
keyed by ``KernelSpec``, the geometry class; everything else about a call is in its uniform,
``CallParams``). ``prepare`` binds device tensors to a pipeline and uniform and returns a
``BoundCall`` that can be dispatched any number of times without touching the host; ``accept``
performs SPEC §3's select-a-slot-and-resume, by rebinding the accepted slot as the next call's
seed where WebGPU's offset alignment allows it (no copy at all), else by a slot copy on the GPU.
``linear_attention`` mirrors the ONNX op exactly like ``oracles.linear_attention``, reusing
device buffers across calls of the same shape.

Every call is validated by ``oracles.validation.validate`` before anything reaches the GPU, so
the kernel and the oracle reject the same inputs with the same messages.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from oracles.rollback import slot_for_accepted
from oracles.validation import Dims, validate

from .device import DeviceTensor, GpuDevice, KernelUnsupported, Readback, get_device
from .shader import BINDINGS, MAX_ROW_GROUPS, TEMPLATES, CallParams, KernelSpec, render, template_source

MAX_D_K = 256
"""Largest key head size (that of the ORT WebGPU EP); it bounds each invocation's private row block."""

KERNEL_PATHS = ("auto", "subgroup", "workgroup", "scalar")
"""How a kernel compiles its pipelines. ``auto``: vector columns where d_v % 4 == 0, and the subgroup
reduction where the device has subgroups of at least the call's row groups, else the workgroup one;
``subgroup``: the same but the subgroup reduction required (``KernelUnsupported`` where it is not
possible); ``workgroup``: vector columns, always the workgroup reduction (the fallback);
``scalar``: one column per invocation and the workgroup reduction (the kernel before vectorisation)."""

ROW_GROUP_CHOICES = (2, 4, 8, 16, 32)
"""Bounds on the invocations per column a kernel may be built with: fewer give each invocation more rows
and a warp more adjacent columns, more give more invocations (the default: ``_row_group_bound``)."""

WIDE_ROW_GROUPS = 32
"""The row-group bound on devices whose subgroups hold that many row groups (a GPU's, not lavapipe's 4 or 8)."""

PREFILLS = ("token", "chunked")
"""How a kernel takes a call's tokens: ``token``, the token loop (``kernels/linear_attention.wgsl``, the
default), or ``chunked``, the chunked prefill (``kernels/chunked.wgsl``). The chunked prefill agrees with
the token loop but was slower on the H200 at every length measured (fp16, ``B=1, H=32, d_k=d_v=128``:
215.5 against 81.4 us at ``T = 16``, 825.6 against 297.4 us at ``T = 64``), so no call takes it unless
asked; campaigns fuzz both (``fuzz.campaign.swarm``)."""

KERNEL_DTYPES = ("float32", "float16")
"""Storage types with a kernel; float16 needs the ``shader-f16`` feature."""

PARAMS_BYTES = CallParams.WORDS * 4
"""The per-call uniform (sizes, heads, layouts, window, scale, seed offset): with its ``zeros_known``
twin (``scratch_bytes``), the kernel's only device scratch (besides a few KiB of workgroup memory for the
reductions, which is no buffer)."""


def scratch_bytes(state_window: int, seq_len: int) -> int:
    """The device scratch of one bound call: its uniform, and where ``T < W`` a second one with
    ``zeros_known`` set, which dispatches take when the leading zero slots need not be stored again."""
    return PARAMS_BYTES * (2 if state_window > seq_len else 1)


def _stand_in(tensor: DeviceTensor | None) -> np.ndarray | None:
    """A zero-byte array with a device tensor's shape and dtype, for shape validation."""
    if tensor is None:
        return None
    return np.broadcast_to(np.zeros((), dtype=tensor.dtype), tensor.shape)


def check_supported(device: GpuDevice, dims: Dims) -> None:
    """Raise ``KernelUnsupported`` for a valid call this kernel cannot run on ``device``."""
    dtype = str(dims.dtype)
    if dtype not in KERNEL_DTYPES:
        raise KernelUnsupported(f"no WebGPU kernel for dtype {dtype} (kernels exist for {', '.join(KERNEL_DTYPES)})")
    if dtype == "float16":
        device.require("shader-f16", "float16 LinearAttention")
    if dims.d_k > MAX_D_K:
        raise KernelUnsupported(f"d_k = {dims.d_k} exceeds the kernel's maximum of {MAX_D_K}")
    max_groups = device.limits["max-compute-workgroups-per-dimension"]
    if max(dims.batch, dims.kv_heads) > max_groups:
        raise KernelUnsupported(f"batch {dims.batch} or kv_num_heads {dims.kv_heads} exceeds {max_groups} workgroups")
    biggest = max(int(np.prod(dims.state_shape)), int(np.prod(dims.output_shape)), dims.batch * dims.seq_len
                  * max(dims.q_heads, dims.kv_heads) * dims.d_k) * dims.dtype.itemsize
    limit = device.limits["max-storage-buffer-binding-size"]
    if biggest > limit:
        raise KernelUnsupported(f"a {biggest}-byte tensor exceeds max-storage-buffer-binding-size {limit}")


@dataclass
class BoundCall:
    """One kernel variant bound to device tensors: dispatch it as often as needed.

    ``output`` and ``present_state`` are the result tensors; ``params`` is the uniform this call
    owns, holding ``uniform``. Re-dispatching after writing new inputs into the bound tensors (``upload``
    with ``into=``) runs the next call with no other host traffic. The seed is slot
    ``seed_slot`` of ``seed`` (``past_state``, or ``present_state`` when aliased); with
    ``slot_bound`` it is bound as that one slot on its own, so another slot can be rebound in its place.

    A call of ``T < W`` tokens has a second uniform, ``skip_params`` (``zeros_known`` set), and bind
    group, ``skip_group``: ``encode`` takes them when ``present_state.zero_slots`` says the buffer already
    holds the leading ``W - T`` zero slots, so decode (``T = 1``) does not store ``W - 1`` slots of zeros on
    every dispatch. ``encode`` updates that count as it records, so encoded work must be submitted in the
    order it was encoded (``dispatch`` submits at once; ``kernels.timing`` and ``fuzz.bench`` submit each
    command buffer they record before recording the next).
    """

    kernel: LinearAttentionKernel
    dims: Dims
    spec: KernelSpec
    uniform: CallParams
    tensors: dict[str, DeviceTensor]
    output: DeviceTensor
    present_state: DeviceTensor
    params: DeviceTensor
    pipeline: Any
    bind_group: Any
    seed_slot: int = 0
    slot_bound: bool = False
    skip_params: DeviceTensor | None = None
    """The uniform with ``zeros_known`` set (None where the call leaves no leading zero slot: ``T >= W``)."""
    skip_group: Any = None
    """The bind group of ``skip_params`` over the same tensors as ``bind_group`` (None with it)."""
    zero_skips: int = 0
    """Passes of this call encoded on ``skip_group``: how often storing the leading zeros was skipped."""
    rebound: dict[tuple[int, int, int], BoundCall] = field(default_factory=dict, repr=False)
    """Calls of this family with other seeds and present states, by (seed id, slot, present id)."""

    @property
    def aliased(self) -> bool:
        """Past and present state are one read-write buffer."""
        return self.uniform.aliased

    @property
    def seed(self) -> DeviceTensor | None:
        """The tensor the seed is read from (None without a past state)."""
        return self.present_state if self.aliased else self.tensors.get("past_state")

    @property
    def leading_zero_slots(self) -> int:
        """The leading slots of ``present_state`` this call leaves exactly zero: ``W - T``, or 0 for ``T >= W``."""
        return max(self.dims.state_window - self.dims.seq_len, 0)

    def encode(self, encoder: Any, timestamp_writes: Any = None) -> None:
        """Record this call's compute pass into a command encoder, and what it leaves in ``present_state``.

        The pass skips storing the leading zero slots (``skip_group``) where ``present_state.zero_slots``
        says the work recorded before it leaves them in place, else stores them (``bind_group``); either
        way ``present_state.zero_slots`` becomes ``leading_zero_slots``. Submit what was encoded in the order
        it was encoded, and write the present state no other way between encoding and submitting.
        """
        zeros = self.leading_zero_slots
        skip = self.skip_group is not None and self.present_state.zero_slots >= zeros
        compute = encoder.begin_compute_pass(timestamp_writes=timestamp_writes)
        compute.set_pipeline(self.pipeline)
        compute.set_bind_group(0, self.skip_group if skip else self.bind_group)
        compute.dispatch_workgroups(*self.spec.workgroups(self.dims))
        compute.end()
        self.zero_skips += skip
        self.present_state.zero_slots = zeros

    def dispatch(self, times: int = 1) -> None:
        """Submit the call ``times`` times in one command buffer (no host transfer, no wait)."""
        encoder = self.kernel.device.device.create_command_encoder()
        for _ in range(times):
            self.encode(encoder)
        self.kernel.device.queue.submit([encoder.finish()])

    def with_seed(self, seed: DeviceTensor, slot: int, present_state: DeviceTensor) -> BoundCall:
        """This call seeded from slot ``slot`` of ``seed``, writing ``present_state``: a bind group, cached.

        Needs ``slot_bound`` and a slot at an aligned offset (``LinearAttentionKernel.rebind_blocker``).
        """
        key = (id(seed), slot, id(present_state))
        if key not in self.rebound:
            tensors = {**self.tensors, "past_state": seed, "present_state": present_state}
            group, skip_group = self.make_bind_groups(tensors, slot)
            self.rebound[key] = replace(self, tensors=tensors, present_state=present_state, bind_group=group,
                                        skip_group=skip_group, seed_slot=slot, zero_skips=0)
        return self.rebound[key]

    def make_bind_groups(self, tensors: Mapping[str, DeviceTensor], seed_slot: int | None) -> tuple[Any, Any]:
        """The bind groups of this call's pipeline over ``tensors``: on ``params``, and on ``skip_params``
        (None without it); ``seed_slot``: see ``LinearAttentionKernel.bind_group``."""
        return self.kernel.bind_groups(self.pipeline, self.uniform, self.params, self.skip_params, tensors, seed_slot)

    def release(self) -> None:
        """Free the uniforms this call's family owns (the bound tensors belong to the caller)."""
        self.rebound.clear()
        self.params.release()
        if self.skip_params is not None:
            self.skip_params.release()


@dataclass(frozen=True)
class Selection:
    """How ``accept`` resumed: the call to dispatch next, and the path it took.

    ``path``: ``"rebind"`` (the slot is bound as the next call's seed: no GPU work), ``"copy"``
    (the slot was copied into the seed on the GPU), or ``"keep"`` (nothing to do: zero tokens
    accepted on separate bindings). ``reason`` says why a requested rebind fell back to a copy.
    """

    call: BoundCall
    path: Literal["rebind", "copy", "keep"]
    reason: str = ""


class LinearAttentionKernel:
    """Compiled LinearAttention pipelines on one device, and the device-side operations around them."""

    def __init__(self, device: GpuDevice, max_pipelines: int = 1024, template: str | None = None,
                 path: str = "auto", max_row_groups: int | None = None, prefill: str = "token",
                 chunk_template: str | None = None, specialise: bool | None = None) -> None:
        # a campaign's units draw head sizes 1-256 in both dtypes: with 64 pipelines the cache thrashed
        # (the default campaign on lavapipe ran at 65.6 cases/s; 81.0 with 1024, same seed)
        if path not in KERNEL_PATHS:
            raise ValueError(f"kernel path {path!r}: expected one of {', '.join(KERNEL_PATHS)}")
        if max_row_groups not in (None, *ROW_GROUP_CHOICES):
            raise ValueError(f"max_row_groups {max_row_groups}: expected one of {ROW_GROUP_CHOICES} or None")
        if prefill not in PREFILLS:
            raise ValueError(f"prefill {prefill!r}: expected one of {', '.join(PREFILLS)}")
        self.device = device
        self.max_row_groups = max_row_groups or self._row_group_bound(device, path)
        """The most invocations sharing one column of the state (``KernelSpec.for_sizes``)."""
        self.path = path
        """One of ``KERNEL_PATHS``: which reduction and column width ``spec_for`` picks."""
        self.max_pipelines = max_pipelines
        self.prefill = prefill
        """One of ``PREFILLS``: which calls ``spec_for`` gives the chunked prefill."""
        self.template = template
        """The token-loop template compiled (None: ``kernels/linear_attention.wgsl``)."""
        self.chunk_template = chunk_template
        """The chunked-prefill template compiled (None: ``kernels/chunked.wgsl``)."""
        self.specialise = not device.software if specialise is None else specialise
        """Compile a pipeline per call shape (``KernelSpec.specialised``) rather than per geometry class; by
        default on GPUs, where that is cheap, and not on software adapters, where a compilation takes seconds."""
        self._pipelines: OrderedDict[KernelSpec, Any] = OrderedDict()
        self.compilations = 0
        """Pipelines compiled so far (a cache hit does not count)."""

    @staticmethod
    def _row_group_bound(device: GpuDevice, path: str) -> int:
        """``WIDE_ROW_GROUPS`` where a subgroup reduction over that many row groups is possible, else
        ``MAX_ROW_GROUPS``: on the H200 (subgroups of 32), 32 row groups of 4 rows took fp16 decode from
        12.4 to 11.2 us at ``T = 1`` and from 43.4 to 31.6 us at ``T = 8`` (W = 0)."""
        size = device.subgroup_size
        wide = path in ("auto", "subgroup") and size is not None and size >= WIDE_ROW_GROUPS
        return WIDE_ROW_GROUPS if wide else MAX_ROW_GROUPS

    @property
    def cached_pipelines(self) -> int:
        """Pipelines held in the cache now (at most ``max_pipelines``)."""
        return len(self._pipelines)

    def spec_for(self, dims: Dims) -> KernelSpec:
        """The pipeline a validated call runs on: its geometry class, with this kernel's path and prefill applied,
        specialised on the call's shape where this kernel specialises."""
        spec = self._geometry(dims)
        return spec.specialised(CallParams.for_call(dims, aliased=False, seed_offset=0)) if self.specialise else spec

    def _geometry(self, dims: Dims) -> KernelSpec:
        spec = replace(KernelSpec.for_dims(dims, self.max_row_groups), chunked=self.prefill == "chunked")
        if self.path == "scalar":
            return replace(spec, lanes=1)
        if self.path == "workgroup":
            return spec
        size = self.device.subgroup_size
        if size is not None and spec.row_groups <= size:
            return replace(spec, reduction="subgroup")
        if self.path == "subgroup":
            raise KernelUnsupported(f"subgroup reduction over {spec.row_groups} row groups needs subgroups of at "
                                    f"least that size; {self.device.description} has "
                                    + (f"{size}" if size else "no subgroups feature"))
        return spec

    def pipeline(self, spec: KernelSpec) -> Any:
        """The compute pipeline of a variant, compiled once and kept in a bounded LRU cache."""
        cached = self._pipelines.get(spec)
        if cached is not None:
            self._pipelines.move_to_end(spec)
            return cached
        gpu = self.device.device
        # a variant of the token loop reaches the chunked prefill through the blocks they share
        template = (self.chunk_template or template_source(TEMPLATES[True], self.template)) if spec.chunked \
            else self.template
        code = render(spec, template, self.device.subgroup_enable)
        module = gpu.create_shader_module(label=f"linear_attention {spec}", code=code)
        pipeline = gpu.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
        self.compilations += 1
        self._pipelines[spec] = pipeline
        if len(self._pipelines) > self.max_pipelines:
            self._pipelines.popitem(last=False)
        return pipeline

    def prepare(
        self,
        query: DeviceTensor,
        key: DeviceTensor,
        value: DeviceTensor,
        past_state: DeviceTensor | None = None,
        decay: DeviceTensor | None = None,
        beta: DeviceTensor | None = None,
        *,
        q_num_heads: int,
        kv_num_heads: int,
        update_rule: str = "gated_delta",
        scale: float = 0.0,
        state_window: int = 0,
        output: DeviceTensor | None = None,
        present_state: DeviceTensor | None = None,
    ) -> BoundCall:
        """Validate a call on device tensors and bind it; nothing runs until ``dispatch``.

        Passing ``present_state=past_state`` (the same tensor) selects the aliased binding: one
        read-write buffer, read at slot ``W-1`` and then overwritten. ``output`` and
        ``present_state`` are allocated when not given. Raises ``ValidationError`` for invalid
        input and ``KernelUnsupported`` for a valid call this device cannot run.
        """
        tensors = {"query": query, "key": key, "value": value, "past_state": past_state,
                   "decay": decay, "beta": beta}
        dims = validate(
            **{name: _stand_in(t) for name, t in tensors.items()},
            q_num_heads=q_num_heads, kv_num_heads=kv_num_heads, update_rule=update_rule,
            scale=scale, state_window=state_window,
        )
        check_supported(self.device, dims)
        aliased = past_state is not None and present_state is past_state
        spec = self.spec_for(dims)
        for name, expected in (("output", dims.output_shape), ("present_state", dims.state_shape)):
            given = output if name == "output" else present_state
            if given is not None and (given.shape, given.dtype) != (expected, dims.dtype):
                raise ValueError(f"{name}: expected a {expected} {dims.dtype} tensor, got {given.shape} {given.dtype}")
        if output is None:
            output = self.device.tensor(dims.output_shape, dims.dtype, "output")
        if present_state is None:
            present_state = self.device.tensor(dims.state_shape, dims.dtype, "present_state")
        bound = {name: t for name, t in tensors.items() if t is not None and not (aliased and name == "past_state")}
        bound["output"] = output
        bound["present_state"] = present_state
        seed = present_state if aliased else bound.get("past_state")
        seed_slot = max(dims.state_window - 1, 0)
        slot_bound = (dims.state_window > 0 and not aliased and seed is not None
                      and self.slot_range(seed, seed_slot) is not None)
        slot_elems = dims.batch * dims.kv_heads * dims.d_k * dims.d_v
        uniform = CallParams.for_call(dims, aliased, 0 if slot_bound else seed_slot * slot_elems)
        params = self._uniform_tensor(uniform)
        skip_params = self._uniform_tensor(replace(uniform, zeros_known=1)) if dims.state_window > dims.seq_len \
            else None
        pipeline = self.pipeline(spec)
        group, skip_group = self.bind_groups(pipeline, uniform, params, skip_params, bound,
                                             seed_slot if slot_bound else None)
        return BoundCall(self, dims, spec, uniform, bound, output, present_state, params, pipeline, group, seed_slot,
                         slot_bound, skip_params, skip_group)

    def _uniform_tensor(self, uniform: CallParams) -> DeviceTensor:
        """A uniform buffer holding ``uniform``."""
        params = self.device.tensor((CallParams.WORDS,), np.uint32, "params", self.device.module.BufferUsage.UNIFORM)
        return self.device.upload(uniform.pack(), "params", into=params)

    def slot_range(self, tensor: DeviceTensor, slot: int) -> tuple[int, int] | None:
        """``(offset, size)`` binding slot ``slot`` of a 5-D state on its own; None where the offset is unaligned.

        Binding offsets must be multiples of ``min-storage-buffer-offset-alignment`` (256 bytes on
        most devices): a slot of odd size may start anywhere. The size is padded to 4 bytes (for
        odd float16 slots that takes the first bytes of the next slot, which the kernel never reads).
        """
        slot_bytes = tensor.nbytes // tensor.shape[0]
        offset = slot * slot_bytes
        if offset % self.device.limits["min-storage-buffer-offset-alignment"]:
            return None
        return offset, min(-(-slot_bytes // 4) * 4, tensor.size - offset)

    def bind_group(self, pipeline: Any, uniform: CallParams, params: DeviceTensor,
                   bound: Mapping[str, DeviceTensor], seed_slot: int | None) -> Any:
        """The bind group of a call; ``seed_slot`` set: ``past_state`` is bound as that slot alone.

        An optional input the call does not read is bound to a stand-in (``uniform.source``): every
        binding of the one layout must hold a buffer, and a read-only use of an input is always allowed.
        """
        entries = [{"binding": 0, "resource": {"buffer": params.buffer, "offset": 0, "size": params.size}}]
        for binding, name in enumerate(BINDINGS, start=1):
            source = uniform.source(name)
            tensor = bound[source]
            offset, size = 0, tensor.size
            if source == "past_state" and seed_slot is not None:
                offset, size = self.slot_range(tensor, seed_slot)
            entries.append({"binding": binding, "resource": {"buffer": tensor.buffer, "offset": offset, "size": size}})
        return self.device.device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=entries)

    def bind_groups(self, pipeline: Any, uniform: CallParams, params: DeviceTensor, skip_params: DeviceTensor | None,
                    bound: Mapping[str, DeviceTensor], seed_slot: int | None) -> tuple[Any, Any]:
        """``bind_group`` on ``params`` and on ``skip_params`` (None where there is none): a call's pair."""
        skip = None if skip_params is None else self.bind_group(pipeline, uniform, skip_params, bound, seed_slot)
        return self.bind_group(pipeline, uniform, params, bound, seed_slot), skip

    def copy_slot(self, source: DeviceTensor, slot: int, destination: DeviceTensor, destination_slot: int) -> None:
        """Copy window slot ``slot`` of ``source`` into slot ``destination_slot`` of ``destination`` on the GPU.

        Both are 5-D state tensors of one slot shape. WebGPU forbids a copy within one buffer, so
        the aliased case (``source is destination``) goes through a one-slot scratch tensor that
        lives only for this copy.
        """
        encoder = self.device.device.create_command_encoder()
        if source is not destination:
            self.encode_slot_copy(encoder, source, slot, destination, destination_slot)
            self.device.queue.submit([encoder.finish()])
            return
        scratch = self.device.tensor((1, *source.shape[1:]), source.dtype, "slot-scratch")
        try:
            self.encode_slot_copy(encoder, source, slot, scratch, 0)
            self.encode_slot_copy(encoder, scratch, 0, destination, destination_slot)
            self.device.queue.submit([encoder.finish()])
        finally:
            scratch.release()

    @staticmethod
    def encode_slot_copy(encoder: Any, source: DeviceTensor, slot: int, destination: DeviceTensor,
                         destination_slot: int) -> None:
        """Record a copy of window slot ``slot`` of ``source`` into ``destination_slot`` of another tensor.

        The recording half of ``copy_slot`` (which submits it), for callers that put the copy in
        their own command buffer, e.g. between timed passes. ``source`` and ``destination`` must be
        different tensors (WebGPU forbids a copy within one buffer). Of the destination's known zero
        slots (``DeviceTensor.zero_slots``) only those before ``destination_slot`` remain known.
        """
        if source is destination:
            raise ValueError("encode_slot_copy: source and destination are one buffer; use copy_slot")
        if source.shape[1:] != destination.shape[1:] or source.dtype != destination.dtype:
            raise ValueError(f"copy_slot: slot shapes differ: {source.shape} vs {destination.shape}")
        slot_bytes = int(np.prod(source.shape[1:])) * source.dtype.itemsize
        if slot_bytes % 4:
            raise KernelUnsupported(f"copy_slot: a slot of {slot_bytes} bytes is not a multiple of 4 bytes")
        encoder.copy_buffer_to_buffer(source.buffer, slot * slot_bytes, destination.buffer,
                                      destination_slot * slot_bytes, slot_bytes)
        destination.zero_slots = min(destination.zero_slots, destination_slot)

    def rebind_blocker(self, call: BoundCall, slot: int) -> str | None:
        """Why slot ``slot`` of ``call.present_state`` cannot be rebound as the next seed; None if it can."""
        if call.aliased:
            return "aliased binding: WebGPU forbids binding one buffer read-only and read-write in one dispatch"
        align = self.device.limits["min-storage-buffer-offset-alignment"]
        if not call.slot_bound or self.slot_range(call.present_state, slot) is None:
            slot_bytes = call.present_state.nbytes // call.present_state.shape[0]
            return f"a slot of {slot_bytes} bytes does not start at a multiple of the {align}-byte offset alignment"
        return None

    def accept(self, call: BoundCall, accepted: int, saved_seed: DeviceTensor | None = None,
               mode: Literal["rebind", "copy"] = "rebind") -> Selection:
        """After ``call`` ran, resume from the state after ``accepted`` of its tokens (SPEC §3); dispatch
        the returned ``Selection.call`` next.

        ``mode="rebind"``: for ``accepted >= 1`` the next call reads its seed straight from the matching
        slot of ``call.present_state`` and writes its present state into ``call``'s seed buffer (the
        two buffers swap roles each time: ping-pong, no copy, no allocation); where the binding is
        aliased or the slot's offset is unaligned it falls back to the copy (``Selection.reason``).
        ``mode="copy"``: the slot is copied into the seed slot on the GPU and ``call`` itself resumes.
        For ``accepted = 0`` separate bindings need nothing (the kernel never writes its seed); the
        aliased binding overwrote it, so ``saved_seed`` (from ``save_seed`` before the call) is copied back.
        """
        dims = call.dims
        seed = call.seed
        if seed is None or dims.state_window == 0:
            raise ValueError("accept: the call needs a past_state and state_window >= 1")
        slot = slot_for_accepted(dims.seq_len, dims.state_window, accepted)
        if slot is None:
            if not call.aliased:
                return Selection(call, "keep")
            if saved_seed is None:
                raise ValueError("accept: accepting 0 tokens on an aliased binding needs the seed saved by save_seed")
            self.copy_slot(saved_seed, 0, seed, call.seed_slot)
            return Selection(call, "copy")
        reason = self.rebind_blocker(call, slot) if mode == "rebind" else "copy requested"
        if reason is None:
            return Selection(call.with_seed(call.present_state, slot, seed), "rebind")
        self.copy_slot(call.present_state, slot, seed, call.seed_slot)
        return Selection(call, "copy", reason)

    def save_seed(self, past_state: DeviceTensor) -> DeviceTensor:
        """A one-slot copy of ``past_state[W-1]`` (shape ``(1, B, H_kv, d_k, d_v)``), made on the GPU."""
        saved = self.device.tensor((1, *past_state.shape[1:]), past_state.dtype, "saved-seed")
        self.copy_slot(past_state, past_state.shape[0] - 1, saved, 0)
        return saved


_KERNELS: dict[tuple, LinearAttentionKernel] = {}


def get_kernel(implementation: str = "wgpu", adapter: str | int | None = None, template: str | None = None,
               path: str = "auto", max_row_groups: int | None = None, prefill: str = "token",
               chunk_template: str | None = None, specialise: bool | None = None) -> LinearAttentionKernel:
    """The process-wide kernel (and device) of an implementation, adapter choice, WGSL templates, path,
    geometry bound, prefill and specialisation."""
    key = (implementation, adapter, template, path, max_row_groups, prefill, chunk_template, specialise)
    if key not in _KERNELS:
        _KERNELS[key] = LinearAttentionKernel(get_device(implementation, adapter), template=template, path=path,
                                              max_row_groups=max_row_groups, prefill=prefill,
                                              chunk_template=chunk_template, specialise=specialise)
    return _KERNELS[key]


@dataclass
class Workspace:
    """Device tensors, a bound call and its readback for one shape signature, reused by ``linear_attention``."""

    inputs: dict[str, DeviceTensor]
    call: BoundCall
    readback: Readback | None = None
    """The staging buffer of ``run`` (made on its first use)."""

    def run(self) -> tuple[np.ndarray, np.ndarray]:
        """Dispatch the call and read its output and present state back: one command buffer, one wait."""
        device = self.call.kernel.device
        if self.readback is None:
            self.readback = Readback(device, [self.call.output, self.call.present_state])
        encoder = device.device.create_command_encoder()
        self.call.encode(encoder)
        self.readback.encode(encoder)
        device.queue.submit([encoder.finish()])
        output, present_state = self.readback.read()
        return output, present_state

    def release(self) -> None:
        for tensor in {id(t): t for t in [*self.inputs.values(), self.call.output, self.call.present_state]}.values():
            tensor.release()
        self.call.release()
        if self.readback is not None:
            self.readback.release()


class WorkspaceCache:
    """A bounded LRU of workspaces, so repeated calls of one shape reuse their device buffers."""

    def __init__(self, kernel: LinearAttentionKernel, capacity: int = 16) -> None:
        self.kernel = kernel
        self.capacity = capacity
        self._entries: OrderedDict[tuple, Workspace] = OrderedDict()

    def get(self, dims: Dims, aliased: bool, arrays: Mapping[str, np.ndarray | None]) -> Workspace:
        """The workspace for this call, created (and the oldest evicted) on a miss."""
        given = [name for name, x in arrays.items() if x is not None]
        key = (dims, aliased, tuple((name, arrays[name].shape) for name in given))
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
            return found
        device = self.kernel.device
        inputs = {name: device.tensor(arrays[name].shape, arrays[name].dtype, name) for name in given}
        call = self.kernel.prepare(
            **inputs, q_num_heads=dims.q_heads, kv_num_heads=dims.kv_heads, update_rule=dims.update_rule,
            scale=dims.scale, state_window=dims.state_window,
            present_state=inputs["past_state"] if aliased else None,
        )
        workspace = Workspace(inputs, call)
        self._entries[key] = workspace
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)[1].release()
        return workspace

    def clear(self) -> None:
        """Release every cached workspace."""
        while self._entries:
            self._entries.popitem()[1].release()


_WORKSPACES: dict[int, WorkspaceCache] = {}


def workspaces(kernel: LinearAttentionKernel) -> WorkspaceCache:
    """The workspace cache of a kernel (one per kernel, created on first use)."""
    if id(kernel) not in _WORKSPACES:
        _WORKSPACES[id(kernel)] = WorkspaceCache(kernel)
    return _WORKSPACES[id(kernel)]


def linear_attention(
    query: np.ndarray,
    key: np.ndarray,
    value: np.ndarray,
    past_state: np.ndarray | None = None,
    decay: np.ndarray | None = None,
    beta: np.ndarray | None = None,
    *,
    q_num_heads: int,
    kv_num_heads: int,
    update_rule: str = "gated_delta",
    scale: float = 0.0,
    state_window: int = 0,
    chunk_size: int | None = None,
    aliased: bool = False,
    implementation: str = "wgpu",
    adapter: str | int | None = None,
    template: str | None = None,
    path: str = "auto",
    max_row_groups: int | None = None,
    prefill: str = "token",
    chunk_template: str | None = None,
    specialise: bool | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The ONNX ``com.microsoft::LinearAttention`` operator on WebGPU, NumPy in and out.

    Same inputs and attributes as ``oracles.linear_attention``; returns ``(output,
    present_state)`` in the inputs' dtype. ``chunk_size`` is the schema's tuning hint: it cannot
    change results, and this kernel ignores it (its chunk is ``CHUNK_SIZE``; ``prefill``, one of
    ``PREFILLS``, says which calls are chunked). ``aliased`` binds past and present state to one
    read-write buffer (ignored without ``past_state``). ``implementation`` is ``"wgpu"``
    (wgpu-native) or ``"dawn"`` (wgpudawn); ``adapter`` picks an adapter by name or number
    (``kernels.device.select_adapter``; default: the best); ``template`` is another WGSL template
    to compile for the token loop (default: the kernel's own), ``chunk_template`` for the chunked prefill;
    ``path`` one of ``KERNEL_PATHS`` (default: the fastest the device allows); ``max_row_groups`` one of
    ``ROW_GROUP_CHOICES`` (the geometry's bound; default: the device's best); ``prefill`` one of
    ``PREFILLS``; ``specialise`` compiles the call's shape into its pipeline (default: on GPUs,
    ``LinearAttentionKernel.specialise``). Raises
    ``ValidationError`` for invalid input, ``KernelUnsupported`` for a valid call
    the device cannot run, ``DeviceUnavailable`` when there is no such implementation/adapter.
    """
    del chunk_size
    arrays = {"query": query, "key": key, "value": value, "past_state": past_state, "decay": decay, "beta": beta}
    dims = validate(**arrays, q_num_heads=q_num_heads, kv_num_heads=kv_num_heads, update_rule=update_rule,
                    scale=scale, state_window=state_window)
    kernel = get_kernel(implementation, adapter, template, path, max_row_groups, prefill, chunk_template, specialise)
    check_supported(kernel.device, dims)
    workspace = workspaces(kernel).get(dims, aliased and dims.has_past, arrays)
    device = kernel.device
    for name, tensor in workspace.inputs.items():
        device.upload(arrays[name], name, into=tensor)
    return workspace.run()
