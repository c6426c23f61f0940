"""Reproduce a defect of ONNX Runtime's com.microsoft LinearAttention (the template of `lafuzz export`).

Loads model.onnx (one node of the op) and the inputs in test_data_set_0/, runs them on one
execution provider with the CPU fallback disabled, and checks EXPECTATION:

  outputs                    every output in OUTPUTS agrees with test_data_set_0/output_*.pb (a float64
                             reference rounded to the output's type) within TOLERANCE; in the outputs named
                             in UNSPECIFIED, a NaN in the reference marks an entry the operator leaves
                             unspecified, which is not compared;
  rejection                  the EP refuses the inputs, which break a rule of the operator, with a message;
  rejection-or-pass-through  T = 0: the EP refuses, or returns an empty output and the past state unchanged;
  aliased-as-separate        past_state and present_state bound to one device buffer (ORT's IOBinding: the same
                             OrtValue bound as the past_state input and the present_state output, so the EP
                             writes the new state over the old) give the bits of a run with separate buffers,
                             on each of --runs runs.

The session runs in a child process, so a crash or a hang is reported (with its signal), not suffered.
Exit status: 1 while the defect is present, 0 once it is fixed, 2 when this machine cannot run the check.
Needs only numpy and onnxruntime (plus onnxruntime-ep-webgpu for the WebGPU plugin EP, or --ep-library).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path

import numpy as np
import onnxruntime as ort

# --- the case (written by lafuzz export) ---
EP = "WebGpuExecutionProvider"
EXPECTATION = "outputs"
CASE = "rule=linear W=0 B=1 T=1 Hq=1 Hkv=1 nk=1 dk=1 dv=1 float32 no-past"
D_V = 1
OUTPUTS = ["output", "present_state"]
UNSPECIFIED: list[str] = []
AXES: dict[str, list[str]] = {}
TOLERANCE = {"output": (0.0, 0.0), "present_state": (0.0, 0.0)}
VALUE_DEVICE = "cpu"
# --- end of the case ---

WEBGPU = "WebGpuExecutionProvider"
"""The EP of the onnxruntime-ep-webgpu plugin package, used when no --ep-library is given."""
TIMEOUT_S = 120.0
"""How long the child may take to create the session and run it (every run) before it counts as hung."""
ALIASED = "aliased-as-separate"
RUNS = 20
"""Runs with one buffer, by default: a defect of aliased state may show in some runs only."""
ELEMENT_TYPES = {1: np.float32, 6: np.int32, 7: np.int64, 10: np.float16, 11: np.float64}
"""ONNX TensorProto data types (FLOAT, INT32, INT64, FLOAT16, DOUBLE) as NumPy types."""
CANNOT_PLACE = (
    "Could not find an implementation",
    "NOT_IMPLEMENTED",
    "fallback to CPU EP has been explicitly disabled",
)
"""Session-creation errors meaning the EP has no kernel for the node: nothing about the defect can be told."""
CANNOT_LOAD = (
    "Unrecognized attribute",
    "No Op registered for",
    "is not a registered function/op",
    "No opset import for domain",
    "Unsupported model IR version",
)
"""Load errors meaning this runtime's schema for the node differs (an older release): it cannot load the
model, which tells nothing about the defect, so the verdict is "cannot check" (exit 2), never "fixed"."""
EXIT_FIXED, EXIT_DEFECT, EXIT_CANNOT_CHECK = 0, 1, 2


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if byte < 0x80:
            return value, pos


def read_tensor(path: Path) -> tuple[str, np.ndarray]:
    """``(name, array)`` of a TensorProto file with raw_data (as onnx.numpy_helper.from_array writes it),
    read without the onnx package: fields 1 (dims), 2 (data_type), 8 (name) and 9 (raw_data)."""
    data, pos = path.read_bytes(), 0
    dims, data_type, name, raw = [], 0, "", b""
    while pos < len(data):
        key, pos = _varint(data, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            dims += [value] if field == 1 else []
            data_type = value if field == 2 else data_type
        elif wire == 2:
            size, pos = _varint(data, pos)
            chunk, pos = data[pos : pos + size], pos + size
            while field == 1 and chunk:  # packed dims
                value, used = _varint(chunk, 0)
                dims, chunk = [*dims, value], chunk[used:]
            name = chunk.decode() if field == 8 else name
            raw = chunk if field == 9 else raw
        else:
            raise ValueError(f"{path}: unexpected protobuf wire type {wire} (field {field})")
    if data_type not in ELEMENT_TYPES:
        raise ValueError(f"{path}: TensorProto data_type {data_type} is not one of {sorted(ELEMENT_TYPES)}")
    return name, np.frombuffer(raw, ELEMENT_TYPES[data_type]).reshape(dims)


def load_test_data(folder: Path) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The inputs and expected outputs of an ONNX test data set, by name."""
    inputs = dict(read_tensor(p) for p in sorted(folder.glob("input_*.pb")))
    outputs = dict(read_tensor(p) for p in sorted(folder.glob("output_*.pb")))
    return inputs, outputs


