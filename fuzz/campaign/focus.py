"""What a campaign leans towards: the backends, ops and properties a change serves.

A developer runs a campaign right after editing a kernel, an oracle or a backend; the part that changed should
get most of the budget, not a fourteenth of it. ``Focus`` names that part (``--focus``, or worked out from the
changed files: ``focus_of_files``), and ``SERVES`` is the table from each implementation file to what it
serves. Every file under ``IMPLEMENTATION_ROOTS`` must match an entry (a test enforces it), so that a new file
cannot go unnoticed by ``--since`` and the hash memory (``fuzz.campaign.memory``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from pathlib import Path

from fuzz.backends.registry import REGISTRY, WORKER_BUILDS
from fuzz.engine.properties import resolve_property
from fuzz.model.ops import ALL_OPS, CAUSAL_CONV, GATED_DELTA_NET, GATED_DELTA_NET_STATE_REPLAY, LINEAR_ATTENTION

LA, CONV = LINEAR_ATTENTION.name, CAUSAL_CONV.name
GDN, REPLAY = GATED_DELTA_NET.name, GATED_DELTA_NET_STATE_REPLAY.name

SWIFTSHADER = ("wgpu-swiftshader", "wgpu-conv-swiftshader")
"""The kernels on SwiftShader's Vulkan, in a worker process each (``fuzz.backends.wgpu_swiftshader``)."""
BROWSER = ("wgpu-browser", "wgpu-conv-browser")
"""The kernels in headless Chromium's WebGPU, in a worker process each (``fuzz.backends.wgpu_browser``)."""
LA_KERNELS = ("wgpu", "wgpu-dawn", "wgpu-chunked", "wgpu-wide", "wgpu-specialised", SWIFTSHADER[0], BROWSER[0])
CONV_KERNELS = ("wgpu-conv", "wgpu-conv-dawn", SWIFTSHADER[1], BROWSER[1])
GDN_KERNELS = ("wgpu-gdn", "wgpu-gdn-dawn")
KERNELS = (*LA_KERNELS, *CONV_KERNELS)
ORT_IN_PROCESS = ("ort-cpu", "ort-webgpu", "ort-cuda")
ORT_REMOTE = WORKER_BUILDS
ORT = (*ORT_IN_PROCESS, *ORT_REMOTE)
DEVICE_BLOCK = ("wgpu", "wgpu-dawn", "wgpu-conv", "wgpu-conv-dawn")
"""The kernels the hybrid block pairs on one device (``fuzz.backends.device_block``)."""

WINDOW_PROPERTIES = ("output-parity", "prefix-oracle", "poison-invariance", "leading-zeros", "select-resume",
                     "aliasing")
"""The properties of the windowed state's slots (what the resident kernels bind, copy and select)."""

ORACLE = "oracle"
"""Beside every focused backend: the float64 answer the others are compared with."""

PARTNERS: Mapping[str, tuple[str, ...]] = {"wgpu-conv": ("wgpu",), "wgpu-conv-dawn": ("wgpu-dawn",)}
"""Backends a focused backend needs beside it: the hybrid block pairs a conv kernel with LinearAttention's
kernel on the same device (``fuzz.engine.hybrid_block.block_pairs``)."""

IMPLEMENTATION_ROOTS = ("kernels", "oracles", "fuzz/backends")
"""Where the implementation under test lives (relative to the checkout): the files ``SERVES`` must map and
the hash memory records. ORT's JavaScript runner is among the backends; a checkout's top-level ``ortjs/`` only
holds what ``lafuzz setup`` installs there (the npm packages and copies of their lock), so it is no one's source."""

LEFT_OUT = ("__pycache__", "node_modules")
"""Folders under the roots that are no one's source: caches, and ORT Web's installed packages."""


@dataclass(frozen=True)
class Serves:
    """What one implementation file serves. Empty ``backends``: every backend that runs ``ops``; empty ``ops``:
    the ops of ``backends``; ``everything``: the whole suite (no focus); all empty: nothing a campaign runs.
    ``long``: what it does changes along the sequence (chunk after chunk, a long prompt's positions), so half
    the focused units take their tier's longest calls."""

    backends: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()
    properties: tuple[str, ...] = ()
    everything: bool = False
    long: bool = False

    def describe(self) -> str:
        if self.everything:
            return "every backend and op"
        return ", ".join([*self.backends, *self.ops, *self.properties]) or "nothing a campaign runs"


EVERYTHING = Serves(everything=True)

