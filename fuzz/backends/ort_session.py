"""What every ONNX Runtime backend shares: sessions, placement checks, runs, bindings, the window probe.

One base class, ``OrtBackend``; each execution provider is a small subclass that says how to load
the EP and how to put it in a session (``InProcessOrtBackend`` for the ``onnxruntime`` of this process, a worker's
build in ``fuzz.backends.ort_remote``). Every op of ``fuzz.model.ops`` that the EP's probe runs (a small
``W = 0`` call of each) is in its capabilities. The base class:

- builds one single-node model per case signature (``fuzz.backends.onnx_model``) and caches the session,
  or the error creating it, in a bounded LRU;
- disables the CPU fallback and checks where ORT placed the node: a session whose
  node of the op under test is not on the EP under test raises ``PlacementError``, never a result;
- runs plainly through ``session.run`` or, for aliased cases and continuations, through
  IOBinding with device-resident state values;
- probes once whether the EP accepts ``W > 0`` and, where it refuses with its "does not support
  state_window" message, serves ``W > 0`` in *prefix mode*: every window slot evaluated through
  ``W = 0`` calls of the same EP over the prefixes (``oracles.prefix.window_by_prefix``), all in one
  run of a model with a node per call where the case is valid and unaliased;
- maps ORT's exceptions onto the suite's outcomes, keeping ORT's own message.
"""

from __future__ import annotations

import re
from abc import abstractmethod
from collections import OrderedDict
from typing import Any

import numpy as np

import oracles
from fuzz.backends.base import (
    Backend,
    BackendError,
    Capabilities,
    Crashed,
    Rejected,
    TimedOut,
    Unavailable,
    Unsupported,
)
from fuzz.backends.onnx_model import (
    ModelKey,
    PrefixKey,
    build_model_for,
    build_prefix_model,
    model_key,
    prefix_input_name,
    prefix_model_key,
    prefix_output_name,
    prefix_state_name,
)
from fuzz.implementation import Implementation
from fuzz.model.case import Case
from fuzz.model.ops import (
    ALL_OPS,
    CAUSAL_CONV,
    GATED_DELTA_NET,
    GATED_DELTA_NET_STATE_REPLAY,
    LINEAR_ATTENTION,
    OPS,
    Op,
)
from oracles.validation import MAX_STATE_WINDOW

LOG_SEVERITY_ERROR = 3
"""ORT's default-logger severity: warnings quiet, errors reported."""

SESSION_LOG_SEVERITY = 4
"""Sessions log only fatal errors: every error of a session reaches us as an exception anyway, and
fuzzing invalid input would otherwise print each refusal twice."""

WINDOW_REFUSAL = "does not support state_window"
"""The phrase of today's CPU and WebGPU kernels when a model asks for ``W > 0`` (docs/spec.md §6)."""

SCHEMA_WITHOUT_WINDOW = "Unrecognized attribute: state_window"
"""The load error of a build whose LinearAttention schema predates the window (onnxruntime-webgpu 1.27.0):
it cannot take ``W > 0`` at all, which prefix mode serves (its ``W = 0`` models never carry the attribute)."""

OUT_OF_PROCESS = (Crashed, TimedOut)
"""Outcomes of a build run in a worker process (``fuzz.backends.ort_remote``): never cached, never retried."""

CANNOT_PLACE = (
    "NOT_IMPLEMENTED",
    "Could not find an implementation",
    "is not set",
    "fallback to CPU EP has been explicitly disabled",
)
"""Session-creation messages that mean "no kernel of the EP under test takes this node"."""

NOT_IMPLEMENTED_HERE = ("only supports ndim=1", "is not yet implemented", "Only 1D convolution is supported")
"""Messages of a kernel that exists but refuses a valid attribute value it does not implement, at session
creation (CPU, CUDA) or at run time (WebGPU): CausalConvWithState's ``ndim`` 2 and 3 are in the schema, ORT's
kernels run ``ndim = 1`` only."""

_ANSI = re.compile(r"\x1b\[[0-9;]*m|\[m")


