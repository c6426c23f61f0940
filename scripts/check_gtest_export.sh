#!/usr/bin/env bash
# Checks the upstream C++ tests of `lafuzz gtest` (docs/upstream/README.md) without building ONNX Runtime:
#  1. regenerates both files into a temporary folder and fails if docs/upstream differs (stale files);
#  2. compile-checks docs/upstream/*.cc with g++ -std=c++17 -fsyntax-only: with --compile-commands FILE (the
#     compile_commands.json of a configured ORT build tree) under the flags of ORT's own test of each op, else
#     the smoke test against gtest's real headers and tests/export/ort_test_api_stub;
#  3. replays every test through ORT's Python API on the EPs present (CPU; CUDA where onnxruntime-gpu is).
# Usage: bash scripts/check_gtest_export.sh [--compile-commands FILE]   (PYTHON=... picks the interpreter)
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-.venv/bin/python}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" -m fuzz.cli gtest --out "$tmp" > /dev/null
for f in "$tmp"/*.cc; do
  if ! cmp -s "$f" "docs/upstream/$(basename "$f")"; then
    echo "docs/upstream/$(basename "$f") is stale: regenerate it with lafuzz gtest" >&2
    exit 1
  fi
done
echo "docs/upstream is what lafuzz gtest writes now"
"$py" -m fuzz.export.gtest_compile "$@"
"$py" -m fuzz.cli gtest --replay