SERVES: tuple[tuple[tuple[str, ...], Serves], ...] = (
    (("kernels/chunked.wgsl",), Serves(("wgpu-chunked",), (LA,), long=True)),
    (("kernels/linear_attention.wgsl", "kernels/linear_attention.py", "kernels/shader.py", "kernels/geometry.py"),
     Serves(LA_KERNELS, (LA,))),
    (("kernels/causal_conv.*",), Serves(CONV_KERNELS, (CONV,), long=True)),
    (("kernels/qkv_split.*",), Serves(DEVICE_BLOCK, (CONV,), ("hybrid-block",))),
    (("kernels/resident.py",), Serves(KERNELS, (LA, CONV), ("device-chain", "hybrid-block", *WINDOW_PROPERTIES))),
    (("kernels/device.py", "kernels/options.py", "kernels/__init__.py"), Serves(KERNELS, (LA, CONV))),
    (("kernels/timing.py",), Serves()),  # the benchmark's GPU timestamps
    (("oracles/gated_delta_net/replay.py", "oracles/gated_delta_net/capsule.py"), Serves((), (GDN, REPLAY))),
    (("oracles/gated_delta_net/*",), Serves((), (GDN,))),
    (("kernels/gated_delta_net*", "kernels/passes.py"), Serves(GDN_KERNELS, (GDN,))),
    (("kernels/state_replay*",), Serves(GDN_KERNELS, (GDN, REPLAY))),
    (("fuzz/backends/wgpu_gdn.py",), Serves(GDN_KERNELS, (GDN, REPLAY))),
    (("oracles/recurrence.py", "oracles/prefix.py", "oracles/validation.py"), Serves((), (LA,))),
    (("oracles/causal_conv/*",), Serves((), (CONV,))),
    (("oracles/block.py",), Serves((), (CONV,), ("hybrid-block",))),
    (("oracles/rollback.py",), Serves((), (LA, CONV), ("select-resume", "device-chain", "hybrid-block"))),
    (("oracles/__init__.py",), EVERYTHING),
    (("fuzz/backends/wgpu_kernel.py",), Serves(LA_KERNELS, (LA,))),
    (("fuzz/backends/wgpu_conv.py",), Serves(CONV_KERNELS, (CONV,))),
    (("fuzz/backends/kernel_backend.py",), Serves(KERNELS, (LA, CONV))),
    (("fuzz/backends/device_chain.py",), Serves(KERNELS, (LA, CONV), ("device-chain", "select-resume"))),
    (("fuzz/backends/device_block.py",), Serves(DEVICE_BLOCK, (CONV,), ("hybrid-block",))),
    (("fuzz/backends/device_choice.py",), Serves((*KERNELS, "ort-webgpu", "ort-cuda"))),
    (("fuzz/backends/ort_cpu.py",), Serves(("ort-cpu",))),
    (("fuzz/backends/ort_cuda.py",), Serves(("ort-cuda",))),
    (("fuzz/backends/ort_webgpu.py",), Serves(("ort-webgpu",))),
    (("fuzz/backends/ort_webgpu_builtin.py", "fuzz/backends/ort-webgpu-*.txt"), Serves(("ort-webgpu-builtin",))),
    (("fuzz/backends/ort_node.py",), Serves(("ort-node", "ort-web", *BROWSER))),
    (("fuzz/backends/ort_web.py", "fuzz/backends/chromium.py"), Serves(("ort-web", *BROWSER))),
    (("fuzz/backends/ortjs/page/*",), Serves(("ort-web",))),
    (("fuzz/backends/ort_remote.py", "fuzz/backends/ort_worker.py", "fuzz/backends/deferred.py"),
     Serves((*ORT_REMOTE, *BROWSER))),
    (("fuzz/backends/ort_session.py", "fuzz/backends/onnx_model.py"), Serves(ORT)),
    (("fuzz/backends/isolation.py",), Serves((*ORT, *SWIFTSHADER, *BROWSER))),
    (("fuzz/backends/swiftshader.py", "fuzz/backends/wgpu_swiftshader.py"), Serves(SWIFTSHADER)),
    (("fuzz/backends/wgpu_browser.py", "fuzz/backends/webgpu_plan.py", "fuzz/backends/ortjs/kernel-page/*"),
     Serves(BROWSER)),
    (("fuzz/backends/ortjs/browser-worker.mjs", "fuzz/backends/ortjs/base64.mjs"), Serves(("ort-web", *BROWSER))),
    (("fuzz/backends/onnx_reference.py",), Serves(("onnx-reference",))),
    (("fuzz/backends/ortjs/*",), Serves(("ort-node", "ort-web"))),
    (("fuzz/backends/oracle.py", "fuzz/backends/base.py", "fuzz/backends/registry.py", "fuzz/backends/__init__.py",
      "fuzz/backends/remembered.py"), EVERYTHING),
)
"""Implementation file patterns (``fnmatch``, relative to the checkout, the first match wins) -> what they serve."""


def served_by(path: str) -> Serves | None:
    """What the implementation file ``path`` serves; None if ``SERVES`` does not map it."""
    return next((serves for patterns, serves in SERVES if any(fnmatchcase(path, p) for p in patterns)), None)


def implementation_files(root: Path) -> list[str]:
    """Every file under ``IMPLEMENTATION_ROOTS`` of the checkout at ``root`` (relative, sorted; not ``LEFT_OUT``)."""
    found = []
    for top in IMPLEMENTATION_ROOTS:
        for path in (root / top).rglob("*"):
            relative = path.relative_to(root)
            if path.is_file() and not set(relative.parts) & set(LEFT_OUT):
                found.append(relative.as_posix())
    return sorted(found)


