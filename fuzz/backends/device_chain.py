"""A chain of calls run on the GPU by one of the suite's op kernels, the state never passing through the host.

What a speculative decoder does between rollbacks, for any op kernel on the shared device-resident machinery
(``kernels.resident.ResidentKernel``: LinearAttention's, CausalConvWithState's): one prepared call per call
length, re-dispatched over the chain's calls, all on one pair of state buffers, each resuming from the previous
one's accepted slot by the kernel's own select-and-resume (``accept``).
"""

from __future__ import annotations

import numpy as np

from fuzz.backends.base import ChainCall
from fuzz.model.case import Case
from fuzz.model.chain import AcceptMode, Chain
from kernels.device import DeviceTensor, GpuDevice
from kernels.resident import BoundCall, ResidentKernel, Selection, Workspace


def run_device_chain(kernel: ResidentKernel, case: Case, chain: Chain) -> list[ChainCall]:
    """The calls of a chain case on the GPU, the state never passing through the host.

    The past state is uploaded once; every call of the chain, whatever its length, reads and writes
    the same two state buffers (one when the case is aliased), through a call prepared once per call
    length, so a present state is written in turn by calls of ``T >= W`` and of ``T < W`` (whose
    leading zero slots the kernel stores only where it does not know them to be there already). Each
    call uploads only its tokens (the op's sequence inputs) into its length's inputs and is dispatched as
    ``kernel.accept`` left the previous one: rebound to the accepted slot, or after a GPU copy into the seed.
    Results are downloaded after each call for the caller to check; nothing is uploaded back.
    """
    device = kernel.device
    cases = [chain.call(case, index) for index in range(chain.calls)]
    for call_case in cases:
        kernel.check_call(call_case.dims())  # before anything is allocated
    dims = cases[0].dims()
    past = device.upload(cases[0].inputs["past_state"], "past_state")
    present = past if case.aliased else device.tensor(dims.state_shape, dims.dtype, "present_state")
    by_length: dict[int, Workspace] = {}
    calls, seeded_by, previous = [], "past_state", None
    try:
        for index, call_case in enumerate(cases):
            workspace = by_length.get(call_case.seq_len)
            if workspace is None:
                workspace = by_length[call_case.seq_len] = _bind_length(kernel, call_case, past, present)
            else:
                _upload_tokens(device, workspace.inputs, call_case)
            call = workspace.call if previous is None else bound_like(workspace.call, previous)
            accepted = chain.accepted[index] if index < len(chain.accepted) else None
            (output, present_state), selection = _dispatch_and_accept(kernel, call, accepted, chain.mode)
            calls.append(ChainCall(output, present_state, seeded_by))
            if selection is not None:
                previous, seeded_by = selection.call, selection.path
    finally:
        for workspace in by_length.values():
            workspace.release()  # the shared present state too (a release is idempotent)
        present.release()
        past.release()
    return calls


def _bind_length(kernel: ResidentKernel, call: Case, past: DeviceTensor, present: DeviceTensor) -> Workspace:
    """A chain's call bound to the chain's state buffers, its other inputs uploaded: the workspace of its length."""
    inputs = {name: kernel.device.upload(x, name) for name, x in call.inputs.items() if name != "past_state"}
    bound = kernel.prepare(**inputs, past_state=past, present_state=present, **kernel.attributes(call.dims()))
    return Workspace(inputs, bound)


def bound_like(call: BoundCall, like: BoundCall) -> BoundCall:
    """``call`` reading its seed where ``like`` does and writing ``like``'s present state: ``call`` itself, or
    the same call rebound (``accept`` left ``like`` rebound to a slot; ``call`` may be of another length)."""
    if like.seed is call.seed and like.seed_slot == call.seed_slot and like.present_state is call.present_state:
        return call
    if like.seed is None:
        raise ValueError("a chain's calls resume from a past state: the previous call has none")
    return call.with_seed(like.seed, like.seed_slot, like.present_state)


def _upload_tokens(device: GpuDevice, inputs: dict[str, DeviceTensor], call: Case) -> None:
    """Write a later call's tokens into the bound tensors (the state stays where ``accept`` left it)."""
    for name, x in call.inputs.items():
        if name in call.op.sequence_inputs:
            device.upload(x, name, into=inputs[name])


def _dispatch_and_accept(kernel: ResidentKernel, call: BoundCall, accepted: int | None,
                         mode: AcceptMode) -> tuple[list[np.ndarray], Selection | None]:
    """Run ``call``, download its results, then resume after ``accepted`` of its tokens (None: the
    chain ends here). Accepting 0 on an aliased binding restores the seed saved before the call."""
    # the aliased binding reads its seed from present_state, which the call overwrites
    saved = kernel.save_seed(call.present_state) if accepted == 0 and call.aliased else None
    try:
        call.dispatch()
        results = kernel.device.download_all([call.output, call.present_state])
        selection = None if accepted is None else kernel.accept(call, accepted, saved, mode=mode)
    finally:
        if saved is not None:
            saved.release()
    return results, selection