def attach_ep(options: ort.SessionOptions, ep: str, library: str | None) -> tuple[list[str] | None, str]:
    """Put ``ep`` in the session options; returns ``(providers argument, environment in words)``.

    An EP built into this onnxruntime is named as a provider; otherwise it is a plugin EP library
    (``library``, or the onnxruntime-ep-webgpu package's), registered and bound to its device, a GPU
    preferred (a software adapter is allowed where there is no GPU).
    """
    if library is None and ep in ort.get_available_providers():
        return [ep], f"onnxruntime {ort.__version__}, {ep} (built in)"
    if library is None and ep != WEBGPU:
        raise LookupError(
            f"{ep} is not in this onnxruntime (it has {', '.join(ort.get_available_providers())}); "
            "pass --ep-library PATH for a plugin EP"
        )
    if library is None:
        try:
            import onnxruntime_ep_webgpu
        except ImportError:
            raise LookupError(
                f"{ep} is not built into this onnxruntime and onnxruntime-ep-webgpu is not "
                "installed (pip install onnxruntime-ep-webgpu, or pass --ep-library PATH)"
            ) from None
        library = onnxruntime_ep_webgpu.get_library_path()
    os.environ.setdefault("ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER", "1")
    ort.register_execution_provider_library("repro-ep", library)
    devices = [d for d in ort.get_ep_devices() if d.ep_name == ep]
    if not devices:
        raise LookupError(f"the plugin library {library} offers no {ep} device on this machine")
    device = sorted(devices, key=lambda d: d.device.type != ort.OrtHardwareDeviceType.GPU)[0]
    options.add_provider_for_devices([device], {})
    version = device.ep_metadata.get("version", "unknown version")
    where = f"{device.device.type.name} device, vendor {device.device.vendor}"
    return None, f"onnxruntime {ort.__version__}, {ep} plugin {version} from {library}, {where}"


def device_value(array: np.ndarray, device: str) -> ort.OrtValue:
    """A copy of ``array`` in memory ONNX Runtime owns on ``device`` (never a view of the array)."""
    value = ort.OrtValue.ortvalue_from_shape_and_type(array.shape, array.dtype, device, 0)
    value.update_inplace(np.ascontiguousarray(array))
    return value


def run_bound(session: ort.InferenceSession, inputs: dict[str, np.ndarray], device: str, *,
              one_buffer: bool) -> dict[str, np.ndarray]:
    """One run through IOBinding with the past state in a fresh OrtValue on ``device``; with ``one_buffer``
    that same OrtValue is also bound as the present_state output, else present_state gets its own buffer."""
    binding = session.io_binding()
    for name, array in inputs.items():
        if name != "past_state":
            binding.bind_cpu_input(name, np.ascontiguousarray(array))
    past = device_value(inputs["past_state"], device)
    binding.bind_ortvalue_input("past_state", past)
    binding.bind_output("output", device, 0)
    if one_buffer:
        binding.bind_ortvalue_output("present_state", past)
    else:
        binding.bind_output("present_state", device, 0)
    session.run_with_iobinding(binding)
    output, present_state = binding.get_outputs()
    return {"output": output.numpy(), "present_state": present_state.numpy()}