def is_implementation(path: str) -> bool:
    """Whether ``path`` (relative) lies under ``IMPLEMENTATION_ROOTS``: what a campaign tests, not what drives it."""
    return any(path == top or path.startswith(top + "/") for top in IMPLEMENTATION_ROOTS)


@dataclass(frozen=True)
class Focus:
    """The backends, ops and properties most units go to (``fuzz.campaign.steering``), and why.

    Empty ``backends``: the ops' units run the backends a swarm unit draws; empty ``properties``: every property
    that has cases of the ops. ``reason`` is the line the campaign prints and its summary records.
    """

    backends: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()
    properties: tuple[str, ...] = ()
    reason: str = ""
    changed: tuple[str, ...] = field(default=())
    """The changed files it was worked out from (empty for ``--focus``)."""
    long: bool = False
    """A changed file serves something that changes along the sequence (``Serves.long``)."""

    def describe(self) -> str:
        return ", ".join([*self.backends, *self.ops, *self.properties])

    def runs(self) -> frozenset[str] | None:
        """The backends a focused unit runs (the focused ones, their ``PARTNERS`` and the oracle); None to let the
        swarm draw them (an op or property focus)."""
        if not self.backends:
            return None
        return frozenset({ORACLE, *self.backends, *(p for b in self.backends for p in PARTNERS.get(b, ()))})


class NoFocus(ValueError):
    """Why the changes give no focus (an unmapped file, a file every backend depends on, nothing changed)."""


def focus_of_files(paths: Iterable[str]) -> Focus:
    """The focus of a change to ``paths`` (relative to the checkout); files outside ``IMPLEMENTATION_ROOTS`` (tests,
    docs, the harness) are passed over. ``NoFocus`` when an implementation file is unmapped or serves everything,
    or when none serves anything a campaign runs."""
    changed = sorted(p for p in set(paths) if is_implementation(p))
    backends: list[str] = []
    ops: list[str] = []
    properties: list[str] = []
    long = False
    for path in changed:
        serves = served_by(path)
        if serves is None:
            raise NoFocus(f"{path} changed and is not in the table of what each file serves (fuzz/campaign/focus.py)")
        if serves.everything:
            raise NoFocus(f"{path} changed, which serves every backend and op")
        backends += [b for b in serves.backends if b not in backends]
        ops += [o for o in serves.ops if o not in ops]
        properties += [p for p in serves.properties if p not in properties]
        long = long or serves.long
    if not backends and not ops:
        raise NoFocus("no implementation file changed" if not changed else
                      f"{', '.join(changed)} changed, which serves nothing a campaign runs")
    return Focus(tuple(backends), tuple(ops), tuple(properties), changed=tuple(changed), long=long)


def parse_focus(text: str, properties: Sequence[str]) -> Focus:
    """``--focus NAME[,NAME...]``: backend (registry), op and property names, in any mix; ``ValueError`` naming the
    ones that are none of these. It is ``long`` where a file the table says changes along the sequence serves one
    of the backends."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in REGISTRY and n not in ALL_OPS and n not in properties]
    if unknown or not names:
        raise ValueError(f"--focus: unknown name(s) {', '.join(unknown) or repr(text)}; give backends "
                         f"({', '.join(REGISTRY)}), ops ({', '.join(ALL_OPS)}) or properties "
                         f"({', '.join(properties)}), "
                         "comma-separated, or none")
    backends = tuple(n for n in names if n in REGISTRY)
    long = any(serves.long and set(serves.backends) & set(backends) for _, serves in SERVES)
    return Focus(backends, tuple(n for n in names if n in ALL_OPS),
                 tuple(n for n in names if n in properties and n not in REGISTRY), long=long)


def within(focus: Focus, described: Mapping[str, Mapping[str, object]], ops: Sequence[str],
           properties: Sequence[str]) -> Focus:
    """``focus`` kept to what the campaign runs: its backends among ``described`` (name -> capabilities), its ops
    (or else the ops its backends run) among ``ops``, its properties among ``properties`` (none left: every one).
    ``NoFocus`` when no backend or op of it is in the campaign."""
    backends = tuple(b for b in focus.backends if b in described)
    if focus.backends and not backends:
        raise NoFocus(f"{', '.join(focus.backends)} not among this campaign's backends")
    runs = {op for b in backends for op in _ops_of(described[b])}
    chosen = tuple(op for op in (focus.ops or ops) if op in ops and (not backends or op in runs))
    if not chosen:
        raise NoFocus(f"{focus.describe()}: none of this campaign's ops ({', '.join(ops)})")
    kept = tuple(p for p in focus.properties if p in properties)
    if not any(resolve_property(p).applies_to(op) for p in kept or properties for op in chosen):
        raise NoFocus(f"{focus.describe()}: none of this campaign's properties has cases of {', '.join(chosen)}")
    return replace(focus, backends=backends, ops=chosen, properties=kept)


def _ops_of(capabilities: Mapping[str, object]) -> tuple[str, ...]:
    ops = capabilities.get("ops", ())
    return tuple(str(op) for op in ops) if isinstance(ops, (list, tuple)) else ()
