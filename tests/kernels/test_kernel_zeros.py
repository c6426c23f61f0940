"""The leading zero slots of ``T < W`` are stored only where the present state does not already hold them.

``BoundCall.encode`` skips storing them (``skip_group``) when ``DeviceTensor.zero_slots`` says the work
before it left them in place, and every other write to the buffer must lower that count. These tests
write a present state every way the project does (a dispatch of ``T >= W``, an upload, a slot copy, the
other buffer of a rebind ping-pong) between calls of ``T < W`` and check that the leading slots come out
exact zeros and every slot has the bits of a call on fresh buffers; and that the skip does happen.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_kernel_parity import IMPLEMENTATIONS, assert_bitwise, kernel_or_skip, make_inputs

from kernels.device import DeviceTensor
from kernels.linear_attention import BoundCall, LinearAttentionKernel, get_kernel, linear_attention
from kernels.options import KernelOptions

W = 4
ATTRS = {"q_num_heads": 2, "kv_num_heads": 2, "update_rule": "gated_delta", "state_window": W}
SHORT, FULL = 1, W + 1
"""Tokens of the decode call (``W - 1`` leading zero slots) and of a call that writes every slot."""


def tokens(seq_len: int) -> dict[str, np.ndarray]:
    """Inputs of ``seq_len`` tokens with a past state whose every slot is non-zero."""
    return make_inputs(np.random.default_rng(seq_len), dtype=np.float32, batch=1, seq_len=seq_len, heads=(2, 2, 2),
                       d_k=8, d_v=8, window=W, past=True, decay_per_row=False, beta_shared=False)


def zeros_kernel(implementation: str, prefill: str) -> LinearAttentionKernel:
    kernel_or_skip(implementation)
    return get_kernel(KernelOptions(implementation, prefill=prefill))


class Calls:
    """A decode call (``T = 1``) and a full call (``T = W + 1``) bound to one present state tensor."""

    def __init__(self, kernel: LinearAttentionKernel, aliased: bool) -> None:
        self.kernel = kernel
        self.device = kernel.device
        self.host = {t: tokens(t) for t in (SHORT, FULL)}
        self.state = self.device.upload(self.host[SHORT]["past_state"], "state")
        self.past = self.state if aliased else self.device.upload(self.host[SHORT]["past_state"], "past")
        self.present = self.state if aliased else self.device.tensor(self.state.shape, self.state.dtype, "present")
        self.tensors: list[DeviceTensor] = [self.state, self.past, self.present]
        self.calls: dict[int, BoundCall] = {}
        for t, host in self.host.items():
            inputs = {n: self.device.upload(x, n) for n, x in host.items() if n != "past_state"}
            self.tensors += inputs.values()
            self.calls[t] = kernel.prepare(**inputs, past_state=self.past, present_state=self.present, **ATTRS)
            self.tensors.append(self.calls[t].output)

    def run(self, seq_len: int, what: str, times: int = 1) -> None:
        """Dispatch the call of ``seq_len`` tokens ``times`` times in one command buffer; check every slot
        against the same call of the NumPy API (same prefill), on buffers of its own."""
        call = self.calls[seq_len]
        seed = expected = self.device.download(self.past)
        for _ in range(times):
            _, expected = linear_attention(**{**self.host[seq_len], "past_state": seed}, **ATTRS,
                                           options=self.kernel.options)
            if self.past is self.present:  # the aliased binding: each dispatch resumes from the previous one
                seed = expected
        call.dispatch(times=times)
        got = self.device.download(self.present)
        leading = max(W - seq_len, 0)
        assert not got[:leading].any() and not np.signbit(got[:leading]).any(), \
            f"{what}: the leading {leading} slots are not exact (+0.0) zeros"
        assert got[leading:].all(), f"{what}: a represented slot holds a zero"
        assert_bitwise(got, expected, what)

    def poisoned(self) -> np.ndarray:
        """NaN in every slot but slot ``W - 1``, which holds a finite seed (the aliased binding reads it)."""
        state = np.full(self.state.shape, np.nan, dtype=self.state.dtype)
        state[-1] = self.host[SHORT]["past_state"][-1]
        return state

    def release(self) -> None:
        for call in self.calls.values():
            call.release()
        for tensor in {id(t): t for t in self.tensors}.values():
            tensor.release()


@pytest.mark.slow
@pytest.mark.parametrize("prefill", ["token", "chunked"])
@pytest.mark.parametrize("aliased", [False, True], ids=["separate", "aliased"])
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_every_write_to_the_present_state_makes_the_next_call_store_its_zeros(implementation: str, aliased: bool,
                                                                            prefill: str) -> None:
    """Decode calls skip the zeros only while nothing else wrote the buffer: a call of ``T >= W``, an upload
    or a slot copy into a leading slot in between makes the next one store them (it would leave that
    write's values there otherwise); a slot copy into slot ``W - 1`` leaves them known."""
    calls = Calls(zeros_kernel(implementation, prefill), aliased)
    short, present = calls.calls[SHORT], calls.present
    try:
        calls.run(SHORT, "first decode call")
        assert (short.zero_skips, present.zero_slots) == (0, W - 1), "a buffer of unknown contents gets its zeros"
        calls.run(SHORT, "decode calls that skip the zeros", times=3)
        assert short.zero_skips == 3

        calls.run(FULL, "a call that writes every slot")
        calls.run(SHORT, "decode after a call of T >= W")
        assert short.zero_skips == 3, "the slots a call of T >= W wrote are not zeros"

        calls.device.upload(calls.poisoned(), "poison", into=present)
        calls.run(SHORT, "decode after an upload into the present state")
        assert short.zero_skips == 3, "an upload leaves no zeros known"

        nan_slot = calls.device.upload(calls.poisoned()[:1], "nan-slot")
        calls.tensors.append(nan_slot)
        calls.kernel.copy_slot(nan_slot, 0, present, 0)
        calls.run(SHORT, "decode after a slot copy into slot 0")
        assert short.zero_skips == 3, "a slot copy into a leading slot leaves it unknown"

        finite_slot = calls.device.upload(calls.host[FULL]["past_state"][:1], "finite-slot")
        calls.tensors.append(finite_slot)
        calls.kernel.copy_slot(finite_slot, 0, present, W - 1)
        assert present.zero_slots == W - 1, "a slot copy into slot W-1 leaves the slots before it as they were"
        calls.run(SHORT, "decode after a slot copy into slot W-1")
        assert short.zero_skips == 4
    finally:
        calls.release()


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_select_and_resume_chains_skip_zeros_they_wrote(implementation: str) -> None:
    """A decode chain of select-and-resume (``T = 2 < W``): the rebind ping-pong writes the zeros once into
    each of its two buffers (the past state it starts from was uploaded), the copy chain once into its present
    state; every later dispatch skips them, and both chains give the same bits, leading zeros included."""
    kernel = kernel_or_skip(implementation)
    device = kernel.device
    host = make_inputs(np.random.default_rng(7), dtype=np.float32, batch=1, seq_len=2, heads=(2, 2, 2), d_k=8,
                       d_v=8, window=W, past=True, decay_per_row=True, beta_shared=False)
    chain = [1, 2, 1, 2, 2, 1]
    results = {}
    for chosen in ("rebind", "copy"):
        tensors = {name: device.upload(x, name) for name, x in host.items()}
        call = kernel.prepare(**tensors, **ATTRS)
        current, states = call, []
        for accepted in chain:
            current.dispatch()
            states.append(device.download(current.present_state))
            assert not states[-1][:W - 2].any(), f"{chosen}: leading slots not zero"
            selection = kernel.accept(current, accepted, mode=chosen)
            assert selection.path == chosen
            current = selection.call
        skips = sum(c.zero_skips for c in {id(c): c for c in [call, *call.rebound.values()]}.values())
        assert skips == len(chain) - (2 if chosen == "rebind" else 1), f"{chosen}: {skips} dispatches skipped"
        results[chosen] = states
        call.release()
        for tensor in [*tensors.values(), call.output, call.present_state]:
            tensor.release()
    for step, (rebound, copied) in enumerate(zip(results["rebind"], results["copy"], strict=True)):
        assert_bitwise(rebound, copied, f"present_state after {step} selections")


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_only_calls_with_leading_zero_slots_have_the_skip_uniform(implementation: str) -> None:
    """``T >= W`` and ``W = 0`` leave no zeros to skip: one uniform, one bind group, never a skip."""
    kernel = kernel_or_skip(implementation)
    device = kernel.device
    for seq_len, window, skippable in ((SHORT, W, True), (W, W, False), (SHORT, 0, False)):
        host = make_inputs(np.random.default_rng(1), dtype=np.float32, batch=1, seq_len=seq_len, heads=(2, 2, 2),
                           d_k=4, d_v=4, window=window, past=True, decay_per_row=False, beta_shared=False)
        tensors = {name: device.upload(x, name) for name, x in host.items()}
        call = kernel.prepare(**tensors, **{**ATTRS, "state_window": window})
        assert (call.skip_group is not None, call.skip_params is not None) == (skippable, skippable)
        call.dispatch(times=2)
        assert call.zero_skips == int(skippable)
        call.release()
        for tensor in [*tensors.values(), call.output, call.present_state]:
            tensor.release()
