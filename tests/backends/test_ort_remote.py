"""The ORT builds run in worker processes (ort-node, ort-web, ort-webgpu-builtin): results, prefix mode, the
CPU fallback forbidden, and a worker (or a browser tab) killed mid-case as a ``Crashed`` outcome after which
the backend goes on. Each build is created once per test process (the backend pool): a missing one skips
with the reason."""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import time

import numpy as np
import psutil
import pytest
from onnx import TensorProto, helper
from support.ort_cases import fixed_case

from fuzz.backends import Crashed, Rejected, TimedOut, Unsupported
from fuzz.backends.ort_remote import RemoteOrtBackend, WorkerLink
from fuzz.engine.compare import assert_agrees_with_oracle

BUILDS = {"ort-node": "onnxruntime-node", "ort-web": "onnxruntime-web", "ort-webgpu-builtin": "onnxruntime-webgpu"}


@pytest.fixture(params=list(BUILDS))
def build(request, need) -> RemoteOrtBackend:
    return need(request.param)


def test_results_and_prefix_mode_agree_with_the_oracle(build):
    caps = build.capabilities()
    assert caps.implementation is not None and caps.implementation.name == BUILDS[build.name]
    assert caps.window == "prefix" and not caps.aliasing
    # more kv heads than query heads: 1.27.0 predates the GQA output layout (a known issue of its own)
    for case in (fixed_case("gated_delta", layout="inverse"), fixed_case("delta", window=3, layout="inverse")):
        assert_agrees_with_oracle(case, build.run(case), label=build.name)


def _cpu_only_model() -> bytes:
    """One ``Unique`` node: the CPU EP has a kernel for it, the WebGPU EP none."""
    node = helper.make_node("Unique", ["x"], ["y"])
    value = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("x", "y")]
    model = helper.make_model(helper.make_graph([node], "cpu-only", value[:1], value[1:]),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def test_a_node_the_ep_cannot_take_is_not_run_on_the_cpu(build):
    with pytest.raises(Unsupported, match=r"fallback to CPU EP has been explicitly disabled|placement"):
        build._session_of(_cpu_only_model(), "LinearAttention")


def _kill_mid_request(monkeypatch, build: RemoteOrtBackend, victims) -> None:
    """Kill ``victims()`` while the next ``run`` request is with them: stopped (SIGSTOP) before it is written, so
    that they cannot answer it first, and killed (SIGKILL) once it is written."""
    link = build.link
    write = link._write

    def write_then_kill(data, deadline):
        if b'"op": "run"' not in data[:200]:
            return write(data, deadline)
        monkeypatch.setattr(link, "_write", write)
        pids = victims()
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        write(data, deadline)
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        return None

    monkeypatch.setattr(link, "_write", write_then_kill)


def test_a_worker_killed_mid_case_is_a_crash_and_the_next_case_runs(build, monkeypatch):
    case = fixed_case("linear", seed=1, layout="inverse")
    restarts = build.restarts
    _kill_mid_request(monkeypatch, build, lambda: [build.link._process.pid])
    with pytest.raises(Crashed, match="killed by SIGKILL"):
        build.run(case)
    assert_agrees_with_oracle(case, build.run(case), label=f"{build.name} after a restart")
    assert build.restarts == restarts + 1


def test_ort_web_refusing_t_zero_is_a_crash_and_the_next_case_runs(need):
    """ORT Web refuses T = 0 from inside a WebGPU call, which leaves its WebGPU backend unusable (the next run
    hung for a minute in a campaign): the runner calls it a crash, the page is replaced, the next case runs.
    Retire ``ort-web`` from ``SEEN_IN_OTHER_BUILDS["ort-webgpu-empty-sequence"]`` once this stops crashing."""
    web = need("ort-web")
    case = fixed_case("linear")
    with pytest.raises(Crashed, match="leaving the WebGPU backend unusable"):
        web.run(fixed_case("linear", seq_len=0))
    assert_agrees_with_oracle(case, web.run(case), label="ort-web after the refused T = 0")


def test_ort_web_runs_a_model_again_after_refusing_a_conv_kernel_of_size_zero(need, monkeypatch):
    """ORT Web 1.30.0 refuses a CausalConvWithState kernel of size 0 with an exception that escapes its executor, and
    leaves that session locked: its next run blocks the page for good (a campaign lost 60 s to it). The runner
    releases a session whose run was refused, so the same model, loaded again, runs a valid case at once."""
    from fuzz.backends.onnx_model import model_key

    web = need("ort-web")
    bad, good = _conv_case(0), _conv_case(2)
    assert model_key(bad) == model_key(good), "the valid call must reuse the refused call's model"
    monkeypatch.setattr(web.link, "timeout_s", 20.0)  # a hung page fails the test in 20 s, not 60
    restarts = web.restarts
    for _ in range(2):
        with pytest.raises(Rejected, match="CalculateTensorStorageSize"):
            web.run(bad)
    assert_agrees_with_oracle(good, web.run(good), label="ort-web after refusing a kernel of size 0")
    assert web.restarts == restarts, "the page was replaced: the refusal must not cost a browser"


def test_a_hang_report_quotes_the_worker_s_earlier_requests(need):
    """A build left unusable by one request fails on a later one: the report names what the worker answered
    before (the earlier requests, with their errors)."""
    build = need("ort-webgpu-builtin")
    build.run(fixed_case("linear"))
    bad = fixed_case("linear").with_inputs(value=np.zeros((2, 5), np.float32))
    with pytest.raises(Rejected):
        build.run(bad)
    link = build.link
    assert "answered" in link._earlier() and "error:" in link._earlier()
    link.stop(kill=True)
    link.start()
    assert link._earlier() == "; the first request of this worker"


def test_a_browser_tab_killed_mid_case_is_a_crash_and_the_browser_restarts(need, monkeypatch):
    web = need("ort-web")
    browser = web.link.info["process_groups"][0]

    def renderers() -> list[int]:
        return [p.pid for p in psutil.Process(browser).children(recursive=True)
                if "--type=renderer" in " ".join(p.cmdline())]

    case = fixed_case("gated_delta", seed=2, layout="inverse")
    _kill_mid_request(monkeypatch, web, renderers)
    with pytest.raises(Crashed, match="tab crashed"):
        web.run(case)
    assert _gone_within(browser, 5.0), "the crashed tab's browser was left running"
    assert_agrees_with_oracle(case, web.run(case), label="ort-web in a fresh browser")


def _gone_within(pid: int, seconds: float) -> bool:
    """Whether process ``pid`` ended (or is a zombie) within ``seconds``: a SIGKILL to a process group another
    process started is delivered at once but not waited for here."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_schema_without_state_window_is_reported_and_served_by_prefix(need):
    builtin = need("ort-webgpu-builtin")
    caps = builtin.capabilities()
    if not any("schema has no state_window" in note for note in caps.notes):
        pytest.skip(f"this onnxruntime ({caps.implementation}) has state_window in its schema")
    case = fixed_case("linear", window=2, seq_len=3, layout="inverse")
    assert_agrees_with_oracle(case, builtin.run(case), label="ort-webgpu-builtin, W = 2 by prefix")


HANGING_WORKER = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, sys.argv[1])
    from fuzz.backends.ort_worker import decode, encode
    reply = os.fdopen(int(sys.argv[sys.argv.index("--reply-fd") + 1]), "wb")
    decode(sys.stdin.buffer)
    reply.write(encode({"ok": True, "info": {}}))
    reply.flush()
    decode(sys.stdin.buffer)
    time.sleep(60)
""")