class PlacementError(RuntimeError):
    """ORT assigned the node of the op under test to another EP than the one under test.

    A harness error, not an outcome: a run that happened elsewhere must never count as a pass.
    """


class WindowUnsupported(Unsupported):
    """The EP refused a ``W > 0`` model with its own message; prefix mode can still serve it."""


def ort_message(err: BaseException) -> str:
    """ORT's message with terminal colour codes and trailing whitespace removed."""
    return _ANSI.sub("", str(err)).strip()


def import_ort() -> Any:
    """``onnxruntime``, with its default logger set to errors only; ``Unavailable`` if missing."""
    try:
        import onnxruntime as ort
    except ImportError as err:
        raise Unavailable(f"cannot import onnxruntime: {err}") from err
    ort.set_default_logger_severity(LOG_SEVERITY_ERROR)
    return ort


def probe_case(state_window: int = 0, dtype: type = np.float32, op: Op = LINEAR_ATTENTION) -> Case:
    """The smallest valid case of ``op``: LinearAttention with one token, one head, ``d_k = d_v = 4`` and the
    linear rule; CausalConvWithState with one token, four channels and a kernel of 4; GatedDeltaNet with one token
    of one head, ``d_k = d_v = 4``, the gated delta rule and a capsule of one entry; its replay of that entry."""
    rng = np.random.default_rng(0)
    attrs: dict[str, Any] = {"state_window": state_window} if state_window else {}
    if op is GATED_DELTA_NET:
        key = rng.standard_normal((1, 1, 4))
        call: dict[str, np.ndarray] = {
            "query": rng.standard_normal((1, 1, 4)).astype(dtype), "key": (key / np.linalg.norm(key)).astype(dtype),
            "value": rng.standard_normal((1, 1, 4)).astype(dtype), "decay": np.full((1, 1), -0.5, np.float32),
            "beta": np.full((1, 1), 0.5, np.float32), "initial_state": np.zeros((1, 1, 4, 4), np.float32),
            "capture_count": np.ones(1, np.int32)}
        return Case(inputs=call, attrs={"state_update_capacity": 1}, op=op)
    if op is GATED_DELTA_NET_STATE_REPLAY:  # a 4 x 4 state, one entry: decay, key (4), delta (4)
        replay: dict[str, np.ndarray] = {
            "source_backing": rng.standard_normal(16).astype(np.float32),
            "capsule_backing": rng.standard_normal(9).astype(np.float32),
            "destination_backing": np.zeros(16, np.float32),
            "metadata": np.array([0, 0, 0, 1, 5, 1, 4, 4, 1, 1, 1], np.int64)}
        return Case(inputs=replay, attrs={}, op=op)
    if op is CAUSAL_CONV:
        inputs: dict[str, np.ndarray] = {"input": rng.standard_normal((1, 4, 1)).astype(dtype),
                  "weight": rng.standard_normal((4, 1, 4)).astype(dtype)}
        return Case(inputs=inputs, attrs=attrs, op=op)
    x: dict[str, np.ndarray] = {n: rng.standard_normal((1, 1, 4)).astype(dtype) for n in ("query", "key", "value")}
    return Case(inputs=x, attrs={"q_num_heads": 1, "kv_num_heads": 1, "update_rule": "linear", **attrs})


