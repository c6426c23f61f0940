#!/usr/bin/env bash
# Sets up everything this project needs on a fresh Debian 12/13 machine, idempotently:
#   - system side: the Vulkan loader and Mesa's lavapipe (software Vulkan) recent enough for Dawn,
#     and redis-server for the shared-database test;
#   - Python side: a virtual environment in .venv with the project installed (editable).
# At the end it prints the WebGPU adapters it can see. A second run with everything in place
# takes a few seconds: each step checks before it installs.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[setup] %s\n' "$*"; }
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"

# ---- system packages -------------------------------------------------------------------------
. /etc/os-release
mesa_ok() {
  local v
  v=$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || true)
  [ -n "$v" ] && dpkg --compare-versions "$v" ge 25 && dpkg-query -W libvulkan1 >/dev/null 2>&1
}
need_apt=()
mesa_ok || need_apt+=(mesa)
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis)
if [ ${#need_apt[@]} -gt 0 ]; then
  log "installing system packages: ${need_apt[*]} (Debian ${VERSION_CODENAME:-?})"
  export DEBIAN_FRONTEND=noninteractive
  if [ "${VERSION_CODENAME:-}" = "bookworm" ] && [[ " ${need_apt[*]} " == *" mesa "* ]]; then
    # Debian 12's Mesa 22.3 is too old for Dawn; 25.x comes from bookworm-backports.
    echo "deb http://deb.debian.org/debian bookworm-backports main" \
      | $SUDO tee /etc/apt/sources.list.d/bookworm-backports.list >/dev/null
  fi
  $SUDO apt-get update -qq
  if [[ " ${need_apt[*]} " == *" mesa "* ]]; then
    if [ "${VERSION_CODENAME:-}" = "bookworm" ]; then
      $SUDO apt-get install -y -qq -t bookworm-backports mesa-vulkan-drivers >/dev/null
    else
      $SUDO apt-get install -y -qq mesa-vulkan-drivers >/dev/null
    fi
    $SUDO apt-get install -y -qq libvulkan1 >/dev/null
  fi
  if [[ " ${need_apt[*]} " == *" redis "* ]]; then
    $SUDO apt-get install -y -qq redis-server >/dev/null
  fi
else
  log "system packages already in place"
fi
mesa_ok || { log "ERROR: mesa-vulkan-drivers >= 25 is not installed"; exit 1; }

# ---- python environment ----------------------------------------------------------------------
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  log "creating .venv"
  "$PY" -m venv .venv
fi
stamp=.venv/.installed-$(cat pyproject.toml | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ]; then
  log "installing the project and its dependencies into .venv"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[dev]'
  rm -f .venv/.installed-*
  touch "$stamp"
else
  log "python dependencies already installed"
fi

# ---- what we found ---------------------------------------------------------------------------
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp/xdg-runtime-$(id -u)}
mkdir -p "$XDG_RUNTIME_DIR"
.venv/bin/lafuzz backends