def run_aliasing(session: ort.InferenceSession, inputs: dict[str, np.ndarray], device: str, runs: int,
                 report: Connection) -> None:
    """Run once with separate buffers, then ``runs`` times with one buffer; send both."""
    try:
        device_value(inputs["past_state"], device)
    except Exception as err:
        report.send(("unavailable", f"cannot place an OrtValue on device {device!r}: {str(err).strip()}"))
        return
    report.send(("stage", "session.run_with_iobinding (separate buffers)"))
    separate = run_bound(session, inputs, device, one_buffer=False)
    one_buffer = []
    for number in range(runs):
        report.send(("stage", f"session.run_with_iobinding (one buffer, run {number + 1} of {runs})"))
        one_buffer.append(run_bound(session, inputs, device, one_buffer=True))
    report.send(("outputs", separate))
    report.send(("one buffer", one_buffer))


def run_session(model: str, inputs: dict[str, np.ndarray], ep: str, library: str | None, report: Connection,
                device: str = VALUE_DEVICE, runs: int = RUNS) -> None:
    """The child process: create the session and run it (once, or the aliasing runs on ``device``), sending
    each step to ``report``."""
    options = ort.SessionOptions()
    if ep != "CPUExecutionProvider":  # the CPU EP is the fallback itself
        options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    try:
        providers, environment = attach_ep(options, ep, library)
    except (LookupError, RuntimeError) as err:
        report.send(("unavailable", str(err)))
        return
    report.send(("environment", environment))
    report.send(("stage", "InferenceSession(model.onnx)"))
    try:
        session = ort.InferenceSession(model, options, providers=providers)
        if EXPECTATION == ALIASED:
            run_aliasing(session, inputs, device, runs, report)
            return
        report.send(("stage", "session.run"))
        results = session.run(OUTPUTS, inputs)
    except Exception as err:
        text = str(err).strip()
        if any(phrase in text for phrase in CANNOT_LOAD):
            report.send(("unavailable", f"this onnxruntime ({ort.__version__}) cannot load the model: {text}"))
        elif any(phrase in text for phrase in CANNOT_PLACE):
            report.send(("unavailable", f"{ep} has no kernel for the node in this onnxruntime ({ort.__version__}), "
                         f"so it cannot show the defect either way: {text}"))
        else:
            report.send(("error", text))
        return
    report.send(("outputs", dict(zip(OUTPUTS, results, strict=True))))


def run_isolated(
    model: Path, inputs: dict[str, np.ndarray], ep: str, library: str | None, timeout: float,
    device: str = VALUE_DEVICE, runs: int = RUNS,
) -> dict[str, object]:
    """Everything the child reported, plus ``"signal"`` if it died or ``"hung"`` if it ran out of time."""
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=run_session, args=(str(model), inputs, ep, library, sender, device, runs))
    child.start()
    sender.close()
    seen: dict[str, object] = {}
    deadline = time.monotonic() + timeout
    while child.is_alive() or receiver.poll():
        if receiver.poll(0.05):
            try:
                kind, value = receiver.recv()
            except EOFError:
                break
            seen[kind] = value
        elif time.monotonic() > deadline:
            child.kill()
            seen["hung"] = timeout
            break
    child.join()
    if child.exitcode is not None and child.exitcode < 0 and "hung" not in seen:
        seen["signal"] = signal.Signals(-child.exitcode).name
    return seen


