"""The one interface every implementation under test shares: oracle, WGSL kernel, each ORT EP.

A backend runs one or more ops (``fuzz.model.ops``); its ``Capabilities`` say which."""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from fuzz.implementation import Implementation
from fuzz.model.case import Case
from fuzz.model.ops import LINEAR_ATTENTION

if TYPE_CHECKING:
    from fuzz.model.chain import Chain
    from kernels.resident import ResidentKernel


class Outcome(enum.Enum):
    """What happened when a backend ran a case."""

    OK = "ok"
    """Returned ``(output, present_state)``."""
    REJECTED = "rejected"
    """Refused the case as invalid input, with the implementation's own message."""
    UNSUPPORTED = "unsupported"
    """Cannot run this valid case on this machine (a dtype, ``W > 0``, a feature it lacks)."""
    CRASHED = "crashed"
    """The process running it died (signal or abnormal exit)."""
    TIMEOUT = "timeout"
    """It did not finish in the allotted time."""


class BackendError(Exception):
    """A typed non-result of a run; ``outcome`` says which kind, ``message`` is the implementation's own."""

    outcome: Outcome = Outcome.REJECTED

    def __init__(self, backend: str, message: str) -> None:
        super().__init__(f"{backend}: {message}")
        self.backend = backend
        self.message = message


class Rejected(BackendError):
    """The implementation refused the input (what a validation error looks like from outside)."""

    outcome = Outcome.REJECTED


class Unsupported(BackendError):
    """The implementation cannot run this valid case here; not a finding by itself."""

    outcome = Outcome.UNSUPPORTED


class Crashed(BackendError):
    """The worker process running the case died; ``message`` says how (signal, exit code)."""

    outcome = Outcome.CRASHED


class TimedOut(BackendError):
    """The worker process running the case hung past its deadline."""

    outcome = Outcome.TIMEOUT


class Unavailable(RuntimeError):
    """A backend cannot be created on this machine; the message says why."""


class Lost(Unavailable):
    """A backend that was working can no longer be used (its crash-isolated worker does not start again,
    e.g. after its GPU device was lost); ``backend`` names it."""

    def __init__(self, backend: str, why: str) -> None:
        super().__init__(why)
        self.backend = backend


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do on this machine, as probed when it was created."""

    dtypes: tuple[str, ...]
    """``"float32"``/``"float16"`` as supported here."""
    window: str
    """How ``W > 0`` is served: ``"native"``, ``"prefix"`` (through ``W = 0`` prefix runs) or ``"none"``."""
    aliasing: bool
    """Whether an aliased state binding really binds one buffer (otherwise the flag is ignored)."""
    device: str
    """The adapter or device it runs on, in words."""
    versions: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    """Anything else worth knowing, e.g. the rejection message of the ``W > 0`` probe."""
    implementation: Implementation | None = None
    """What is under test and its version, as the implementation says (known issues are keyed by it);
    None for the oracle and for tests' fakes, which known issues then match by backend name alone."""
    devices: tuple[str, ...] = ()
    """The devices it could choose from here, numbered as ``--device`` counts them (empty: no choice)."""
    ops: tuple[str, ...] = (LINEAR_ATTENTION.name,)
    """The ops it runs (``fuzz.model.ops.Op.name``); ``dtypes``, ``window`` and ``aliasing`` hold for each of them
    (a dtype one op lacks here is an ``Unsupported`` case, with the implementation's reason)."""

    def to_json(self) -> dict[str, object]:
        """What a campaign summary and report say about the backend."""
        return {"device": self.device, "versions": dict(self.versions), "window": self.window,
                "dtypes": list(self.dtypes), "aliasing": self.aliasing, "notes": list(self.notes),
                "implementation": self.implementation.to_json() if self.implementation else None,
                "devices": list(self.devices), "ops": list(self.ops)}


@dataclass(frozen=True)
class ChainCall:
    """One call of a device-resident chain (``Backend.run_chain``): its results and how it was seeded."""

    output: np.ndarray
    present_state: np.ndarray
    seeded_by: str
    """``"past_state"`` (the case's, for the first call), or the select-and-resume path that handed
    it the previous call's state: ``"rebind"``, ``"copy"`` or ``"keep"`` (``kernels.Selection.path``)."""


