"""Replay the upstream C++ tests through ONNX Runtime's Python API (``lafuzz gtest --replay``): the same calls, the
same expected values and the same pass rule as the generated ``OpTester`` file, without building ORT.

Each call becomes a one-node model with every input and output shape declared (as ``OpTester`` declares them),
run in a session of one execution provider with no CPU fallback. A test runs on an EP where its C++ twin would:
a windowed test only where the EP implements ``state_window > 0`` (found by one probe call; an EP that refuses it
is skipped, loudly, with its message), the ``T = 0`` pass-through everywhere but the CUDA EP (the C++ test excludes
it). What ``OpTester`` cannot express is done here: an aliased test binds one ``OrtValue`` on the EP's device as
both ``past_state`` and ``present_state`` through IOBinding.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fuzz.export.gtest_cases import GtestCase, attention, convolution
from fuzz.export.gtest_expected import Expected, expectations, matches
from fuzz.model.case import Case
from fuzz.model.ops import LINEAR_ATTENTION, Op

PROVIDERS = {"cpu": ("CPUExecutionProvider", "cpu"), "cuda": ("CUDAExecutionProvider", "cuda")}
"""The EPs the replay knows: name -> (ORT's provider name, the OrtValue device of an aliased state)."""
PASS, FAIL, SKIP, KNOWN = "PASS", "FAIL", "SKIP", "KNOWN"
"""``KNOWN``: a failure of the EP whose documented defect the test's corpus entry is (not counted as failed)."""


@dataclass(frozen=True)
class Verdict:
    """What one test did on one EP."""

    status: str
    provider: str
    test: str
    detail: str = ""

    def line(self) -> str:
        return f"{self.status}  {self.provider:<5} {self.test}" + (f": {self.detail}" if self.detail else "")


class Provider:
    """One execution provider of this process's ``onnxruntime``, sessions made with it alone."""

    def __init__(self, name: str) -> None:
        from fuzz.backends.ort_session import import_ort

        self.name = name
        self.ort = import_ort()
        self.provider, self.device = PROVIDERS[name]
        self._window_refusals: dict[str, str | None] = {}

    def window_refusal(self, op: Op) -> str | None:
        """None when the EP runs a ``W = 1`` call of ``op``; else the gist of its message refusing it."""
        if op.name not in self._window_refusals:
            probe: Callable[..., Case] = attention if op is LINEAR_ATTENTION else convolution
            try:
                self.run(probe(window=1, seq_len=1))
                self._window_refusals[op.name] = None
            except Exception as error:
                from fuzz.backends.ort_session import ort_message

                self._window_refusals[op.name] = ort_message(error).split("was false. ")[-1]
        return self._window_refusals[op.name]

    def _session(self, case: Case, shapes: dict[str, tuple[int | str, ...]]) -> Any:
        from fuzz.backends.onnx_model import build_model

        options = self.ort.SessionOptions()
        options.log_severity_level = 4  # its refusals are the data here, not log lines
        if self.provider != "CPUExecutionProvider":
            options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        model = build_model(case.dtype, tuple(case.inputs), case.attrs, op=case.op, shapes=shapes)
        return self.ort.InferenceSession(model, options, providers=[self.provider])

    def run(self, case: Case, declared: Expected | None = None) -> dict[str, np.ndarray]:
        """``case``'s outputs by name; ORT's exception when it refuses the call."""
        shapes: dict[str, tuple[int | str, ...]] = {name: array.shape for name, array in case.inputs.items()}
        if declared is not None:
            shapes.update({name: array.shape for name, array in declared.outputs().items()})
        session = self._session(case, shapes)
        if not case.aliased or "past_state" not in case.inputs:
            output, state = session.run(None, dict(case.inputs))
            return {"output": output, "present_state": state}
        binding = session.io_binding()
        for name, array in case.inputs.items():
            if name != "past_state":
                binding.bind_cpu_input(name, array)
        shared = self.ort.OrtValue.ortvalue_from_numpy(case.inputs["past_state"].copy(), self.device, 0)
        binding.bind_ortvalue_input("past_state", shared)
        binding.bind_output("output", self.device)  # first: outputs come back in the order they were bound
        binding.bind_ortvalue_output("present_state", shared)
        session.run_with_iobinding(binding)
        return {"output": binding.copy_outputs_to_cpu()[0], "present_state": shared.numpy()}


def _judge(test: GtestCase, call: Case, want: Expected, provider: Provider) -> str | None:
    """None when the call does what the test asks on ``provider``; else what went wrong."""
    try:
        got = provider.run(call, want)
    except Exception as error:
        from fuzz.backends.ort_session import ort_message

        message = ort_message(error)
        if test.error is not None and test.error in message:
            return None
        return f"refused: {message}" if test.error is None else f"refused without {test.error!r}: {message}"
    if test.error is not None:
        return f"returned values where the test expects a refusal with {test.error!r}"
    for name, expected_array in want.outputs().items():
        problem = matches(expected_array, got[name], want.tolerance)
        if problem is not None:
            return f"{name}: {problem}"
    return None


def replay_test(test: GtestCase, provider: Provider, wanted: Sequence[Expected] | None = None) -> Verdict:
    """``test`` on ``provider``, against ``wanted`` (default: ``expectations(test)``, the numbers of the file)."""
    label = f"{test.op.name}/{test.name}"
    refusal = provider.window_refusal(test.op) if test.windowed else None
    if refusal is not None:
        return Verdict(SKIP, provider.name, label, f"the EP refuses state_window > 0: {refusal}")
    if test.pass_through and provider.provider == "CUDAExecutionProvider":
        return Verdict(SKIP, provider.name, label, "the CUDA EP refuses T = 0, which the contract allows")
    for number, (call, want) in enumerate(zip(test.calls, wanted or expectations(test), strict=True)):
        problem = _judge(test, call, want, provider)
        if problem is not None:
            where = f"call {number + 1}: " if len(test.calls) > 1 else ""
            if test.known is not None and test.known.backend == f"ort-{provider.name}":
                return Verdict(KNOWN, provider.name, label, f"{where}{problem} ({test.known.issue}: "
                               f"{test.known.explanation})")
            return Verdict(FAIL, provider.name, label, where + problem)
    return Verdict(PASS, provider.name, label)


def available(names: Sequence[str]) -> tuple[list[Provider], list[str]]:
    """The providers of ``names`` this ``onnxruntime`` has, and a line for each it lacks."""
    from fuzz.backends.ort_session import import_ort

    ort = import_ort()
    present = set(ort.get_available_providers())
    found, missing = [], []
    for name in names:
        provider = PROVIDERS[name][0]
        if provider in present:
            found.append(Provider(name))
        else:
            missing.append(f"SKIP  {name:<5} every test: this onnxruntime {ort.__version__} has no {provider}")
    return found, missing


def replay(tests: Sequence[GtestCase], providers: Sequence[Provider]) -> Iterator[Verdict]:
    """Every test on every provider, in order."""
    for test in tests:
        for provider in providers:
            yield replay_test(test, provider)