class SessionCache:
    """A bounded LRU of sessions by model signature; a failed creation is cached as its error."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"SessionCache: capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self._entries: OrderedDict[ModelKey | PrefixKey, Any] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: ModelKey | PrefixKey, create: Any) -> Any:
        """The session for ``key``, created by ``create(key)`` on a miss; re-raises a cached error."""
        if key in self._entries:
            self._entries.move_to_end(key)
            entry = self._entries[key]
        else:
            try:
                entry = create(key)
            except OUT_OF_PROCESS:
                raise  # the worker died or hung: the next attempt gets a fresh one
            except BackendError as err:
                entry = err
            self._entries[key] = entry
            if len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
        if isinstance(entry, BackendError):
            raise entry
        return entry

    def clear(self) -> None:
        self._entries.clear()


class OrtBackend(Backend):
    """An ONNX Runtime execution provider as a backend; subclasses supply the EP-specific hooks.

    Hooks: ``_load`` (find the EP and its device, raise ``Unavailable``), ``_session_of`` (a session
    of a model: ``InProcessOrtBackend``'s, or a worker's), ``_device``, ``_versions``, ``_implementation``,
    ``_devices``. Class attributes: ``provider``
    (the EP name the node must be placed on), ``value_device`` (the OrtValue device of bound state),
    ``unsupported_messages`` (run-time messages that mean "valid case, but not on this EP"),
    ``fallback_can_be_disabled``.
    """

    provider: str
    value_device: str
    unsupported_messages: tuple[str, ...] = ()
    fallback_can_be_disabled: bool = True
    binds_on_device: bool = True
    """Whether state can be bound as device values (IOBinding): aliased runs and two-call continuations.
    A build in another process takes arrays only: it runs an aliased case as separate buffers."""
    crash_prone = True

    def __init__(self, *, cache_size: int | None = None) -> None:
        """``cache_size``: how many sessions to keep (default ``_session_cache_size()``)."""
        self.ort = self._runtime()
        self._load()
        self._sessions = SessionCache(cache_size or self._session_cache_size())
        self.dtype_refusals: dict[str, str] = {}
        """dtype -> the EP's message refusing the probe's case of that dtype (e.g. no shader-f16 here)."""
        self.window_probe_message: str | None = None
        """The EP's message refusing ``W > 0`` (None when it accepted the probe)."""
        self._capabilities = self._probe()

    # ---- EP-specific hooks -------------------------------------------------------------------
    def _session_cache_size(self) -> int:
        """Sessions kept by default: on the host, many (a session costs host memory only)."""
        return 256

    def _runtime(self) -> Any:
        """The ``onnxruntime`` module sessions are made with (None for a build in another process)."""
        return import_ort()

    def _load(self) -> None:
        """Make the EP loadable in this process; raise ``Unavailable`` with the reason if it is not."""

    @abstractmethod
    def _device(self) -> str:
        """The device the EP runs on, in words."""

    def _versions(self) -> dict[str, str]:
        return {"onnxruntime": self.ort.__version__}

    def _implementation(self) -> Implementation:
        """What is under test: by default ONNX Runtime itself, at its version."""
        return Implementation("onnxruntime", self.ort.__version__)

    def _devices(self) -> tuple[str, ...]:
        """The devices the EP could run on here, numbered as ``--device`` counts them (none: no choice)."""
        return ()

    # ---- the Backend interface ---------------------------------------------------------------
    def capabilities(self) -> Capabilities:
        return self._capabilities

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        """Run ``case`` on the EP: directly, or through prefix runs where the EP refuses ``W > 0``.

        Once the probe has seen the EP refuse ``W > 0`` (its kernel rejects the attribute whatever
        the model), a case with ``W`` in ``1..8`` goes straight to prefix mode: a session per window
        size and signature would only fail again, and crowd the working sessions out of the cache.
        A ``W`` out of range still reaches the EP, whose own validation must reject it; an op whose
        kernel refuses ``W > 0`` where the probe's (LinearAttention) accepted it is served by prefix too. A case
        of a dtype the probe saw refused is ``Unsupported`` (the device cannot run it; not a finding).
        """
        refused = self.dtype_refusals.get(str(case.dtype))
        if refused is not None:
            raise Unsupported(self.name, f"{case.dtype} cannot run on this device: {refused}")
        if 0 < case.state_window <= MAX_STATE_WINDOW and self._capabilities.window == "prefix":
            return self._run_by_prefix(case)
        try:
            session = self.session(case)
        except WindowUnsupported:
            if self._capabilities.window == "none":
                raise
            return self._run_by_prefix(case)
        return self._execute(session, case)

    def run_outputs(self, case: Case) -> tuple[np.ndarray, ...]:
        """Every output of the case's op: ``run`` for the windowed ops; one session run naming every output for
        the ops without a window (GatedDeltaNet, its replay), wherever the build registers them (the probe says
        which, ``_other_ops``)."""
        if case.op.name in OPS:
            return self.run(case)
        if case.aliased:
            raise Unsupported(self.name, f"{case.op.name}'s states bound as one allocation (IOBinding) are not run "
                              "here yet")
        refused = self.dtype_refusals.get(str(case.dtype))
        if refused is not None and case.op is GATED_DELTA_NET:
            raise Unsupported(self.name, f"{case.dtype} cannot run on this device: {refused}")
        session = self.session(case)
        try:
            return tuple(np.asarray(x) for x in session.run(list(case.op.outputs), dict(case.inputs)))
        except Exception as err:
            raise self._run_error(err) from err

    def close(self) -> None:
        self._sessions.clear()

    # ---- sessions ----------------------------------------------------------------------------
    def session(self, case: Case) -> Any:
        """The cached ``InferenceSession`` for the case's model signature, placement verified."""
        if str(case.dtype) not in ("float32", "float16"):
            raise Unsupported(self.name, f"ONNX Runtime's {case.op.name} has no {case.dtype} kernel")
        return self._sessions.get(model_key(case), self._create_session)

    def session_options(self) -> Any:
        """The options of every session of this backend, before the EP is attached: quiet logs,
        recorded node placement, the CPU fallback disabled (where the EP is not the CPU), and one
        non-spinning thread: the cases are tiny, and a spinning intra-op pool competing with the
        software GPU's threads made a warm ORT CPU case some fifty times dearer (docs/campaign.md#history)."""
        options = self.ort.SessionOptions()
        options.log_severity_level = SESSION_LOG_SEVERITY
        options.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if self.fallback_can_be_disabled:
            options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        return options

    def _create_session(self, key: ModelKey) -> Any:
        return self._session_of(build_model_for(key), key[3])

    def _create_prefix_session(self, key: PrefixKey) -> Any:
        return self._session_of(build_prefix_model(key), key[2][3])

    @abstractmethod
    def _session_of(self, model: bytes, op: str) -> Any:
        """A session of ``model`` that runs ``op`` on the EP; a ``BackendError`` when it cannot be made."""

    def _creation_error(self, err: Exception) -> BackendError:
        if isinstance(err, BackendError):
            return err
        message = ort_message(err)
        if WINDOW_REFUSAL in message or SCHEMA_WITHOUT_WINDOW in message:
            return WindowUnsupported(self.name, message)
        if any(phrase in message for phrase in (*CANNOT_PLACE, *NOT_IMPLEMENTED_HERE)):
            return Unsupported(self.name, message)
        return Rejected(self.name, message)

    def verify_placement(self, session: Any, op: str = LINEAR_ATTENTION.name) -> None:
        """Raise ``PlacementError`` unless every node was assigned to ``provider`` and one of them is ``op``.

        Uses ORT's recorded graph assignment where this ORT records it; where it records nothing
        (ORT 1.30 with a plugin EP), the session's EP list must lead with ``provider`` and the
        disabled CPU fallback guarantees the rest.
        """
        placed = [
            (subgraph.ep_name, node.op_type)
            for subgraph in getattr(session, "get_provider_graph_assignment_info", list)()
            for node in subgraph.get_nodes()
        ]
        if not placed:
            # ORT before 1.31 records nothing for plugin EPs: fall back to the session's EP list
            if session.get_providers()[0] != self.provider:
                raise PlacementError(f"{self.name}: session providers {session.get_providers()}")
            return
        wrong = [(ep, node) for ep, node in placed if ep != self.provider]
        if wrong or not any(node == op for _, node in placed):
            raise PlacementError(f"{self.name}: {op} must run on {self.provider}, ORT placed nodes as {placed}")

    # ---- running -----------------------------------------------------------------------------
    def _run_error(self, err: Exception) -> BackendError:
        if isinstance(err, BackendError):
            return err
        message = ort_message(err)
        if any(phrase in message for phrase in (*self.unsupported_messages, *NOT_IMPLEMENTED_HERE)):
            return Unsupported(self.name, message)
        return Rejected(self.name, message)

    def _execute(self, session: Any, case: Case) -> tuple[np.ndarray, np.ndarray]:
        if case.aliased and "past_state" in case.inputs and self.binds_on_device:
            output, state = self._run_bound(session, case, self._device_value(case.inputs["past_state"]),
                                            aliased=True)
            return output, state.numpy()
        try:
            output, state = session.run(["output", "present_state"], dict(case.inputs))
        except Exception as err:
            raise self._run_error(err) from err
        return output, state

    def _device_value(self, array: np.ndarray) -> Any:
        """A copy of ``array`` in memory ORT owns on the EP's device. (On the CPU an OrtValue made
        from a NumPy array would borrow the array: an aliased run would overwrite the case's own
        input, and a temporary copy could be freed under ORT.)"""
        value = self.ort.OrtValue.ortvalue_from_shape_and_type(array.shape, array.dtype, self.value_device, 0)
        value.update_inplace(np.ascontiguousarray(array))
        return value

    def _run_bound(self, session: Any, case: Case, past: Any | None, *, aliased: bool) -> tuple[np.ndarray, Any]:
        """One IOBinding run with the state on the device: ``past`` (an OrtValue, or None) is
        bound as ``past_state`` and, when ``aliased``, also as ``present_state``. Returns the
        output as NumPy and the present state as a device OrtValue."""
        binding = session.io_binding()
        for name, array in case.inputs.items():
            if name != "past_state":
                binding.bind_cpu_input(name, np.ascontiguousarray(array))
        if past is not None:
            binding.bind_ortvalue_input("past_state", past)
        binding.bind_output("output", self.value_device, 0)  # bound outputs come back in bind order
        if aliased and past is not None:
            binding.bind_ortvalue_output("present_state", past)
        else:
            binding.bind_output("present_state", self.value_device, 0)
        try:
            session.run_with_iobinding(binding)
        except Exception as err:
            raise self._run_error(err) from err
        output, present = binding.get_outputs()
        return output.numpy(), present

    def run_continued(self, case: Case, split: int) -> tuple[np.ndarray, np.ndarray]:
        """Run ``case`` as two calls, tokens ``[0, split)`` then ``[split, T)``.

        The second call's ``past_state`` is the device value the first call wrote (no host round
        trip); with ``case.aliased`` each call binds its state value as both ``past_state`` and
        ``present_state``. Returns the concatenated output and the final state, which must equal
        a single ``run(case)``, except that a second call of fewer than ``W`` tokens writes zeros
        in its leading slots (docs/spec.md §2: ``T < W``). At ``W > 0`` the whole window written by the first
        call is passed on (only its slot ``W-1`` is read), so this needs a native window.
        """
        if not 1 <= split < case.seq_len:
            raise ValueError(f"run_continued: split must be in [1, {case.seq_len - 1}], got {split}")
        if case.state_window and self._capabilities.window != "native":
            raise Unsupported(self.name, "a two-call continuation at W > 0 needs an EP that runs W > 0")
        if not self.binds_on_device:
            raise Unsupported(self.name, "a two-call continuation binds state on the device; this build takes arrays")
        head = case.with_inputs(**_token_slice(case, 0, split))
        # the tail's past_state array only fixes the model signature: the device value is bound instead
        placeholder = np.zeros(case.dims().state_shape, case.dtype)
        tail = case.with_inputs(**_token_slice(case, split, case.seq_len), past_state=placeholder)
        past = case.inputs.get("past_state")
        state = None if past is None else self._device_value(past)
        out_head, state = self._run_bound(self.session(head), head, state, aliased=case.aliased)
        out_tail, state = self._run_bound(self.session(tail), tail, state, aliased=case.aliased)
        return np.concatenate([out_head, out_tail], axis=case.op.sequence_axis(case.attrs)), state.numpy()

    def _run_by_prefix(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        """Serve a ``W > 0`` case through ``W = 0`` calls of this EP (docs/spec.md §2, prefix formulation).

        The output comes from a ``W = 0`` call over all tokens, seeded with ``past_state[W-1]``;
        slot ``j`` from a ``W = 0`` call over the first ``T - W + j + 1`` tokens (the last slot's call
        is the output's: the same call, not repeated). A valid case without aliasing and with two calls or
        more runs them all in one run of a model with a node per call (``run_prefix_calls``); anything
        else, or where that run fails, runs them one by one (``run_prefix_calls_singly``), so that every
        outcome but a pass is the one a single call gives.
        """
        if not case.aliased and min(case.state_window, case.seq_len) > 1:
            try:
                return self.run_prefix_calls(case)
            except OUT_OF_PROCESS:
                raise  # a worker's death is the outcome: running the calls singly would only die again
            except (oracles.ValidationError, BackendError):
                pass  # the single calls below say which call fails, and how
        return self.run_prefix_calls_singly(case)

    def run_prefix_calls(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        """Prefix mode in one run: the valid, unaliased ``W > 0`` case's ``W = 0`` calls (one per slot that
        holds a token) as the nodes of one model (``onnx_model.build_prefix_model``), each fed its prefix.
        Raises ``ValidationError`` for an invalid case (before the EP sees anything).

        Independent nodes compute exactly what separate runs compute; one run saves the EP's fixed cost
        per run (a wait for the device and a read-back) for every slot but one.
        """
        dims = case.dims()
        window, seq_len = dims.state_window, dims.seq_len
        calls = min(window, seq_len)
        past = case.inputs.get("past_state")
        seed = None if past is None else past[window - 1]
        legacy = case.with_inputs(past_state=seed).with_attrs(state_window=None)
        sequence = case.op.sequence_inputs
        feeds = {name: x for name, x in legacy.inputs.items() if name not in sequence}
        for call in range(calls):
            tokens = seq_len - calls + call + 1
            feeds.update({prefix_input_name(name, call): x for name, x in _token_slice(legacy, 0, tokens).items()})
        session = self._sessions.get(prefix_model_key(legacy, calls), self._create_prefix_session)
        names = [*(prefix_state_name(call) for call in range(calls)), prefix_output_name(calls)]
        try:
            *states, output = session.run(names, feeds)
        except Exception as err:
            raise self._run_error(err) from err
        present = np.zeros(dims.state_shape, case.dtype)
        present[window - calls:] = states
        return output, present

    def run_prefix_calls_singly(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        """Prefix mode one call per run (the op's ``window_by_prefix``). The EP validates everything it
        sees at ``W = 0``; the window-only rules (the windowed state shape) are checked by the suite's
        validation, and a refusal says so."""
        window = case.state_window
        past = case.inputs.get("past_state")
        seeded = past[window - 1] if past is not None and past.ndim > 1 and len(past) == window else past
        full = self._run_legacy(case.with_inputs(past_state=seeded).inputs, case)
        lead, axis = case.op.lead_input, case.op.sequence_axis(case.attrs)

        def run(**kwargs: Any) -> tuple[np.ndarray, np.ndarray]:
            return full if kwargs[lead].shape[axis] == case.seq_len else self._run_legacy(kwargs, case)

        try:
            present = case.op.window_by_prefix(run, dict(case.inputs), dict(case.attrs))
        except oracles.ValidationError as err:
            raise Rejected(self.name, f"prefix mode, suite validation (the EP never saw W > 0): {err}") from err
        return full[0], present.astype(case.dtype)

    def _run_legacy(self, kwargs: dict[str, Any], case: Case) -> tuple[np.ndarray, np.ndarray]:
        """One ``W = 0`` run: inputs from ``kwargs`` (None = omitted), attributes from ``case``
        without ``state_window`` (absent means 0, in every schema, including those without it)."""
        inputs = {name: kwargs[name] for name in case.op.input_names if kwargs.get(name) is not None}
        legacy = Case(inputs=inputs, attrs=case.attrs, aliased=case.aliased, op=case.op).with_attrs(state_window=None)
        return self._execute(self.session(legacy), legacy)

    # ---- the capability probe ----------------------------------------------------------------
    def _probe(self) -> Capabilities:
        """Run a tiny ``W = 0`` case, try a float16 session, and ask once whether ``W > 0`` is taken."""
        try:
            self._execute(self.session(probe_case()), probe_case())
        except BackendError as err:
            raise Unavailable(f"{self.name}: a minimal W = 0 float32 run failed: {err.message}") from err
        dtypes = ["float32"]
        notes = []
        try:  # run, not only load: a device without shader-f16 (SwiftShader) loads the model, then refuses it
            self._execute(self.session(probe_case(dtype=np.float16)), probe_case(dtype=np.float16))
            dtypes.append("float16")
        except BackendError as err:
            self.dtype_refusals["float16"] = err.message
            notes.append(f"float16 cases are skipped here: {err.message}")
        try:
            _, state = self._execute(self.session(probe_case(1)), probe_case(1))
        except WindowUnsupported as err:
            window, self.window_probe_message = "prefix", err.message
            if SCHEMA_WITHOUT_WINDOW in err.message:
                notes.append("this build's LinearAttention schema has no state_window attribute (a model that "
                             "carries it fails to load); W > 0 served through W = 0 prefix runs, whose models "
                             f"leave it out: {err.message}")
            else:
                notes.append(f"W > 0 refused, served through W = 0 prefix runs: {err.message}")
        except BackendError as err:
            window, self.window_probe_message = "none", err.message
            notes.append(f"W > 0 probe failed: {err.message}")
        else:
            window = "native" if state.shape == (1, 1, 1, 4, 4) else "none"
            notes.append(f"W > 0 accepted; probe present_state shape {state.shape}")
        ops = [LINEAR_ATTENTION.name, *self._other_ops(notes)]
        return Capabilities(
            dtypes=tuple(dtypes),
            window=window,
            aliasing=self.binds_on_device,
            device=self._device(),
            versions=self._versions(),
            notes=tuple(notes),
            implementation=self._implementation(),
            devices=self._devices(),
            ops=tuple(ops),
        )

    def _other_ops(self, notes: list[str]) -> list[str]:
        """The ops besides LinearAttention whose minimal float32 call runs on the EP here (an ORT older than the
        op, or a build without its kernel, refuses the model); a note says why one does not: an availability
        note, not a finding."""
        found = []
        for op in ALL_OPS.values():
            if op is LINEAR_ATTENTION:
                continue
            try:
                self.run_outputs(probe_case(op=op))
            except BackendError as err:
                notes.append(f"{op.name} not run here: {err.message.splitlines()[0]}")
            else:
                found.append(op.name)
        return found


class InProcessOrtBackend(OrtBackend):
    """An EP of the ``onnxruntime`` imported here: sessions made in this process, their placement checked.

    Hook: ``_providers`` (attach the EP to session options; return the ``providers`` argument of
    ``InferenceSession`` or None)."""

    @abstractmethod
    def _providers(self, options: Any) -> list | None:
        """Attach the EP to ``options``; return ``providers`` for ``InferenceSession`` (or None)."""

    def _session_of(self, model: bytes, op: str) -> Any:
        options = self.session_options()
        providers = self._providers(options)
        try:
            session = self.ort.InferenceSession(model, options, providers=providers)
        except Exception as err:
            raise self._creation_error(err) from err
        self.verify_placement(session, op)
        return session


def _token_slice(case: Case, start: int, stop: int) -> dict[str, np.ndarray]:
    """The case's sequence inputs cut to positions ``[start, stop)`` of the op's sequence axis (contiguous)."""
    axis = case.op.sequence_axis(case.attrs)
    return {name: np.ascontiguousarray(np.take(x, np.arange(start, stop), axis=axis))
            for name, x in case.inputs.items() if name in case.op.sequence_inputs}


def describe_hardware(hw: Any) -> str:
    """An ``OrtHardwareDevice`` in words: type, vendor and ids, and its description where ORT has one."""
    described = f"{hw.type.name} device, vendor {hw.vendor} [0x{hw.vendor_id:04x}:0x{hw.device_id:04x}]"
    description = dict(hw.metadata).get("Description")
    return f"{described} {description}" if description else described