def locate(name: str, index: tuple[int, ...]) -> str:
    """An element of ``output`` or ``present_state`` in the operator's terms (``AXES`` names each axis; without
    them, a LinearAttention element, its heads ``D_V`` values wide)."""
    if name in AXES:
        return ", ".join(f"{axis} {i}" for axis, i in zip(AXES[name], index, strict=True))
    if name == "output":
        batch, token, column = index
        return f"batch {batch}, token {token}, head {column // D_V}, value col {column % D_V}"
    slot = f"slot {index[0]}, " if len(index) == 5 else ""
    batch, head, row, column = index[-4:]
    return f"{slot}batch {batch}, head {head}, key row {row}, value col {column}"


def worst_element(got: dict[str, np.ndarray], expected: dict[str, np.ndarray]) -> tuple[float, str]:
    """The largest error/tolerance ratio over the outputs, and the element behind it in words (an entry that
    UNSPECIFIED leaves open counts as exact)."""
    worst, line = 0.0, "every element is exact"
    for name, want in expected.items():
        have = got[name]
        if have.shape != want.shape:
            return float("inf"), f"{name}: shape {have.shape}, expected {want.shape}"
        atol, rtol = TOLERANCE[name]
        have64, want64 = have.astype(np.float64), want.astype(np.float64)
        same = (have64 == want64) | (np.isnan(want64) & (np.isnan(have64) | (name in UNSPECIFIED)))
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            error = np.where(same, 0.0, np.nan_to_num(np.abs(have64 - want64), nan=np.inf))
            ratio = np.where(same, 0.0, np.where(np.isnan(want64), np.inf, error / (atol + rtol * np.abs(want64))))
        if ratio.size and ratio.max() > worst:
            index = tuple(int(i) for i in np.unravel_index(int(np.argmax(ratio)), ratio.shape))
            worst = float(ratio[index])
            tolerance = atol + rtol * abs(want64[index])
            line = (
                f"{name}[{', '.join(map(str, index))}] ({locate(name, index)}): expected {want[index]!s}, "
                f"got {have[index]!s}, |error| {error[index]:.6g}, tolerance {tolerance:.6g} "
                f"(atol {atol:.6g} + rtol {rtol:.6g} * |expected|), ratio {worst:.4g}"
            )
    return worst, line


def largest_difference(got: dict[str, np.ndarray], separate: dict[str, np.ndarray]) -> tuple[float, str]:
    """Among the elements whose bits differ, the one of ``got`` (one buffer) farthest from ``separate``'s: the
    distance, and the element in words."""
    worst, line = -1.0, "the same bits"
    for name, want in separate.items():
        have = got[name]
        if have.shape != want.shape:
            return float("inf"), f"{name}: shape {have.shape} with one buffer, {want.shape} with separate buffers"
        bits = np.dtype(f"u{want.itemsize}")
        differs = have.view(bits) != want.view(bits)
        with np.errstate(invalid="ignore", over="ignore"):
            gap = np.nan_to_num(np.abs(have.astype(np.float64) - want.astype(np.float64)), nan=np.inf)
        gap = np.where(differs, gap, -1.0)
        if gap.size == 0 or gap.max() <= worst:
            continue
        index = tuple(int(i) for i in np.unravel_index(int(np.argmax(gap)), gap.shape))
        worst = float(gap[index])
        line = (f"{name}[{', '.join(map(str, index))}] ({locate(name, index)}): separate buffers {want[index]!s}, "
                f"one buffer {have[index]!s}, |difference| {worst:.6g}; {int(np.count_nonzero(differs))} of "
                f"{differs.size} {name} elements differ in that run")
    return worst, line


def judge_aliasing(separate: dict[str, np.ndarray], one_buffer: list[dict[str, np.ndarray]], ep: str) -> int:
    """Print how many runs with one buffer differ from the run with separate buffers; return the exit status."""
    differences = [largest_difference(run, separate) for run in one_buffer]
    differing = [found for found in differences if found[0] >= 0.0]
    print(f"{len(differing)} of {len(one_buffer)} runs with one buffer differ from the run with separate buffers")
    if not differing:
        print(f"fixed: {ep} gives the same bits with past_state and present_state in one buffer")
        return EXIT_FIXED
    print(f"worst element: {max(differing)[1]}")
    print(f"DEFECT: {ep} returns other bits when past_state and present_state are one buffer")
    return EXIT_DEFECT


