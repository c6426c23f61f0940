#!/usr/bin/env bash
# Sets up everything this project needs on a Debian 12/13 machine (root, or a user with sudo):
#   - system side: python3-venv (a fresh Debian lacks it), the Vulkan loader, a Vulkan driver (Mesa's
#     lavapipe, recent enough for Dawn, unless a GPU's own Vulkan driver already works: that one is never
#     replaced) and the redis-server binary for the shared-database test (installed, not started: no
#     daemon is left running);
#   - Python side: a virtual environment in .venv with the project installed (editable);
#   - the other WebGPU builds of ONNX Runtime (the ort-node, ort-web and ort-webgpu-builtin backends): Debian's
#     chromium and Node.js where it is missing or older than 18 (Debian's nodejs and npm) here; then
#     `lafuzz setup` installs the JS runner's pinned npm packages in ortjs/ (npm ci, no install scripts:
#     onnxruntime-node's would download CUDA binaries) and a second virtual environment, .venv-ort-webgpu-1.27,
#     with onnxruntime-webgpu 1.27.0 - the same command a pip user runs (docs/other-builds.md).
# It says what it will change before changing it, installs only what is missing, and on a machine that is
# already set up changes nothing and says so. At the end it prints the backends it found.
#
#   bash scripts/setup.sh               # everything
#   bash scripts/setup.sh --no-system   # no system package (Vulkan, chromium, Node): for a machine that has its
#                                       # Vulkan or Metal driver; npm packages and the second venv where Node is
#   bash scripts/setup.sh --no-browser  # without the other builds (no chromium, Node, npm packages, second venv)
set -euo pipefail
cd "$(dirname "$0")/.."

SYSTEM=1
BROWSER=1
for arg in "$@"; do
  case "$arg" in
    --no-system) SYSTEM=0 ;;
    --no-browser) BROWSER=0 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: bash scripts/setup.sh [--no-system] [--no-browser]" >&2; exit 2 ;;
  esac
done

log() { printf '[setup] %s\n' "$*"; }
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
PY=${PYTHON:-python3}
STAMP=.venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)
POLICY=/usr/sbin/policy-rc.d

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
mesa_version() { installed mesa-vulkan-drivers && dpkg-query -W -f='${Version}' mesa-vulkan-drivers; }
mesa_ok() { local v; v=$(mesa_version) && dpkg --compare-versions "$v" ge 25; }
node_ok() { command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 \
              && node -e 'process.exit(+process.versions.node.split(".")[0] >= 18 ? 0 : 1)'; }

# The GPU a working Vulkan driver drives (empty if none): from vulkaninfo, else from wgpu's adapters in .venv.
gpu_vulkan() {
  if command -v vulkaninfo >/dev/null 2>&1; then
    vulkaninfo --summary 2>/dev/null | awk '/deviceType/ { gpu = /(DISCRETE|INTEGRATED|VIRTUAL)_GPU/ }
                                            /deviceName/ && gpu { sub(/.*= */, ""); print; exit }'
  elif [ -x .venv/bin/python ]; then
    .venv/bin/python -c 'import wgpu
for a in wgpu.gpu.enumerate_adapters_sync():
    if a.info["backend_type"] == "Vulkan" and a.info["adapter_type"] in ("DiscreteGPU", "IntegratedGPU"):
        print(a.info["device"]); break' 2>/dev/null || true
  fi
}