class Backend(ABC):
    """An implementation under test of the ops its capabilities list.

    ``run`` returns ``(output, present_state)`` as NumPy arrays (in the case's dtype, or float64
    for the oracle), or raises a ``BackendError`` subclass. It must never return values for an
    input it considers invalid.
    """

    name: str
    crash_prone: bool = False
    """Native code that invalid input can kill (a segfault in ORT): such a backend runs in a
    crash-isolated worker process when asked (``fuzz.backends.create(..., isolate=True)``), so a
    crash becomes a finding instead of the end of the run."""
    in_its_own_process: bool = False
    """The implementation runs in a process this backend starts (a worker, Node, a browser): creating it is mostly
    waiting for that process, so several such backends can be created side by side (``fuzz.campaign.worker.probe``)."""

    @abstractmethod
    def capabilities(self) -> Capabilities:
        """What this backend can do here."""

    @property
    def implementation(self) -> Implementation | None:
        """What is under test and its version (``Capabilities.implementation``)."""
        return self.capabilities().implementation

    @abstractmethod
    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        """Run one case, as the op would: every property and campaign reaches the implementation here.

        Args:
            case: the inputs, the attributes exactly as set, and whether past and present state share one
                buffer (``case.kwargs()`` gives ``oracles.linear_attention``'s arguments). The caller's
                arrays must be left untouched.

        Returns:
            ``(output, present_state)`` as NumPy arrays, in the case's dtype (float64 for the oracle).

        Raises:
            Rejected: the implementation refuses the input, with its own message; the only answer to an
                input it considers invalid (it must never return values for one).
            Unsupported: a valid case this backend cannot run here (a dtype, a size); the case is skipped
                for it and counted, never passed.
            Crashed, TimedOut: the process running the case died or hung (crash-isolated backends).
        """

    def run_outputs(self, case: Case) -> tuple[np.ndarray, ...]:
        """Every output of the case's op, in ``Op.outputs`` order: how the ops whose outputs are not
        ``(output, present_state)`` (GatedDeltaNet's three, the replay's one) are run. The default serves the
        windowed ops through ``run``; a backend of the other ops overrides it. Raises as ``run`` does."""
        return self.run(case)

    @property
    def pipelines_compiled(self) -> int | None:
        """Shader pipelines this backend has compiled in this process so far, where it compiles its own (None:
        it does not, or cannot say). A call that raised the count paid for a compilation: on a software
        adapter that is most of a first run's time, and what a shader cache saves the next one."""
        return None

    def run_chain(self, case: Case, chain: Chain) -> list[ChainCall]:
        """Run the calls of a chain case (``fuzz.model.chain``) with the state kept on the device:
        each call resumes from the previous one's accepted slot by the backend's own select-and-resume.

        Optional: a backend without a device-resident path raises ``Unsupported`` (the default), and
        the property that needs one skips it with that reason.
        """
        raise Unsupported(self.name, "no device-resident chain (its select-and-resume is the caller's, on the host)")

    def resume(self, calls: Sequence[Case], accepted: Sequence[Sequence[int]]) -> list[np.ndarray]:
        """A decoder's chain in the capsule design, on the device: each GatedDeltaNet call of ``calls`` runs with
        capture, then each request's state after its first ``accepted[i][b]`` tokens is rebuilt there by replaying
        the capsule (0: the call's initial state kept), and that state is the next call's initial state (the
        ``initial_state`` of ``calls[1:]`` is not read). Returns the state after each call, read back only to be
        checked.

        Optional: a backend without a device-resident resume raises ``Unsupported`` (the default), and the
        properties that need one (``gdn-resume``, ``gdn-decoder-chain``) skip it with that reason.
        """
        raise Unsupported(self.name, "no device-resident resume by replay")

    def resident_kernel(self) -> ResidentKernel | None:
        """The device-resident kernel behind this backend (``kernels.resident``), for a property that runs it
        together with another op's kernel on the same device, the state never leaving it (the hybrid block);
        None (the default) for a backend that runs on the host or in another process."""
        return None

    def close(self) -> None:
        """Release devices, sessions and caches."""

    def __repr__(self) -> str:
        return f"<backend {self.name}>"
