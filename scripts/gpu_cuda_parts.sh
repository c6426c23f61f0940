#!/usr/bin/env bash
# Run here before a CUDA session on the GPU machine: packs onnxruntime-gpu (255 MB as a wheel, over
# the 64 MiB one run can carry) for the trip. Downloads the cp312 wheel, repacks its `onnxruntime`
# folder (TensorRT provider left out) as an xz tarball, which the machine's Python unpacks without
# any tool, and splits it into parts of PART_MB under .ort-gpu/parts/ with their checksums. The
# reference outputs of ORT's CUDA EP go along in .cuda-reference/. Then, with runs less than 30 s
# apart so the machine stays up: for each part, a run carrying ".ort-gpu/part.NN" that copies it
# to /tmp/ort-gpu-parts; last, `bash scripts/gpu_session.sh $OUT/h200-cuda cuda` carrying .whl,
# .gl, .cuda-reference and the last part.
set -euo pipefail
cd "$(dirname "$0")/.."
PART_MB=${PART_MB:-46}
for p in /.ort-gpu/ /.cuda-reference/; do grep -qx "$p" .git/info/exclude || echo "$p" >> .git/info/exclude; done
work=$(mktemp -d)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 -d "$work" onnxruntime-gpu==1.31.1
python3 -m zipfile -e "$work"/onnxruntime_gpu-*.whl "$work/x"
rm -f "$work"/x/onnxruntime/capi/libonnxruntime_providers_tensorrt.so
tar -C "$work/x" -cf - onnxruntime | xz -9 -T0 > "$work/ort-gpu.tar.xz"
rm -rf .ort-gpu && mkdir -p .ort-gpu/parts
split -b "${PART_MB}M" -d "$work/ort-gpu.tar.xz" .ort-gpu/parts/part.
(cd .ort-gpu/parts && sha256sum part.* > SHA256SUMS)
rm -rf .cuda-reference && cp -r ../shared/cuda-reference .cuda-reference
rm -rf "$work"
ls -la .ort-gpu/parts
