#!/usr/bin/env bash
# Runs on the GPU machine (no network, Python 3.12 with numpy, onnx, onnxruntime, hypothesis,
# pytest, matplotlib preinstalled): installs the carried wheels and Vulkan loader, lists the
# backends, runs the correctness tests on the real GPU, then the full benchmark.
# Usage: bash scripts/gpu_session.sh OUTDIR [bench|tests|all|large|campaign|paths|bench3|cuda|block|custom]
#   large: the kernel against ORT's EP where device time dominates the host path (T = 64, B = 1 and 4)
#   paths: the kernel tests, then the kernel paths side by side in one run (auto, workgroup, scalar,
#          and the WGSL template build/old-kernel.wgsl where it was carried, e.g. the kernel before a
#          change: git show REV:kernels/linear_attention.wgsl) at the reference decode configurations
#          and at T = 64 against ORT's EP
#   bench3: three consecutive full benchmarks on one machine session (do the verdicts hold?)
#   block: the CausalConvWithState kernel and the hybrid block on the GPU: their tests (the kernel, the ONNX
#          node cases through it, the q/k/v split, the hybrid-block property at a real layer's sizes, the planted
#          conv-kernel bugs), then the block's bench (python3 -m fuzz.bench.block: the conv window's cost beside
#          LinearAttention's, and the block's rollback against a rerun of the accepted prefix, at Qwen3.5's
#          layer) on wgpu-native and on Dawn
#          (its tests stop after $BLOCK_TEST_LIMIT seconds, default 400)
#   custom: after the set-up, the shell command in $GPU_COMMAND (e.g. a narrow python3 -m fuzz.bench)
#   cuda: the CUDA EP live (onnxruntime-gpu, carried in parts by scripts/gpu_cuda_parts.sh and
#         stashed in $CUDA_PARTS by earlier runs): its tests, the 64 CUDA reference cases replayed
#         against it, and a campaign with every backend; CUDA_STEPS=custom: $GPU_COMMAND with the CUDA EP
#         importable (e.g. python3 scripts/gdn_reference.py $OUT/gdn); CUDA_STEPS=conv: a CausalConvWithState campaign
#         (its window native on the CUDA EP) against the oracle, the ONNX reference, ORT's WebGPU EP and the
#         conv kernel on both WebGPU implementations (with LinearAttention's kernel: its partner in the hybrid block)
set -uo pipefail
out=${1:?output directory}; what=${2:-all}
mkdir -p "$out"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
if [ "$what" = cuda ]; then
  parts=${CUDA_PARTS:-/tmp/ort-gpu-parts}
  mkdir -p "$parts" && cp .ort-gpu/parts/* "$parts"/ 2>/dev/null
  (cd "$parts" && sha256sum -c SHA256SUMS) || exit 1
  cat "$parts"/part.* | python3 -c "import sys, tarfile; tarfile.open(fileobj=sys.stdin.buffer, mode='r|xz').extractall('/tmp/ort-gpu')"
  export PYTHONPATH=/tmp/ort-gpu:$PYTHONPATH
  for d in /opt/torch/.venv/lib/python3.12/site-packages/nvidia/*/lib; do LD_LIBRARY_PATH=$d:${LD_LIBRARY_PATH:-}; done
  export LD_LIBRARY_PATH LAFUZZ_CUDA_REFERENCE=$PWD/.cuda-reference
fi
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export XDG_RUNTIME_DIR=/tmp/xdg-runtime; mkdir -p "$XDG_RUNTIME_DIR"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
python3 -c "import onnxruntime, numpy, hypothesis; print('onnxruntime', onnxruntime.__version__, 'numpy', numpy.__version__, 'hypothesis', hypothesis.__version__)" | tee -a "$out/gpu.txt"
python3 -m fuzz.cli backends 2>&1 | grep -v '^Warning' | tee "$out/backends.txt"
if [ "$what" = tests ] || [ "$what" = all ]; then
  python3 -m pytest -q -n 8 -p no:cacheprovider \
    tests/kernels tests/oracles/test_oracle_vs_ort.py \
    tests/backends/test_ort_backends.py tests/backends/test_ort_webgpu.py tests/engine/test_properties.py --tb=short -rfE \
    > "$out/tests.txt" 2>&1
  tail -25 "$out/tests.txt"
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  python3 -m fuzz.bench --out "$out/bench" 2>&1 | tee "$out/bench.txt"
fi
if [ "$what" = campaign ]; then
  # the default campaign on the GPU: backends on the NVIDIA adapter, one worker per 2 cores
  python3 -m fuzz.cli campaign --time 150s -j 8 --out /tmp/campaign 2>&1 | tr '\r' '\n' | tail -15 \
    | tee "$out/campaign.txt"
  cp /tmp/campaign/summary.json /tmp/campaign/report.html "$out/" 2>/dev/null
fi
if [ "$what" = paths ]; then
  timeout 240 python3 -m pytest -q -n 8 -p no:cacheprovider tests/kernels tests/engine/test_properties.py \
    tests/engine/test_device_chain.py --tb=short -rfE > "$out/tests.txt" 2>&1
  tail -15 "$out/tests.txt"
  old=(); [ -f build/old-kernel.wgsl ] && old=(--template build/old-kernel.wgsl --template-path "${OLD_PATH:-auto}")
  python3 -m fuzz.bench --paths auto,workgroup,scalar "${old[@]}" --out "$out/paths" 2>&1 | tee "$out/paths.txt"
  python3 -m fuzz.bench --paths auto "${old[@]}" --shapes "1,32,128,128;4,32,128,128" --seq-lens 64 --windows 4 \
    --out "$out/large" 2>&1 | tee "$out/large.txt"
  # the floor: a nearly empty call (one head of 4 x 4), timed the same way
  python3 -m fuzz.bench --paths auto,scalar "${old[@]}" --shapes 1,1,4,4 --seq-lens 1 --windows 0 --dtypes fp32 --no-ort \
    --out "$out/floor" > "$out/floor.txt" 2>&1; grep "p50" "$out/floor.txt"
