#!/usr/bin/env bash
# The measurements of this folder, in one GPU-machine run (after scripts/gpu_session.sh's set-up, as its `custom`
# mode: GPU_COMMAND="bash docs/results/2026-12-03-h200-store-floor/measure.sh OUT [all|wide]"). Writes *.txt and
# the benchmark folders, and after every step packs them into OUT/results.tgz (a run cut short keeps what it did).
# all: the run of this folder's README; needs build/store-ring{8,4,2}.wgsl (ring_variant.py; path auto is the
# kernel as it is). wide: the 16-byte fp16 store form (wide_variant.py, written here) beside the kernel, about 60 s.
set -uo pipefail
out=${1:?output directory}; what=${2:-all}; work=/tmp/store-floor
mkdir -p "$work" "$out"
here=docs/results/2026-12-03-h200-store-floor
pack() { tar -czf "$out/results.tgz" -C "$work" . ; }
step() {  # step NAME SECONDS COMMAND...: one measurement, its output in $work/NAME.txt
  local name=$1 limit=$2; shift 2
  echo "== $name ($(date -u +%T))"; local t0=$SECONDS
  timeout "$limit" "$@" > "$work/$name.txt" 2>&1; local rc=$?
  grep -E "gates PASS|^(kernel|slot|plain|build)|^== " "$work/$name.txt" | head -60
  echo "   $name: exit $rc after $((SECONDS - t0)) s"; pack
}
if [ "$what" = wide ]; then
  mkdir -p build && python3 $here/wide_variant.py build/store-wide16.wgsl
  step wide-same-bits 60 python3 $here/same_bits.py build/store-wide16.wgsl
  step wide-fp16 100 python3 -m fuzz.bench --dtypes fp16 --paths auto --template build/store-wide16.wgsl --no-ort \
    --no-decoder-view --windows 0,4,8 --seq-lens 1,4,8 --out "$work/wide-fp16"
  step wide-prefill 60 python3 -m fuzz.bench --dtypes fp16 --paths auto --template build/store-wide16.wgsl --no-ort \
    --no-decoder-view --shapes "1,32,128,128;4,32,128,128" --seq-lens 64 --windows 0 --out "$work/wide-prefill"
  exit 0
fi
rings=(--template build/store-ring8.wgsl --template build/store-ring4.wgsl --template build/store-ring2.wgsl)
# 1. fp16: the ring-staged stores beside the kernel as it is, decode and draft lengths (all gates but the decoder's)
step fp16-forms 100 python3 -m fuzz.bench --dtypes fp16 --paths auto "${rings[@]}" --no-ort --no-decoder-view \
  --windows 0,4,8 --seq-lens 1,4,8 --out "$work/fp16-forms"
# 2. prefill, T = 64 at B = 1 and 4, same forms (fp16 and fp32 in turn; fp32 without the 8-tile ring, too large)
step prefill-fp16 60 python3 -m fuzz.bench --dtypes fp16 --paths auto "${rings[@]}" --no-ort --no-decoder-view \
  --shapes "1,32,128,128;4,32,128,128" --seq-lens 64 --windows 0 --out "$work/prefill-fp16"
# 3. the variants keep the kernel's bits on this GPU (the subgroup reduction lavapipe does not take)
step same-bits 45 python3 $here/same_bits.py build/store-ring8.wgsl build/store-ring2.wgsl
# 4. what the stores wait on: store-only kernels, naga against Tint, the kernel on both
step probes 90 python3 $here/probe_stores.py --dawn
# 5. the full benchmark with the new gates, the kernel as it is
step bench 150 python3 -m fuzz.bench --out "$work/bench"
# 6. fp32 with the rings that fit its workgroup memory
step fp32-forms 90 python3 -m fuzz.bench --dtypes fp32 --paths auto --template build/store-ring4.wgsl \
  --template build/store-ring2.wgsl --no-ort --no-decoder-view --windows 0,4,8 --seq-lens 1,4,8 --out "$work/fp32-forms"
step prefill-fp32 45 python3 -m fuzz.bench --dtypes fp32 --paths auto --template build/store-ring4.wgsl \
  --template build/store-ring2.wgsl --no-ort --no-decoder-view --shapes "1,32,128,128;4,32,128,128" \
  --seq-lens 64 --windows 0 --out "$work/prefill-fp32"
echo "== done ($(date -u +%T))"
