#!/bin/bash
# The full-disk scenario: a 90 MB tmpfs as --out with 20 MB used; 25 s into a 60 s campaign (-j 2) another
# process fills the rest. Usage: disk.sh NAME [extra campaign args...]
set -u
name=$1; shift
res=/tmp/faults-results/$name
rm -rf $res; mkdir -p $res
cd /work/wt-faults
export XDG_RUNTIME_DIR=/tmp/xdg-runtime
umount /mnt/x 2>/dev/null; mkdir -p /mnt/x
mount -t tmpfs -o size=90m tmpfs /mnt/x
dd if=/dev/urandom of=/mnt/x/filler bs=1M count=20 status=none
df -B1 /mnt/x > $res/df-before.txt
uptime > $res/uptime.txt
start=$(date +%s.%N)
.venv/bin/lafuzz campaign --time 60s -j 2 --out /mnt/x/out "$@" > $res/stdout.txt 2> $res/stderr.txt &
pid=$!
sleep 25
dd if=/dev/zero of=/mnt/x/filler2 bs=1M status=none 2> $res/dd.txt
echo "filled at $(echo "$(date +%s.%N) - $start" | bc) s" >> $res/dd.txt
df -B1 /mnt/x > $res/df-filled.txt
wait $pid
echo "exit $?" > $res/exit.txt
echo "wall $(echo "$(date +%s.%N) - $start" | bc) s" >> $res/exit.txt
uptime >> $res/uptime.txt
df -B1 /mnt/x > $res/df-after.txt
ls -la /mnt/x/out > $res/ls-out.txt
find /mnt/x/out -name "*.partial*" > $res/partial.txt
cp /mnt/x/out/summary.json $res/ 2>/dev/null
.venv/bin/lafuzz replay /mnt/x/out/corpus ${REPLAY_BACKENDS:+--backends $REPLAY_BACKENDS} > $res/replay.txt 2>&1
echo "exit $?" >> $res/replay.txt
