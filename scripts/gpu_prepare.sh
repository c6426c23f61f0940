#!/usr/bin/env bash
# Run here (a machine with network access to the package registries) before a session on the
# GPU machine, which has no network: downloads the cp312 wheels and the amd64 Vulkan loader
# packages that scripts/gpu_session.sh installs there. Both folders are git-ignored locally
# (.git/info/exclude) and travel as carried paths.
set -euo pipefail
cd "$(dirname "$0")/.."
exclude=$(git rev-parse --git-path info/exclude)  # also right in a linked worktree, where .git is a file
grep -qx '/.whl/' "$exclude" || echo /.whl/ >> "$exclude"
grep -qx '/.gl/' "$exclude" || echo /.gl/ >> "$exclude"
mkdir -p .whl .gl
platforms=()
for n in 1 2014 2_17 2_24 2_27 2_28 2_31 2_34 2_35; do
  case $n in 1|2014) platforms+=(--platform "manylinux${n}_x86_64");; *) platforms+=(--platform "manylinux_${n}_x86_64");; esac
done
# the project's Hypothesis pin too: derandomized tests then draw there exactly what they draw here
hypothesis=$(grep -o 'hypothesis==[0-9.]*' pyproject.toml)
for pkg in wgpu==0.32.0 wgpudawn==0.32.0.4 cffi pycparser rendercanvas sniffio onnxruntime-ep-webgpu==0.4.0 "$hypothesis"; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${platforms[@]}" -d .whl "$pkg"
done
lists=/tmp/amd64-lists; mkdir -p "$lists/partial"
o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$lists")
apt-get "${o[@]}" update -qq
(cd .gl && apt-get "${o[@]}" download -qq libvulkan1 libegl1 libglvnd0)
ls -la .whl .gl
