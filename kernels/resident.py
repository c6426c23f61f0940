"""Device-resident calls of a stateful op with a state window, shared by the suite's WGSL kernels.

An op kernel (``LinearAttentionKernel``, ``CausalConvKernel``) says what is particular to its op: how a
validated call maps to a pipeline (``spec_for``), the WGSL of that pipeline (``shader_code``), its per-call
uniform (``uniform_for``) and its storage bindings (``BINDINGS``). Everything else is here and is the same
for every op whose state tensor has a leading window axis, right-aligned, of which only slot ``W-1`` is read
(docs/spec.md §3):

- ``ResidentKernel``: the bounded pipeline cache, binding a call (``bind``: the output and present state, the
  seed slot bound on its own where its offset is aligned, the uniform and its ``zeros_known`` twin), slot
  copies on the GPU, and select-and-resume (``accept``: rebind the accepted slot as the next seed, or copy it);
- ``BoundCall``: one call bound to device tensors, dispatched any number of times without the host;
- ``Workspace`` and ``WorkspaceCache``: the device tensors the NumPy APIs reuse across calls of one shape.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import Field, dataclass, field, replace
from typing import Any, ClassVar, Literal, Protocol, overload

import numpy as np

from oracles.rollback import slot_for_accepted

from .device import DeviceTensor, GpuDevice, KernelUnsupported, Readback, get_device


class CallShape(Protocol):
    """What the shared machinery reads of a validated call (the op's own ``Dims``)."""

    @property
    def seq_len(self) -> int: ...
    @property
    def state_window(self) -> int: ...
    @property
    def dtype(self) -> np.dtype: ...
    @property
    def output_shape(self) -> tuple[int, ...]: ...
    @property
    def state_shape(self) -> tuple[int, ...]: ...


class Uniform(Protocol):
    """An op's per-call uniform: a frozen dataclass with a ``zeros_known`` field."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]
    WORDS: ClassVar[int]

    @property
    def zeros_known(self) -> int: ...

    @property
    def aliased(self) -> bool: ...
    def source(self, binding: str) -> str: ...
    def pack(self) -> np.ndarray: ...


@overload
def shape_only(tensor: DeviceTensor) -> np.ndarray: ...
@overload
def shape_only(tensor: None) -> None: ...
def shape_only(tensor: DeviceTensor | None) -> np.ndarray | None:
    """A zero-byte array with a device tensor's shape and dtype: all that validation reads of it."""
    if tensor is None:
        return None
    return np.broadcast_to(np.zeros((), dtype=tensor.dtype), tensor.shape)


def device_for(implementation: str, adapter: str | int | None, device: GpuDevice | None) -> GpuDevice:
    """``device`` where given (it must be of ``implementation``), else the process-wide device of ``implementation``
    and ``adapter``: where a kernel built from options runs."""
    if device is None:
        return get_device(implementation, adapter)
    if device.implementation != implementation:
        raise ValueError(f"a {device.implementation} device for a kernel of {implementation}")
    return device


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

    kernel: ResidentKernel
    dims: Any
    """The op's validated call (``CallShape``)."""
    spec: Any
    """The op's pipeline key; ``spec.workgroups(dims)`` is the dispatch size."""
    uniform: Any
    """The op's uniform (``Uniform``)."""
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
        return bool(self.uniform.aliased)

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

        Needs ``slot_bound`` and a slot at an aligned offset (``ResidentKernel.rebind_blocker``).
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
        (None without it); ``seed_slot``: see ``ResidentKernel.bind_group``."""
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


class ResidentKernel(ABC):
    """Compiled pipelines of one op on one device, and the device-side operations around its calls.

    Subclasses set ``BINDINGS`` and ``LABEL``, implement ``spec_for``, ``shader_code``, ``uniform_for``,
    ``check_call`` and ``attributes``, and have a ``prepare`` that takes the op's inputs as device tensors and its
    attributes by keyword (``output=``, ``present_state=`` too) and returns a ``BoundCall``.
    """

    BINDINGS: ClassVar[tuple[str, ...]] = ()
    """The storage buffers at bindings 1.. (binding 0 is the uniform), as the op's WGSL declares them; the
    inputs a call may lack are bound to the tensor ``Uniform.source`` names instead."""
    LABEL: ClassVar[str] = "kernel"
    """The op's name in the labels of its shader modules."""
    prepare: Callable[..., BoundCall]
    """Validate a call on device tensors (the op's inputs, its attributes by keyword, ``output=`` and
    ``present_state=``) and bind it: the op's own signature, in each subclass."""

    def __init__(self, device: GpuDevice, max_pipelines: int) -> None:
        self.device = device
        self.max_pipelines = max_pipelines
        self._pipelines: OrderedDict[Any, Any] = OrderedDict()
        self.compilations = 0
        """Pipelines compiled so far (a cache hit does not count)."""

    @abstractmethod
    def spec_for(self, dims: Any) -> Any:
        """The pipeline key of a validated call (hashable; ``workgroups(dims)`` its dispatch size)."""

    @abstractmethod
    def shader_code(self, spec: Any) -> str:
        """The WGSL of the pipeline ``spec``."""

    @abstractmethod
    def uniform_for(self, dims: Any, aliased: bool, seed_offset: int) -> Uniform:
        """The uniform of a validated call whose seed starts ``seed_offset`` elements into its binding."""

    @abstractmethod
    def check_call(self, dims: Any) -> None:
        """Raise ``KernelUnsupported`` for a valid call (the op's validated dims) this kernel cannot run here."""

    @abstractmethod
    def attributes(self, dims: Any) -> dict[str, Any]:
        """The op's attributes of a validated call, as this kernel's ``prepare`` takes them by keyword."""

    @property
    def cached_pipelines(self) -> int:
        """Pipelines held in the cache now (at most ``max_pipelines``)."""
        return len(self._pipelines)

    def pipeline(self, spec: Any) -> Any:
        """The compute pipeline of a variant, compiled once and kept in a bounded LRU cache."""
        cached = self._pipelines.get(spec)
        if cached is not None:
            self._pipelines.move_to_end(spec)
            return cached
        gpu = self.device.device
        module = gpu.create_shader_module(label=f"{self.LABEL} {spec}", code=self.shader_code(spec))
        pipeline = gpu.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
        self.compilations += 1
        self._pipelines[spec] = pipeline
        if len(self._pipelines) > self.max_pipelines:
            self._pipelines.popitem(last=False)
        return pipeline

    def bind(self, dims: CallShape, inputs: Mapping[str, DeviceTensor | None], output: DeviceTensor | None,
             present_state: DeviceTensor | None) -> BoundCall:
        """Bind a validated, supported call: the common end of an op's ``prepare``.

        ``inputs`` holds the op's inputs by name (None for one it lacks), ``past_state`` among them.
        Passing ``present_state`` as that same tensor selects the aliased binding: one read-write buffer,
        read at slot ``W-1`` and then overwritten. ``output`` and ``present_state`` are allocated when not given.
        """
        past_state = inputs.get("past_state")
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
        bound = {name: t for name, t in inputs.items() if t is not None and not (aliased and name == "past_state")}
        bound["output"] = output
        bound["present_state"] = present_state
        seed = present_state if aliased else bound.get("past_state")
        seed_slot = max(dims.state_window - 1, 0)
        slot_bound = (dims.state_window > 0 and not aliased and seed is not None
                      and self.slot_range(seed, seed_slot) is not None)
        slot_elems = int(np.prod(dims.state_shape[1:])) if dims.state_window > 0 else 0
        uniform = self.uniform_for(dims, aliased, 0 if slot_bound else seed_slot * slot_elems)
        params = self._uniform_tensor(uniform)
        skip_params = self._uniform_tensor(replace(uniform, zeros_known=1)) if dims.state_window > dims.seq_len \
            else None
        pipeline = self.pipeline(spec)
        group, skip_group = self.bind_groups(pipeline, uniform, params, skip_params, bound,
                                             seed_slot if slot_bound else None)
        return BoundCall(self, dims, spec, uniform, bound, output, present_state, params, pipeline, group, seed_slot,
                         slot_bound, skip_params, skip_group)

    def _uniform_tensor(self, uniform: Uniform) -> DeviceTensor:
        """A uniform buffer holding ``uniform``."""
        usage = self.device.module.BufferUsage.UNIFORM
        params = self.device.tensor((uniform.WORDS,), np.dtype(np.uint32), "params", usage)
        return self.device.upload(uniform.pack(), "params", into=params)

    def slot_range(self, tensor: DeviceTensor, slot: int) -> tuple[int, int] | None:
        """``(offset, size)`` binding window slot ``slot`` of a state tensor on its own; None where the offset
        is unaligned or the slot is empty.

        Binding offsets must be multiples of ``min-storage-buffer-offset-alignment`` (256 bytes on
        most devices): a slot of odd size may start anywhere. The size is padded to 4 bytes (for
        odd float16 slots that takes the first bytes of the next slot, which the kernel never reads).
        """
        slot_bytes = tensor.nbytes // tensor.shape[0]
        offset = slot * slot_bytes
        if slot_bytes == 0 or offset % self.device.limits["min-storage-buffer-offset-alignment"]:
            return None
        return offset, min(-(-slot_bytes // 4) * 4, tensor.size - offset)

    def bind_group(self, pipeline: Any, uniform: Uniform, params: DeviceTensor,
                   bound: Mapping[str, DeviceTensor], seed_slot: int | None) -> Any:
        """The bind group of a call; ``seed_slot`` set: ``past_state`` is bound as that slot alone.

        An optional input the call does not read is bound to a stand-in (``uniform.source``): every
        binding of the one layout must hold a buffer, and a read-only use of an input is always allowed.
        """
        entries = [{"binding": 0, "resource": {"buffer": params.buffer, "offset": 0, "size": params.size}}]
        for binding, name in enumerate(self.BINDINGS, start=1):
            source = uniform.source(name)
            tensor = bound[source]
            offset, size = 0, tensor.size
            if source == "past_state" and seed_slot is not None:
                slot = self.slot_range(tensor, seed_slot)
                if slot is None:
                    raise ValueError(f"bind_group: slot {seed_slot} of {tensor} cannot be bound on its own")
                offset, size = slot
            entries.append({"binding": binding, "resource": {"buffer": tensor.buffer, "offset": offset, "size": size}})
        return self.device.device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=entries)

    def bind_groups(self, pipeline: Any, uniform: Uniform, params: DeviceTensor, skip_params: DeviceTensor | None,
                    bound: Mapping[str, DeviceTensor], seed_slot: int | None) -> tuple[Any, Any]:
        """``bind_group`` on ``params`` and on ``skip_params`` (None where there is none): a call's pair."""
        skip = None if skip_params is None else self.bind_group(pipeline, uniform, skip_params, bound, seed_slot)
        return self.bind_group(pipeline, uniform, params, bound, seed_slot), skip

    def copy_slot(self, source: DeviceTensor, slot: int, destination: DeviceTensor, destination_slot: int) -> None:
        """Copy window slot ``slot`` of ``source`` into slot ``destination_slot`` of ``destination`` on the GPU.

        Both are state tensors of one slot shape. WebGPU forbids a copy within one buffer, so
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
        if slot_bytes:
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
            if slot_bytes == 0:
                return "an empty slot (state length 0) cannot be bound"
            return f"a slot of {slot_bytes} bytes does not start at a multiple of the {align}-byte offset alignment"
        return None

    def accept(self, call: BoundCall, accepted: int, saved_seed: DeviceTensor | None = None,
               mode: Literal["rebind", "copy"] = "rebind") -> Selection:
        """After ``call`` ran, resume from the state after ``accepted`` of its tokens (docs/spec.md §3); dispatch
        the returned ``Selection.call`` next. All work stays on the GPU.

        Args:
            call: a call prepared with a ``past_state`` and ``state_window >= 1``, already dispatched.
            accepted: how many of its ``T`` tokens the decoder accepted: 0, or a count the window
                represents (``T - W < accepted <= T``); any other count needs a rerun of the prefix instead.
            saved_seed: for ``accepted = 0`` on the aliased binding, the seed ``save_seed`` copied before
                the call (the call overwrote it); unused otherwise.
            mode: ``"rebind"`` (for ``accepted >= 1``, the next call reads its seed straight from the
                matching slot of ``call.present_state`` and writes into ``call``'s seed buffer: the two
                buffers swap roles each time, no copy, no allocation; where the binding is aliased or the
                slot's offset is unaligned it falls back to a copy) or ``"copy"`` (the slot is copied into
                the seed slot on the GPU and ``call`` itself resumes).

        Returns:
            A ``Selection``: the call to dispatch next, the path taken (``rebind``, ``copy``, or ``keep``
            for ``accepted = 0`` on separate bindings, where the kernel never wrote its seed) and why a
            requested rebind fell back to a copy.

        Raises:
            ValueError: ``call`` has no past state or no window; the window does not represent
                ``accepted``; or ``accepted = 0`` on the aliased binding without ``saved_seed``.
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
        """A one-slot copy of ``past_state[W-1]`` (the window axis kept, of extent 1), made on the GPU."""
        saved = self.device.tensor((1, *past_state.shape[1:]), past_state.dtype, "saved-seed")
        self.copy_slot(past_state, past_state.shape[0] - 1, saved, 0)
        return saved


@dataclass
class Workspace:
    """Device tensors, a bound call and its readback for one shape signature, reused by an op's NumPy API."""

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

    def __init__(self, kernel: Any, capacity: int = 16) -> None:
        self.kernel = kernel
        """An op kernel (a ``ResidentKernel`` with its ``prepare``)."""
        self.capacity = capacity
        self._entries: OrderedDict[tuple, Workspace] = OrderedDict()

    def get(self, dims: Any, aliased: bool, arrays: Mapping[str, np.ndarray]) -> Workspace:
        """The workspace for a call of the inputs ``arrays`` (those it has), created (and the oldest evicted) on a
        miss."""
        key = (dims, aliased, tuple((name, x.shape) for name, x in arrays.items()))
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
            return found
        device = self.kernel.device
        inputs = {name: device.tensor(x.shape, x.dtype, name) for name, x in arrays.items()}
        call = self.kernel.prepare(**inputs, **self.kernel.attributes(dims),
                                   present_state=inputs["past_state"] if aliased else None)
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


def workspaces(kernel: Any) -> WorkspaceCache:
    """The workspace cache of a kernel (one per kernel, created on first use)."""
    if id(kernel) not in _WORKSPACES:
        _WORKSPACES[id(kernel)] = WorkspaceCache(kernel)
    return _WORKSPACES[id(kernel)]


def run_cached(kernel: ResidentKernel, dims: Any, aliased: bool, arrays: Mapping[str, np.ndarray | None]
               ) -> tuple[np.ndarray, np.ndarray]:
    """One NumPy-in, NumPy-out call of a validated, supported call on the workspace of its shape (``arrays``: the
    op's inputs, None for one the call lacks): upload the inputs, dispatch, read back."""
    given = {name: x for name, x in arrays.items() if x is not None}
    workspace = workspaces(kernel).get(dims, aliased, given)
    for name, tensor in workspace.inputs.items():
        kernel.device.upload(given[name], name, into=tensor)
    return workspace.run()
