#!/bin/sh
# keel-launch leaves nothing running: a rank that ignores SIGTERM after
# another rank failed, and what a rank started, are killed once the stop
# timeout passes; the ranks die with keel-launch when it is killed (SIGKILL).
# Usage: no_orphans.sh KEEL_LAUNCH
L="$1"
d=$(mktemp -d) || exit 1
trap 'for p in $(cat "$d"/pids* 2>/dev/null); do kill -9 "$p" 2>/dev/null; done; rm -rf "$d"' EXIT
alive() { s=$(ps -o stat= -p "$1" 2>/dev/null); [ -n "$s" ] && [ "${s#Z}" = "$s" ]; }
# Waits (bounded, 20 s) until none of the pids in $1 runs.
all_gone() {
    i=0
    while [ $i -lt 400 ]; do
        left=0
        for p in $(cat "$1"); do alive "$p" && left=1; done
        [ $left = 0 ] && return 0
        sleep 0.05; i=$((i + 1))
    done
    echo "still running:"; for p in $(cat "$1"); do alive "$p" && ps -o pid=,args= -p "$p"; done
    return 1
}

# Each rank records itself and a child it started; rank 1 fails once all four are recorded.
out=$("$L" -n 2 --stop-timeout 0.2 sh -c 'trap "" TERM; sleep 60 & echo $! >> '"$d"'/pids; echo $$ >> '"$d"'/pids
  if [ "$RANK" = 1 ]; then while [ "$(wc -l < '"$d"'/pids)" -lt 4 ]; do sleep 0.01; done; exit 3; fi; wait' 2>&1)
rc=$?
echo "$out"
[ $rc = 3 ] || { echo "expected keel-launch to exit 3, got $rc"; exit 1; }
echo "$out" | grep -q 'rank 1 exited with status 3; stopping the others' || exit 1
echo "$out" | grep -q 'still running after the stop timeout' || exit 1
all_gone "$d/pids" || exit 1

# keel-launch killed: its ranks go with it.
"$L" -n 2 sh -c 'echo $$ >> '"$d"'/pids2; exec sleep 60' &
launcher=$!
i=0; while [ "$(cat "$d"/pids2 2>/dev/null | wc -l)" -lt 2 ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
kill -9 $launcher; wait $launcher 2>/dev/null
all_gone "$d/pids2" || exit 1
echo "nothing left running"
