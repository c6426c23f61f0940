#!/usr/bin/env bash
# The measurements of this folder on the GPU machine, after scripts/gpu_session.sh's set-up, as its `custom` mode:
# GPU_COMMAND="bash docs/results/2026-12-03-h200-reduce-scatter/measure.sh OUT [compare|bench3|all|again]".
# compare: the kernel with the reduce-scatter (`auto`) against the kernel before it (build/old-kernel.wgsl, carried:
# git show 5fa4611:kernels/linear_attention.wgsl) and against itself with the readout gathered whole
# (gather_readout_variant.py): their bits, the kernel's tests on the GPU, then the three in the same rounds at decode
# and draft lengths and at prefill. bench3: three consecutive full `lafuzz bench` runs. all: compare, then bench3,
# on one machine. again: the three side by side once more (another lease), then on Dawn (Tint compiles the WGSL;
# fp32 only, Dawn has no shader-f16 there). Every step's output is packed into OUT/results.tgz as soon as it ends,
# so a run cut short keeps what it did.
set -uo pipefail
out=${1:?output directory}; what=${2:-all}; work=/tmp/reduce-scatter
mkdir -p "$work" "$out" build
here=docs/results/2026-12-03-h200-reduce-scatter
pack() { tar -czf "$out/results.tgz" -C "$work" . ; }
step() {  # step NAME SECONDS COMMAND...: one measurement, its output in $work/NAME.txt
  local name=$1 limit=$2; shift 2
  echo "== $name ($(date -u +%T))"; local t0=$SECONDS
  timeout "$limit" "$@" > "$work/$name.txt" 2>&1; local rc=$?
  grep -E "gates PASS|bitwise equal|not run|passed|failed" "$work/$name.txt" | head -20
  echo "   $name: exit $rc after $((SECONDS - t0)) s"; pack
}
python3 $here/gather_readout_variant.py build/gather-readout.wgsl
templates=(--template build/old-kernel.wgsl --template build/gather-readout.wgsl)
draft=(--windows 0,4,8 --seq-lens 1,4,8)
prefill=(--shapes "1,32,128,128;4,32,128,128" --seq-lens 64 --windows 0)
if [ "$what" = again ]; then
  step compare2 200 python3 -m fuzz.bench --dtypes fp16,fp32 --paths auto "${templates[@]}" --no-ort \
    --no-decoder-view "${draft[@]}" --out "$work/compare2"
  step compare2-prefill 90 python3 -m fuzz.bench --dtypes fp16,fp32 --paths auto "${templates[@]}" --no-ort \
    --no-decoder-view "${prefill[@]}" --out "$work/compare2-prefill"
  step dawn 150 python3 -m fuzz.bench --implementation dawn --dtypes fp32 --paths auto "${templates[@]}" --no-ort \
    --no-decoder-view "${draft[@]}" --out "$work/dawn"
  step dawn-prefill 90 python3 -m fuzz.bench --implementation dawn --dtypes fp32 --paths auto "${templates[@]}" \
    --no-ort --no-decoder-view "${prefill[@]}" --out "$work/dawn-prefill"
fi
if [ "$what" = compare ] || [ "$what" = all ]; then
  step same-bits 90 python3 docs/results/2026-12-03-h200-store-floor/same_bits.py build/old-kernel.wgsl \
    build/gather-readout.wgsl
  step tests 150 python3 -m pytest -q -n 8 -p no:cacheprovider tests/kernels/test_kernel_parity.py \
    tests/kernels/test_shader.py tests/kernels/test_kernel_onnx_cases.py tests/kernels/test_kernel_ort_unit_cases.py \
    --tb=short -rfE
  step mutant 90 python3 -m pytest -q -p no:cacheprovider tests/engine/test_kernel_mutants.py -k short-reduction \
    --tb=short -rfEs
  step compare 200 python3 -m fuzz.bench --dtypes fp16,fp32 --paths auto "${templates[@]}" --no-ort \
    --no-decoder-view "${draft[@]}" --out "$work/compare"
  step compare-prefill 90 python3 -m fuzz.bench --dtypes fp16,fp32 --paths auto "${templates[@]}" --no-ort \
    --no-decoder-view "${prefill[@]}" --out "$work/compare-prefill"
fi
if [ "$what" = bench3 ] || [ "$what" = all ]; then
  for run in 1 2 3; do step "bench$run" 150 python3 -m fuzz.bench --out "$work/bench$run"; done
fi
echo "== done ($(date -u +%T))"
