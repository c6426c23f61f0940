#!/usr/bin/env bash
# The measurements of this folder on the GPU machine, after scripts/gpu_session.sh's set-up, as its `custom` mode:
# GPU_COMMAND="bash docs/results/2026-12-03-h200-store-warp/measure.sh OUT [variants]".
# variants: the four store-warp variants of store_warp_variant.py (single or double stage; the store warp computing
# the token like a tail invocation, or idle): their bits against the kernel, then the four beside the kernel (`auto`)
# in the same rounds, at decode and draft lengths and at prefill.
# warps: the idle variants with COLS store warps (single and double stage) and with 2, the same way.
# probe: probe_warps.py, the same stores from 1, 2, 4 or 8 warps a workgroup.
# Every step's output is packed into OUT/results.tgz as soon as it ends, so a run cut short keeps what it did.
set -uo pipefail
out=${1:?output directory}; what=${2:-variants}; work=/tmp/store-warp
mkdir -p "$work" "$out" build
here=docs/results/2026-12-03-h200-store-warp
pack() { tar -czf "$out/results.tgz" -C "$work" . ; }
step() {  # step NAME SECONDS COMMAND...: one measurement, its output in $work/NAME.txt
  local name=$1 limit=$2; shift 2
  echo "== $name ($(date -u +%T))"; local t0=$SECONDS
  timeout "$limit" "$@" > "$work/$name.txt" 2>&1; local rc=$?
  grep -E "gates PASS|bitwise equal|not run|passed|failed|Error" "$work/$name.txt" | head -20
  echo "   $name: exit $rc after $((SECONDS - t0)) s"; pack
}
draft=(--windows 0,4,8 --seq-lens 1,4,8)
prefill=(--shapes "1,32,128,128;4,32,128,128" --seq-lens 64 --windows 0)
if [ "$what" = variants ]; then
  python3 $here/store_warp_variant.py build/sw.wgsl
  python3 $here/store_warp_variant.py build/swdouble.wgsl --double
  python3 $here/store_warp_variant.py build/swidle.wgsl --idle
  python3 $here/store_warp_variant.py build/swdoubleidle.wgsl --double --idle
  variants=(build/sw.wgsl build/swdouble.wgsl build/swidle.wgsl build/swdoubleidle.wgsl)
  templates=(); for v in "${variants[@]}"; do templates+=(--template "$v"); done
  step same-bits 120 python3 docs/results/2026-12-03-h200-store-floor/same_bits.py "${variants[@]}"
  step variants 300 python3 -m fuzz.bench --dtypes fp16,fp32 --paths auto "${templates[@]}" --no-ort \
    --no-decoder-view "${draft[@]}" --out "$work/variants"
  step variants-prefill 120 python3 -m fuzz.bench --dtypes fp16,fp32 --paths auto "${templates[@]}" --no-ort \
    --no-decoder-view "${prefill[@]}" --out "$work/variants-prefill"
fi
if [ "$what" = warps ]; then
  python3 $here/store_warp_variant.py build/swidle4.wgsl --idle --warps COLS
  python3 $here/store_warp_variant.py build/swdoubleidle4.wgsl --double --idle --warps COLS
  python3 $here/store_warp_variant.py build/swidle2.wgsl --idle --warps 2u
  variants=(build/swidle4.wgsl build/swdoubleidle4.wgsl build/swidle2.wgsl)
  templates=(); for v in "${variants[@]}"; do templates+=(--template "$v"); done
  step warps-same-bits 120 python3 docs/results/2026-12-03-h200-store-floor/same_bits.py "${variants[@]}"
  step warps 300 python3 -m fuzz.bench --dtypes fp16,fp32 --paths auto "${templates[@]}" --no-ort \
    --no-decoder-view "${draft[@]}" --out "$work/warps"
  step warps-prefill 120 python3 -m fuzz.bench --dtypes fp16,fp32 --paths auto "${templates[@]}" --no-ort \
    --no-decoder-view "${prefill[@]}" --out "$work/warps-prefill"
fi
if [ "$what" = probe ]; then
  step probe-warps 200 python3 $here/probe_warps.py
  cat "$work/probe-warps.txt"
fi
echo "== done ($(date -u +%T))"