def judge(seen: dict[str, object], expected: dict[str, np.ndarray], ep: str, timeout: float) -> int:
    """Print the verdict on what the child reported; return the exit status."""
    stage = seen.get("stage", "onnxruntime")
    if "signal" in seen:
        print(f"DEFECT: {stage} died with {seen['signal']}")
        return EXIT_DEFECT
    if "hung" in seen:
        print(f"DEFECT: {stage} did not finish within {timeout:g} s")
        return EXIT_DEFECT
    if "unavailable" in seen:
        print(f"cannot check here: {seen['unavailable']}")
        return EXIT_CANNOT_CHECK
    if "error" in seen:
        message = str(seen["error"])
        if EXPECTATION == ALIASED and stage == "InferenceSession(model.onnx)":
            print(f"cannot check here: {ep} refuses the model, so it cannot show how it binds the state: {message}")
            return EXIT_CANNOT_CHECK
        if EXPECTATION in ("outputs", ALIASED):
            print(f"DEFECT: {stage} refused a valid case: {message}")
            return EXIT_DEFECT
        if not message:
            print(f"DEFECT: {stage} refused the case without a message")
            return EXIT_DEFECT
        print(f"fixed: {stage} refused the case: {message}")
        return EXIT_FIXED
    if "outputs" not in seen:
        print(f"DEFECT: the child process ended during {stage} without a result (exit status unknown)")
        return EXIT_DEFECT
    got = seen["outputs"]
    assert isinstance(got, dict), "run_session sends its outputs as a dict of arrays"
    if EXPECTATION == ALIASED:
        one_buffer = seen["one buffer"]
        assert isinstance(one_buffer, list), "run_aliasing sends a list of outputs"
        return judge_aliasing(got, one_buffer, ep)
    shapes = ", ".join(f"{name} {array.shape}" for name, array in got.items())
    if EXPECTATION == "rejection":
        print(f"DEFECT: {ep} accepted inputs that break a rule of the operator and returned {shapes}")
        return EXIT_DEFECT
    ratio, line = worst_element(got, expected)
    print(f"worst element: {line}")
    if ratio > 1.0:
        print(f"DEFECT: {ep} returned wrong values ({shapes})")
        return EXIT_DEFECT
    if EXPECTATION == "rejection-or-pass-through":
        print(f"fixed: {ep} returned an empty output and passed the past state through")
    else:
        print(f"fixed: {ep} agrees with the reference within the tolerance")
    return EXIT_FIXED


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ep", default=EP, help=f"execution provider to check (default {EP})")
    parser.add_argument("--ep-library", help="a plugin EP library to register instead of the installed package's")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds before the run counts as hung")
    parser.add_argument("--runs", type=int, default=RUNS, help=f"{ALIASED}: runs with one buffer (default {RUNS})")
    parser.add_argument("--device", help=f"{ALIASED}: OrtValue device of the bound state (default {VALUE_DEVICE}, "
                        "cpu for CPUExecutionProvider)")
    args = parser.parse_args(argv)
    device = args.device or ("cpu" if args.ep == "CPUExecutionProvider" else VALUE_DEVICE)
    here = Path(__file__).resolve().parent
    print(f"case: {CASE}")
    try:
        inputs, expected = load_test_data(here / "test_data_set_0")
    except (OSError, ValueError) as err:  # this script's own data, not the EP: no verdict
        print(f"cannot check here: cannot read test_data_set_0: {err}")
        return EXIT_CANNOT_CHECK
    binding = f" ({args.runs} runs with one buffer, state on device {device})" if EXPECTATION == ALIASED else ""
    print(f"expectation: {EXPECTATION} on {args.ep}{binding}")
    seen = run_isolated(here / "model.onnx", inputs, args.ep, args.ep_library, args.timeout, device, args.runs)
    if "environment" in seen:
        print(f"environment: {seen['environment']}")
    return judge(seen, expected, args.ep, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