# apt-get install, quietly, with service starts refused (policy-rc.d): a package such as redis-server
# must not leave a daemon running. An existing policy-rc.d is left as it is.
remove_policy=""
trap '[ -z "$remove_policy" ] || $SUDO rm -f "$POLICY"' EXIT
apt_install() {
  if [ ! -e "$POLICY" ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$POLICY" >/dev/null && $SUDO chmod 755 "$POLICY" && remove_policy=1
  fi
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
apt_updated=""
apt_update() { [ -n "$apt_updated" ] || { $SUDO apt-get update -qq; apt_updated=1; }; }

# ---- what is missing ----------------------------------------------------------------------------------
. /etc/os-release
packages=()
if [ "$SYSTEM" = 1 ]; then
  [ -x .venv/bin/python ] || "$PY" -c 'import ensurepip' 2>/dev/null || packages+=(python3-venv)
  installed libvulkan1 || packages+=(libvulkan1)
  command -v redis-server >/dev/null 2>&1 || packages+=(redis-server)
  # g++ and gtest's headers: the smoke compile of the C++ tests lafuzz gtest writes (tests/export)
  command -v g++ >/dev/null 2>&1 || packages+=(g++)
  [ -f /usr/include/gtest/gtest.h ] || packages+=(libgtest-dev)
  if [ "$BROWSER" = 1 ]; then
    installed chromium || command -v chromium >/dev/null 2>&1 || packages+=(chromium)
    node_ok || packages+=(nodejs npm)
  fi
fi
new_redis=""; [[ " ${packages[*]} " != *" redis-server "* ]] || new_redis=1
todo=()
[ ${#packages[@]} -eq 0 ] || todo+=("apt-get install ${packages[*]} (no service started)")
[ -x .venv/bin/python ] || todo+=("create .venv")
[ -f "$STAMP" ] || todo+=("pip install the project and its pinned dependencies into .venv (pyproject.toml new or changed)")
if [ "$SYSTEM" = 1 ] && ! mesa_ok; then
  todo+=("Mesa's lavapipe (mesa-vulkan-drivers >= 25), unless a GPU's Vulkan driver already works (checked once .venv exists)")
fi
if [ ${#todo[@]} -gt 0 ]; then
  log "will change:"
  for item in "${todo[@]}"; do log "  - $item"; done
fi

# ---- system packages ----------------------------------------------------------------------------------
if [ ${#packages[@]} -gt 0 ]; then
  log "installing ${packages[*]} (Debian ${VERSION_CODENAME:-?})"
  apt_update
  apt_install "${packages[@]}"
  if [ -n "$new_redis" ] && [ -d /run/systemd/system ]; then
    $SUDO systemctl disable --now redis-server >/dev/null 2>&1 || true  # installed for the tests, which start their own
  fi
fi

# ---- python environment -------------------------------------------------------------------------------
if [ ! -x .venv/bin/python ]; then
  "$PY" -c 'import ensurepip' 2>/dev/null || {
    log "ERROR: $PY cannot create a virtual environment: install python3-venv (or run without --no-system)"; exit 1; }
  log "creating .venv"
  "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
fi
if [ ! -f "$STAMP" ]; then
  log "installing the project and its dependencies into .venv"
  .venv/bin/python -m pip install -q -e '.[dev]'
  rm -f .venv/.installed-*
  touch "$STAMP"
fi

# ---- a Vulkan driver ----------------------------------------------------------------------------------
driver=""
if [ "$SYSTEM" = 1 ]; then
  if mesa_ok; then
    driver="Mesa $(mesa_version)"
  elif gpu=$(gpu_vulkan) && [ -n "$gpu" ]; then
    driver="the Vulkan driver of $gpu (Mesa left as it is)"
  else
    log "installing Mesa's lavapipe (software Vulkan): no GPU Vulkan driver works here"
    if [ "${VERSION_CODENAME:-}" = "bookworm" ]; then
      # Debian 12's Mesa 22.3 is too old for Dawn; 25.x comes from bookworm-backports.
      log "adding bookworm-backports to apt's sources for it"
      echo "deb http://deb.debian.org/debian bookworm-backports main" \
        | $SUDO tee /etc/apt/sources.list.d/bookworm-backports.list >/dev/null
      apt_updated=""
      apt_update
      apt_install -t bookworm-backports mesa-vulkan-drivers
    else
      apt_update
      apt_install mesa-vulkan-drivers
    fi
    mesa_ok || { log "ERROR: mesa-vulkan-drivers >= 25 could not be installed"; exit 1; }
    driver="Mesa $(mesa_version)"
  fi
fi

builds=""; [ "$BROWSER" = 0 ] || [ "$SYSTEM" = 0 ] || builds=", chromium, Node.js $(node --version 2>/dev/null)"
if [ ${#todo[@]} -eq 0 ]; then
  if [ "$SYSTEM" = 1 ]; then
    log "nothing to do: libvulkan1, redis-server, $driver$builds, .venv (pyproject.toml unchanged) in place"
  else
    log "nothing to do: .venv in place (pyproject.toml unchanged); system packages not checked (--no-system)"
  fi
fi

# ---- the other WebGPU builds' npm packages and second venv, then what we found -------------------------
if [ "$BROWSER" = 1 ]; then
  .venv/bin/lafuzz setup
else
  .venv/bin/lafuzz backends
fi
