set -u
cd /work && rm -rf /work/ci-final4 && git clone -q /work/main /work/ci-final4 && cd /work/ci-final4
git log --oneline -1
rm -rf ~/.cache/lafuzz ~/.cache/mesa_shader_cache*
start=$(date +%s); bash .ci/run > /tmp/ci4.log 2>&1; echo "ci rc=$? $(( $(date +%s) - start )) s"
tail -1 /tmp/ci4.log
rm -rf ~/.cache/lafuzz ~/.cache/mesa_shader_cache* /tmp/m4; mkdir -p /tmp/m4
export XDG_RUNTIME_DIR=/tmp/xdg-runtime
/usr/bin/time -v .venv/bin/lafuzz campaign --seed 4215104394 --out /tmp/m4/cold > /tmp/m4/cold.txt 2>&1; echo "cold rc=$?"
/usr/bin/time -v .venv/bin/lafuzz campaign --seed 4215104394 --out /tmp/m4/warm > /tmp/m4/warm.txt 2>&1; echo "warm rc=$?"
