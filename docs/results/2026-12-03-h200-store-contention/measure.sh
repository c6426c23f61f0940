#!/usr/bin/env bash
# The measurements of this folder on the GPU machine, after scripts/gpu_session.sh's set-up, as its `custom` mode:
# GPU_COMMAND="bash docs/results/2026-12-03-h200-store-contention/measure.sh OUT [probes|geometry|bench3]".
# probes: the contention probes, then the kernel's window at T = 8 with each reduction (subgroup shuffles, workgroup
# memory), in the same rounds. geometry: the probes with 30 repetitions, then the kernel with 8, 16 and 32 row groups
# (`auto@N`: with 16 or fewer a warp's direct stores cover whole row segments, no stage) side by side, decode and
# draft lengths, then prefill. deferred: each staged checkpoint copied out during the next token
# (deferred_variant.py) against the kernel: bits, decode and draft lengths, prefill. paired: the kernel with paired fp16 checkpoint stores against the kernel before them
# (build/old-kernel.wgsl, carried: git show c58aeca:kernels/linear_attention.wgsl): their bits, the kernel's tests
# on the GPU, then both in the same rounds at decode and draft lengths and at prefill. bench3: three consecutive full `lafuzz bench` runs; bench N: run N of them alone (the
# three as three calls on one warm machine, where one call cannot hold all three). Every step's output is packed
# into OUT/results.tgz as soon as it ends, so a run cut short keeps what it did.
set -uo pipefail
out=${1:?output directory}; what=${2:-probes}; work=/tmp/store-contention
mkdir -p "$work" "$out"
here=docs/results/2026-12-03-h200-store-contention
pack() { tar -czf "$out/results.tgz" -C "$work" . ; }
step() {  # step NAME SECONDS COMMAND...: one measurement, its output in $work/NAME.txt
  local name=$1 limit=$2; shift 2
  echo "== $name ($(date -u +%T))"; local t0=$SECONDS
  timeout "$limit" "$@" > "$work/$name.txt" 2>&1; local rc=$?
  grep -E "gates PASS|^(work|none|fma|shuffle|token) |^== |bitwise equal|passed|failed" "$work/$name.txt" | head -40
  echo "   $name: exit $rc after $((SECONDS - t0)) s"; pack
}
if [ "$what" = paired ]; then
  old=(--template build/old-kernel.wgsl)
  step same-bits 60 python3 docs/results/2026-12-03-h200-store-floor/same_bits.py build/old-kernel.wgsl
  step tests 150 python3 -m pytest -q -n 8 -p no:cacheprovider tests/kernels/test_kernel_parity.py \
    tests/kernels/test_kernel_onnx_cases.py tests/kernels/test_kernel_ort_unit_cases.py --tb=short -rfE
  step paired 200 python3 -m fuzz.bench --dtypes fp16,fp32 --paths auto "${old[@]}" --no-ort --no-decoder-view \
    --windows 0,4,8 --seq-lens 1,4,8 --out "$work/paired"
  step paired-prefill 90 python3 -m fuzz.bench --dtypes fp16,fp32 --paths auto "${old[@]}" --no-ort \
    --no-decoder-view --shapes "1,32,128,128;4,32,128,128" --seq-lens 64 --windows 0 --out "$work/paired-prefill"
  echo "== done ($(date -u +%T))"; exit 0
fi
if [ "$what" = deferred ]; then
  mkdir -p build && python3 $here/deferred_variant.py build/deferred.wgsl
  step deferred-same-bits 60 python3 docs/results/2026-12-03-h200-store-floor/same_bits.py build/deferred.wgsl
  step deferred 150 python3 -m fuzz.bench --dtypes fp16,fp32 --paths auto --template build/deferred.wgsl --no-ort \
    --no-decoder-view --windows 0,4,8 --seq-lens 1,4,8 --out "$work/deferred"
  step deferred-prefill 60 python3 -m fuzz.bench --dtypes fp16,fp32 --paths auto --template build/deferred.wgsl \
    --no-ort --no-decoder-view --shapes "1,32,128,128;4,32,128,128" --seq-lens 64 --windows 0 --out "$work/deferred-prefill"
  echo "== done ($(date -u +%T))"; exit 0
fi
if [ "$what" = bench ]; then
  step "bench${3:?run number}" 560 python3 -m fuzz.bench --out "$work/bench$3"; exit 0
fi
if [ "$what" = bench3 ]; then
  for run in 1 2 3; do step "bench$run" 175 python3 -m fuzz.bench --out "$work/bench$run"; done
  exit 0
fi
if [ "$what" = geometry ]; then
  step probes30 150 python3 $here/probe_contention.py --repetitions 30
  step geometry 200 python3 -m fuzz.bench --dtypes fp16,fp32 --paths auto,auto@16,auto@8 --no-ort --no-decoder-view \
    --windows 0,4,8 --seq-lens 1,4,8 --out "$work/geometry"
  step geometry-prefill 120 python3 -m fuzz.bench --dtypes fp16,fp32 --paths auto,auto@16,auto@8 --no-ort \
    --no-decoder-view --shapes "1,32,128,128;4,32,128,128" --seq-lens 64 --windows 0 --out "$work/geometry-prefill"
  echo "== done ($(date -u +%T))"; exit 0
fi
step probes 120 python3 $here/probe_contention.py
step reductions 120 python3 -m fuzz.bench --dtypes fp16,fp32 --paths auto,workgroup --no-ort --no-decoder-view \
  --windows 0,8 --seq-lens 1,8 --out "$work/reductions"
echo "== done ($(date -u +%T))"
