#!/usr/bin/env bash
# Soak: one graphstored on loopback (shared memory on), N client processes x M cycles with
# random cancels, destroys, walk-aways and SIGKILLs (bench/soak_bench.cc); prints the daemon's
# RSS, file descriptors, threads and shared-memory bytes every second and whether they stay
# flat after warm-up.
#
#   bash bench/soak.sh                     # 8 clients x 100 cycles on a 20k-node graph
#   CLIENTS=16 CYCLES=400 NODES=100000 bash bench/soak.sh
set -euo pipefail
cd "$(dirname "$0")/.."
clients=${CLIENTS:-8}
cycles=${CYCLES:-100}
nodes=${NODES:-20000}
bazel build //server:graphstored //tools:graphstore-generate //bench:soak_bench >/dev/null
work=$(mktemp -d)
shm=$(mktemp -d /dev/shm/graphstore-soak.XXXXXX)
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work" "$shm"
}
trap cleanup EXIT
bazel-bin/tools/graphstore-generate --out="$work/g" --nodes="$nodes" --feature_dim=64 --classes=8 --seed=4 >/dev/null
bazel-bin/server/graphstored --partition="$work/g" --port=0 --port_file="$work/port" --shared_memory_dir="$shm" \
  --state_log_interval_s=0 >"$work/daemon.log" 2>&1 &
pid=$!
while [ ! -s "$work/port" ]; do
  kill -0 "$pid" 2>/dev/null || { cat "$work/daemon.log"; exit 1; }
  sleep 0.1
done
bazel-bin/bench/soak_bench --server="127.0.0.1:$(cat "$work/port")" --pid="$pid" --shared_memory_dir="$shm" \
  --clients="$clients" --cycles="$cycles"
kill -TERM "$pid"
wait "$pid"
status=$?
pid=""
echo "graphstored exited with $status after the soak"