def test_a_worker_that_hangs_is_timed_out_and_killed():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    link = WorkerLink("hanging", [sys.executable, "-c", HANGING_WORKER, root], timeout_s=1.0, start_timeout_s=30)
    link.start()
    process = link._process
    with pytest.raises(TimedOut, match="no answer within 1 s"):
        link.request({"op": "run"})
    assert process.poll() == -signal.SIGKILL and not link.running


def test_the_documented_defects_of_1_27_still_hold(need):
    """onnxruntime-webgpu 1.27.0's own known issues, exactly (retire them when a release fixes them): the GQA
    output has H_kv * d_v columns, and an input the rule does not use is refused."""
    builtin = need("ort-webgpu-builtin")
    if str(builtin.implementation) != "onnxruntime-webgpu 1.27.0":
        pytest.skip(f"documented for onnxruntime-webgpu 1.27.0, this is {builtin.implementation}")
    gqa = fixed_case("linear")  # H_q = 4, H_kv = 2
    assert builtin.run(gqa)[0].shape == (2, 5, 2 * 8)
    unused = fixed_case("linear", layout="inverse").with_inputs(beta=np.full((2, 5, 2), 0.5, np.float32))
    with pytest.raises(Rejected, match="not present in the bind group layout"):
        builtin.run(unused)


def _conv_case(taps: int, **attrs: int | str):
    """A valid CausalConvWithState call of one channel and one token through ``taps`` weights, with ``attrs``."""
    from fuzz.model.case import Case
    from fuzz.model.ops import CAUSAL_CONV

    inputs = {"input": np.full((1, 1, 1), 2.0, np.float32), "weight": np.ones((1, 1, taps), np.float32)}
    return Case(inputs, dict(attrs), op=CAUSAL_CONV)


