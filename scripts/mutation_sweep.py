"""Single-point mutation sweep of one WGSL kernel against the test suite: where can a planted bug hide?

For a kernel file (``kernels/*.wgsl``) the sweep lists every single-point mutant its operators allow on the
file's code lines (comments skipped): ``+``/``-``, ``*``/``/``, ``%``/``/``, comparisons one step looser or
tighter, ``==``/``!=``, ``&&``/``||``, an integer literal one off, a float literal zeroed, ``min``/``max``,
the first two arguments of ``select`` swapped, a barrier or an assignment deleted, a ``+``/``-`` contribution
dropped (``x = x + y`` -> ``x = x``), a variable replaced by a neighbour (``h``/``kh``, ``t``/``j``, ``DK``/``DV``,
``lid.x``/``lid.y``...). Mutants of a loop's step or start, which hang a dispatch rather than answer anything,
are not generated. It samples ``--count`` of them with ``--seed``, spread over the lines (one per line, lines in
random order, then a second round...), and for each one:

1. writes it into the kernel file of this checkout;
2. renders every variant of the template the project compiles (sections, dtypes, prefills) and creates their
   shader modules on wgpu-native: a mutant naga rejects is ``no-compile`` (the suite would fail on it);
3. runs the fast subset of tests for that kernel (``pytest -n 0 -x``); a failure is ``killed-fast``;
4. runs the broader subset on a survivor; a failure is ``killed-broad``, a pass ``survived``;
5. restores the file (also on errors and Ctrl-C).

Run from the repository root, niced (each mutant recompiles the pipelines the tests build)::

    nice -n 19 .venv/bin/python scripts/mutation_sweep.py kernels/chunked.wgsl --count 30 --seed 1 --log sweep.log
    .venv/bin/python scripts/mutation_sweep.py kernels/chunked.wgsl --count 30 --list   # the sample, nothing run
    nice -n 19 .venv/bin/python scripts/mutation_sweep.py kernels/chunked.wgsl --only L153:swap:0   # one mutant

Each line of output is ``ID VERDICT SECONDS`` and the mutated line; a killed mutant also names the first failed
test. ``--fast`` and ``--broad`` replace a kernel's default test subsets.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script from the checkout: the package beside it

from fuzz.bench.hunt.mutants import Mutant, all_mutants, sample  # noqa: E402 - after the path is set

PYTEST = (sys.executable, "-m", "pytest", "-n", "0", "-x", "-q", "-p", "no:cacheprovider")

LA_FAST = ("tests/kernels/test_kernel_parity.py", "tests/kernels/test_kernel_chunked.py",
           "tests/kernels/test_kernel_zeros.py")
LA_BROAD = ("tests/kernels/test_kernel_device.py", "tests/kernels/test_kernel_onnx_cases.py",
            "tests/kernels/test_kernel_ort_unit_cases.py", "tests/backends/test_wgpu_backends.py",
            "tests/engine/test_properties.py", "tests/engine/test_device_chain.py", "tests/engine/test_hybrid_block.py",
            "tests/corpus/test_replay.py", "tests/corpus/test_cuda_reference.py", "tests/bench/test_block_bench.py")
CONV_FAST = ("tests/kernels/test_conv_kernel.py", "tests/kernels/test_conv_kernel_onnx_cases.py")
CONV_BROAD = ("tests/kernels/test_kernel_ort_unit_cases.py", "tests/backends/test_conv_backends.py",
              "tests/ops/causal_conv/test_strategies.py", "tests/engine/test_hybrid_block.py",
              "tests/bench/test_block_bench.py")
QKV_FAST = ("tests/kernels/test_qkv_split.py",)
QKV_BROAD = ("tests/engine/test_hybrid_block.py", "tests/bench/test_block_bench.py")

SUBSETS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "linear_attention.wgsl": (LA_FAST, LA_BROAD),
    "chunked.wgsl": (("tests/kernels/test_kernel_chunked.py", "tests/kernels/test_kernel_zeros.py"),
                     ("tests/kernels/test_kernel_parity.py::test_pipelines_specialised_on_the_shape_agree_with_the_generic_ones",
                      "tests/engine/test_properties.py")),
    "causal_conv.wgsl": (CONV_FAST, CONV_BROAD),
    "qkv_split.wgsl": (QKV_FAST, QKV_BROAD),
}
"""Kernel file -> (fast subset, broader subset) of test files."""

def rendered_variants(kernel: str) -> list[tuple[str, str]]:
    """(label, WGSL) of every variant of ``kernel``'s template the project compiles, read from the file as it is
    now: each section choice, both storage types, both prefills (the token loop's shared blocks go into both)."""
    from kernels import causal_conv, qkv_split, shader
    from kernels.device import get_device

    shader.kernel_file.cache_clear()
    shader.template_source.cache_clear()
    enable = get_device("wgpu").subgroup_enable
    if kernel in ("linear_attention.wgsl", "chunked.wgsl"):
        sizes = (("float32", 8, 5, 16), ("float16", 9, 12, 16), ("float32", 100, 12, 32), ("float16", 100, 16, 32))
        specs = [shader.KernelSpec.for_sizes(*size) for size in sizes]
        specs += [replace(s, reduction="subgroup") for s in specs]
        specs += [replace(s, chunked=True) for s in specs]
        if kernel == "chunked.wgsl":
            specs = [s for s in specs if s.chunked]
        specs += [s.specialised(shader.CallParams(2, 5, 1.0, 0, 3, s.rows_per_thread, 12, 4, 2, 1, 1, 1, 1))
                  for s in specs[:1]]
        return [(str(s), shader.render(s, subgroup_enable=enable)) for s in specs]
    if kernel == "causal_conv.wgsl":
        return [(dtype, causal_conv.render_conv(causal_conv.ConvSpec(dtype))) for dtype in ("float32", "float16")]
    if kernel == "qkv_split.wgsl":
        split = shader.kernel_file(qkv_split.TEMPLATE)
        return [(store, shader.fill_template(split, {"ENABLE": "enable f16;" if store == "f16" else "",
                                                     "STORE": store, "WG": "64"})) for store in ("f32", "f16")]
    raise ValueError(f"no renderer for {kernel}")


def compile_error(kernel: str) -> str | None:
    """The first naga error of the kernel file's variants as they are now, or None where all compile."""
    from kernels.device import get_device

    gpu = get_device("wgpu").device
    for label, code in rendered_variants(kernel):
        try:
            gpu.create_shader_module(label="mutant", code=code)
        except Exception as err:  # wgpu-py raises its validation errors as several types
            message = " ".join(str(err).split()) or type(err).__name__
            return f"{label.split('(')[0]} {label.split(', ')[-1] if '(' in label else label}: {message[:200]}"
    return None


@dataclass
class Outcome:
    verdict: str
    seconds: float
    detail: str = ""


def run_tests(files: tuple[str, ...], timeout: float) -> tuple[bool, str]:
    """Run pytest on ``files``: (passed, the first failed test or the reason)."""
    try:
        done = subprocess.run([*PYTEST, *files], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, f"timed out after {timeout:.0f} s"
    if done.returncode == 0:
        return True, ""
    failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", done.stdout, re.MULTILINE)
    return False, failed[0] if failed else done.stdout.strip().splitlines()[-1]


def judge(path: Path, mutant: Mutant, fast: tuple[str, ...], broad: tuple[str, ...], timeout: float) -> Outcome:
    """Apply ``mutant`` to ``path``, run the stages, restore the file."""
    original = path.read_text()
    start = time.monotonic()
    try:
        path.write_text(mutant.apply(original))
        error = compile_error(path.name)
        if error is not None:
            return Outcome("no-compile", time.monotonic() - start, error)
        passed, detail = run_tests(fast, timeout)
        if not passed:
            return Outcome("killed-fast", time.monotonic() - start, detail)
        fast_seconds = time.monotonic() - start
        if not broad:
            return Outcome("survived-fast", fast_seconds)
        passed, detail = run_tests(broad, timeout)
        seconds = time.monotonic() - start
        detail = f"fast {fast_seconds:.0f} s" + (f", {detail}" if detail else "")
        return Outcome("survived" if passed else "killed-broad", seconds, detail)
    finally:
        path.write_text(original)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kernel", type=Path, help="the kernel file, e.g. kernels/chunked.wgsl")
    parser.add_argument("--count", type=int, default=30, help="mutants to sample")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", action="append", default=[], help="run these mutant ids only (repeatable)")
    parser.add_argument("--list", action="store_true", help="print the sample and stop")
    parser.add_argument("--fast", nargs="*", help="the fast test subset (default: the kernel's)")
    parser.add_argument("--broad", nargs="*", help="the broader test subset for survivors (default: the kernel's)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per pytest run")
    parser.add_argument("--log", type=Path, help="also append the output to this file")
    parser.add_argument("--resume", action="store_true", help="skip the mutants --log has a verdict for")
    args = parser.parse_args(argv)

    path = (ROOT / args.kernel).resolve()
    source = path.read_text()
    mutants = all_mutants(source)
    chosen = [m for m in mutants if m.ident in args.only] if args.only else sample(mutants, args.count, args.seed)
    fast_default, broad_default = SUBSETS[path.name]
    fast = tuple(args.fast) if args.fast is not None else fast_default
    broad = tuple(args.broad) if args.broad is not None else broad_default

    def emit(text: str) -> None:
        print(text, flush=True)
        if args.log is not None:
            with args.log.open("a") as log:
                log.write(text + "\n")

    if args.resume and args.log is not None and args.log.exists():
        done = {line.split("\t", 1)[0] for line in args.log.read_text().splitlines() if "\t" in line}
        chosen = [m for m in chosen if m.ident not in done]
    emit(f"# {args.kernel}: {len(mutants)} mutants on {len({m.line for m in mutants})} lines, "
         f"{len(chosen)} chosen (seed {args.seed})")
    if args.list:
        for m in chosen:
            emit(f"{m.ident}\t{m.shown}")
        return 0
    tally: dict[str, int] = {}
    for mutant in chosen:
        outcome = judge(path, mutant, fast, broad, args.timeout)
        tally[outcome.verdict] = tally.get(outcome.verdict, 0) + 1
        emit(f"{mutant.ident}\t{outcome.verdict}\t{outcome.seconds:.1f}s\t{mutant.shown}"
             + (f"\t[{outcome.detail}]" if outcome.detail else ""))
    emit("# " + ", ".join(f"{verdict} {n}" for verdict, n in sorted(tally.items())))
    clean = subprocess.run(["git", "diff", "--quiet", "--", str(path)], cwd=ROOT).returncode == 0
    emit("# kernel file restored" if clean else "# WARNING: the kernel file differs from git's")
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
