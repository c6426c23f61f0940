#!/bin/bash
# The lost-database scenario: a 60 s campaign (-j 2) on a shared Redis database whose server is killed
# (SIGKILL) 25 s in; then merge its output while the server is still gone. Usage: redis.sh NAME [args...]
set -u
name=$1; shift
res=/tmp/faults-results/$name
out=/tmp/faults-redis-$name
rm -rf $res $out $out-merged; mkdir -p $res
cd /work/wt-faults
export XDG_RUNTIME_DIR=/tmp/xdg-runtime
port=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
redis-server --port $port --bind 127.0.0.1 --save "" --appendonly no > $res/redis.log 2>&1 &
server=$!
sleep 1
uptime > $res/uptime.txt
start=$(date +%s.%N)
.venv/bin/lafuzz campaign --time 60s -j 2 --database redis://127.0.0.1:$port --out $out "$@" > $res/stdout.txt 2> $res/stderr.txt &
pid=$!
sleep 25
redis-cli -p $port dbsize > $res/dbsize-before-kill.txt 2>&1
kill -9 $server
echo "redis-server killed at $(echo "$(date +%s.%N) - $start" | bc) s" > $res/kill.txt
if [ -n "${RESTART_AFTER:-}" ]; then
  sleep $RESTART_AFTER
  redis-server --port $port --bind 127.0.0.1 --save "" --appendonly no >> $res/redis.log 2>&1 &
  server=$!
  echo "redis-server started again at $(echo "$(date +%s.%N) - $start" | bc) s" >> $res/kill.txt
fi
wait $pid
echo "exit $?" > $res/exit.txt
echo "wall $(echo "$(date +%s.%N) - $start" | bc) s" >> $res/exit.txt
uptime >> $res/uptime.txt
.venv/bin/lafuzz merge $out --out $out-merged > $res/merge.txt 2>&1; echo "exit $?" >> $res/merge.txt
find $out -name "*.partial*" > $res/partial.txt
cp $out/summary.json $res/ 2>/dev/null
.venv/bin/lafuzz replay $out-merged ${REPLAY_BACKENDS:+--backends $REPLAY_BACKENDS} > $res/replay.txt 2>&1
echo "exit $?" >> $res/replay.txt
[ -n "${RESTART_AFTER:-}" ] && { redis-cli -p $port dbsize > $res/dbsize-end.txt 2>&1; kill $server; }
ls -la $out > $res/ls-out.txt