def test_the_documented_conv_defects_of_1_27_still_hold(need):
    """onnxruntime-webgpu 1.27.0's CausalConvWithState: a node with channels_last or dilation does not load, a
    kernel of one tap is refused, and one over T = 0 kills the process (retire the issues when a release fixes
    them); a plain node runs."""
    from fuzz.corpus.classifier import Classifier

    builtin = need("ort-webgpu-builtin")
    if str(builtin.implementation) != "onnxruntime-webgpu 1.27.0":
        pytest.skip(f"documented for onnxruntime-webgpu 1.27.0, this is {builtin.implementation}")
    assert_agrees_with_oracle(_conv_case(2), builtin.run(_conv_case(2)), label="ort-webgpu-builtin conv")
    known = Classifier.for_backends([builtin])
    for attrs, refusal in (({"channels_last": 0}, "Unrecognized attribute: channels_last"),
                           ({"channels_last": 1}, "Unrecognized attribute: channels_last"),
                           ({"dilation": 2}, "Unrecognized attribute: dilation")):
        case = _conv_case(2, **attrs)
        with pytest.raises(Rejected, match=refusal):
            builtin.run(case)
        assert getattr(known.affecting("ort-webgpu-builtin", case), "id", None) == \
            "ort-webgpu-builtin-conv-attributes-refused"
    with pytest.raises(Rejected, match="Binding entry buffer not set"):
        builtin.run(_conv_case(1))
    empty = _conv_case(1).with_inputs(input=np.zeros((1, 1, 0), np.float32))
    assert getattr(known.affecting("ort-webgpu-builtin", empty), "id", None) == \
        "ort-webgpu-builtin-conv-empty-sequence-one-tap"
    with pytest.raises(Crashed, match="SIGSEGV"):
        builtin.run(empty)
    assert getattr(known.affecting("ort-webgpu-builtin", _conv_case(1)), "id", None) == \
        "ort-webgpu-builtin-conv-kernel-size-one-refused"
    assert known.affecting("ort-webgpu-builtin", _conv_case(2)) is None


@pytest.mark.parametrize(("name", "version", "how"), [
    ("ort-node", "onnxruntime-node 1.30.0", "SIGSEGV"),
    ("ort-web", "onnxruntime-web 1.30.0", "leaving the WebGPU backend unusable"),
])
def test_the_builds_crash_on_a_conv_kernel_of_one_tap(name, version, how, need):
    """The plugin's documented crash (``ort-webgpu-conv-kernel-size-one``) in onnxruntime-node 1.30.0 (SIGSEGV) and
    ORT Web 1.30.0 (createBindGroup throws, which leaves its WebGPU backend hung) too; two taps run, after a
    restart."""
    from fuzz.corpus.classifier import Classifier

    build = need(name)
    if str(build.implementation) != version:
        pytest.skip(f"documented for {version}, this is {build.implementation}")
    assert getattr(Classifier.for_backends([build]).affecting(name, _conv_case(1)), "id", None) == \
        f"{name}-conv-kernel-size-one"
    with pytest.raises(Crashed, match=how):
        build.run(_conv_case(1))
    assert_agrees_with_oracle(_conv_case(2), build.run(_conv_case(2)), label=f"{name} conv after the crash")


@pytest.mark.parametrize(("name", "version"), [("ort-node", "onnxruntime-node 1.30.0"),
                                              ("ort-webgpu-builtin", "onnxruntime-webgpu 1.27.0")])
def test_the_builds_compute_conv_float16_in_float16(name, version, need):
    """The plugin's documented float16 arithmetic (``ort-webgpu-conv-float16-accumulation``) in ORT Node and 1.27.0
    too, on the case a campaign found in each: an output off the correctly rounded result (retire when fixed)."""
    from pathlib import Path

    from fuzz.backends.oracle import OracleBackend
    from fuzz.corpus import entry as corpus
    from fuzz.corpus.classifier import Classifier

    build = need(name)
    if str(build.implementation) != version:
        pytest.skip(f"documented for {version}, this is {build.implementation}")
    issue_id = f"{name}-conv-float16-accumulation"
    case = corpus.read_entry(Path(__file__).resolve().parents[2] / "corpus" / "backends-agree" / issue_id).finding.case
    assert getattr(Classifier.for_backends([build]).affecting(name, case), "id", None) == issue_id
    rounded_once = OracleBackend().run(case)[0].astype(np.float16)
    assert not np.array_equal(build.run(case)[0], rounded_once), "now rounded once: retire the issue"


@pytest.mark.parametrize(("name", "version"), [("ort-node", "onnxruntime-node 1.30.0"),
                                              ("ort-web", "onnxruntime-web 1.30.0"),
                                              ("ort-webgpu-builtin", "onnxruntime-webgpu 1.27.0")])
def test_the_builds_run_an_empty_conv_activation(name, version, need):
    """The plugin's documented ``activation = ''`` run as 'none' (``ort-webgpu-conv-empty-activation``) in ORT Node,
    ORT Web and 1.27.0 too, while other unknown names are refused (retire when fixed)."""
    from fuzz.corpus.classifier import Classifier

    build = need(name)
    if str(build.implementation) != version:
        pytest.skip(f"documented for {version}, this is {build.implementation}")
    empty = _conv_case(2, activation="")
    assert getattr(Classifier.for_backends([build]).affecting(name, empty), "id", None) == \
        f"{name}-conv-empty-activation"
    np.testing.assert_array_equal(build.run(empty)[0], build.run(_conv_case(2))[0])
    with pytest.raises(Rejected, match="Invalid activation type"):
        build.run(_conv_case(2, activation="relu"))