fi
if [ "$what" = bench3 ]; then
  timeout 150 python3 -m pytest -q -n 8 -p no:cacheprovider tests/kernels/test_kernel_parity.py -k same_bits \
    > "$out/same-bits.txt" 2>&1; tail -3 "$out/same-bits.txt"
  for run in 1 2 3; do
    python3 -m fuzz.bench --out "$out/bench$run" > "$out/bench$run.txt" 2>&1
    grep -E "gates PASS" "$out/bench$run.txt"
  done
fi
if [ "$what" = large ] || [ "$what" = all ]; then
  python3 -m fuzz.bench --shapes "1,32,128,128;4,32,128,128" --seq-lens 64 --windows 4 \
    --out "$out/large" 2>&1 | tee "$out/large.txt"
fi
if [ "$what" = cuda ]; then
  # steps: $CUDA_STEPS (default all): tests replay conv campaign; campaign options: $CUDA_CAMPAIGN, $CUDA_CONV_CAMPAIGN
  steps=${CUDA_STEPS:-tests replay conv campaign}
  if [[ " $steps " == *" custom "* ]]; then
    bash -c "${GPU_COMMAND:?set GPU_COMMAND}" 2>&1 | tee "$out/custom.txt"
  fi
  if [[ " $steps " == *" tests "* ]]; then
    python3 -m pytest -q -p no:cacheprovider tests/backends/test_ort_cuda.py tests/corpus/test_cuda_reference.py \
      --tb=short -rfEs > "$out/cuda-tests.txt" 2>&1; tail -8 "$out/cuda-tests.txt"
  fi
  if [[ " $steps " == *" replay "* ]]; then
    python3 -m fuzz.cli import-cuda --corpus /tmp/cuda-corpus | tee "$out/cuda-replay.txt"
    for set in ort-cuda oracle,wgpu,wgpu-dawn,ort-cuda,ort-webgpu; do
      echo "== lafuzz replay /tmp/cuda-corpus --backends $set" | tee -a "$out/cuda-replay.txt"
      python3 -m fuzz.cli replay /tmp/cuda-corpus --backends $set -v 2>&1 | grep -v '^Warning' >> "$out/cuda-replay.txt"
      tail -1 "$out/cuda-replay.txt"
    done
  fi
  if [[ " $steps " == *" conv "* ]]; then
    rm -rf /tmp/campaign-conv
    python3 -m pytest -q -p no:cacheprovider tests/backends/test_ort_cuda.py -k conv --tb=short -rfEs \
      > "$out/cuda-conv-tests.txt" 2>&1; tail -4 "$out/cuda-conv-tests.txt"
    # shellcheck disable=SC2086
    python3 -m fuzz.cli campaign --ops CausalConvWithState \
      --backends oracle,ort-cuda,onnx-reference,ort-webgpu,wgpu-conv,wgpu-conv-dawn,wgpu,wgpu-dawn \
      ${CUDA_CONV_CAMPAIGN:---time 120s -j 8} --out /tmp/campaign-conv 2>&1 | tr '\r' '\n' \
      > "$out/cuda-conv-campaign.txt"; tail -4 "$out/cuda-conv-campaign.txt"
    mkdir -p "$out/cuda-conv-campaign"
    cp -r /tmp/campaign-conv/summary.json /tmp/campaign-conv/report.html /tmp/campaign-conv/corpus \
      /tmp/campaign-conv/native.log "$out/cuda-conv-campaign/" 2>/dev/null
  fi
  if [[ " $steps " == *" campaign "* ]]; then
    rm -rf /tmp/campaign-cuda
    # shellcheck disable=SC2086
    python3 -m fuzz.cli campaign ${CUDA_CAMPAIGN:---time 120s -j 8} --out /tmp/campaign-cuda 2>&1 | tr '\r' '\n' \
      > "$out/cuda-campaign.txt"; tail -4 "$out/cuda-campaign.txt"
    mkdir -p "$out/cuda-campaign"
    cp -r /tmp/campaign-cuda/summary.json /tmp/campaign-cuda/report.html /tmp/campaign-cuda/corpus \
      /tmp/campaign-cuda/native.log "$out/cuda-campaign/" 2>/dev/null
  fi
fi
if [ "$what" = block ]; then
  timeout "${BLOCK_TEST_LIMIT:-400}" python3 -m pytest -q -n 8 -p no:cacheprovider tests/kernels/test_conv_kernel.py \
    tests/kernels/test_conv_kernel_onnx_cases.py tests/kernels/test_qkv_split.py tests/engine/test_hybrid_block.py \
    tests/engine/test_conv_kernel_mutants.py tests/engine/test_properties.py -k "conv or hybrid or split" \
    --tb=short -rfEs > "$out/block-tests.txt" 2>&1
  tail -6 "$out/block-tests.txt"
  for impl in wgpu dawn; do
    python3 -m fuzz.bench.block --implementation "$impl" --out "$out/block-$impl" 2>&1 | grep -v '^Warning' \
      | tee "$out/block-$impl.txt"
  done
fi
if [ "$what" = custom ]; then
  bash -c "${GPU_COMMAND:?set GPU_COMMAND}" 2>&1 | tee "$out/custom.txt"
fi
