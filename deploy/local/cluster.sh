#!/usr/bin/env bash
# Runs a graphstore cluster on this machine: one graphstored per partition of a dataset, on
# loopback, each told the whole cluster.
#
#   deploy/local/cluster.sh start DATASET RUN_DIR [graphstored flags...]
#       DATASET is a partitioned dataset (DATASET/part-0 ..., or a single partition directory).
#       Starts the servers, waits until every one listens, and writes RUN_DIR/cluster (the
#       addresses, comma-separated, in partition order). Logs: RUN_DIR/part-K.log.
#   deploy/local/cluster.sh stop RUN_DIR
#       SIGTERM to every server; waits for each to exit and fails unless every one shut down
#       cleanly (exit 0, or, when it is not this shell's child, its port file removed).
#
# GRAPHSTORED names the binary (default: bazel-bin/server/graphstored).
set -euo pipefail

die() { echo "cluster.sh: $*" >&2; exit 2; }

free_ports() {  # prints N free loopback ports
  python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

start() {
  local dataset=$1 run=$2
  shift 2
  local bin=${GRAPHSTORED:-bazel-bin/server/graphstored}
  [[ -x $bin ]] || die "no graphstored at $bin (build //server:graphstored or set GRAPHSTORED)"
  local dirs=()
  if [[ -f $dataset/manifest.json ]]; then
    dirs=("$dataset")
  else
    local k=0
    while [[ -d $dataset/part-$k ]]; do dirs+=("$dataset/part-$k"); k=$((k + 1)); done
  fi
  (( ${#dirs[@]} > 0 )) || die "$dataset holds no partition (manifest.json or part-0/)"
  mkdir -p "$run"
  [[ ! -e $run/cluster ]] || die "$run already holds a running cluster (stop it first)"
  local n=${#dirs[@]}
  read -r -a ports <<<"$(free_ports "$n")"
  local addrs=()
  for p in "${ports[@]}"; do addrs+=("127.0.0.1:$p"); done
  local cluster
  cluster=$(IFS=,; echo "${addrs[*]}")
  for ((k = 0; k < n; k++)); do
    rm -f "$run/part-$k.port"
    "$bin" --partition="${dirs[$k]}" --port="${ports[$k]}" --port_file="$run/part-$k.port" \
      --cluster="$cluster" "$@" >"$run/part-$k.log" 2>&1 &
    echo $! >"$run/part-$k.pid"
  done
  # Each server writes its port file once it listens and reports SERVING.
  for ((k = 0; k < n; k++)); do
    for ((t = 0; t < 600; t++)); do
      [[ -s $run/part-$k.port ]] && break
      if ! kill -0 "$(cat "$run/part-$k.pid")" 2>/dev/null; then
        echo "cluster.sh: server $k (${dirs[$k]}) exited during start-up:" >&2
        tail -n 5 "$run/part-$k.log" >&2
        stop "$run" >/dev/null 2>&1 || true
        exit 1
      fi
      sleep 0.1
    done
    [[ -s $run/part-$k.port ]] || { stop "$run" >/dev/null 2>&1 || true; die "server $k did not listen within 60 s"; }
  done
  echo "$cluster" >"$run/cluster"
  echo "$cluster"
}

stop() {
  local run=$1 failed=0
  shopt -s nullglob
  local pids=("$run"/part-*.pid)
  (( ${#pids[@]} > 0 )) || die "$run holds no running cluster"
  for f in "${pids[@]}"; do kill -TERM "$(cat "$f")" 2>/dev/null || true; done
  for f in "${pids[@]}"; do
    local pid status=0
    pid=$(cat "$f")
    wait "$pid" 2>/dev/null || status=$?
    # Not our child (started by another shell): poll until it is gone.
    for ((t = 0; t < 300 && status == 127; t++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "cluster.sh: server $f did not stop; killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
      failed=1
    elif (( status != 0 && status != 127 )); then
      echo "cluster.sh: server $f exited with $status" >&2
      failed=1
    elif [[ -e ${f%.pid}.port ]]; then
      # Not our child, so no exit status: a clean shutdown removes the port file.
      echo "cluster.sh: server $f ended without a clean shutdown; see ${f%.pid}.log" >&2
      failed=1
    fi
    rm -f "$f"
  done
  rm -f "$run/cluster"
  return $failed
}

case ${1:-} in
  start) (( $# >= 3 )) || die "usage: $0 start DATASET RUN_DIR [graphstored flags...]"; shift; start "$@" ;;
  stop) (( $# == 2 )) || die "usage: $0 stop RUN_DIR"; stop "$2" ;;
  *) die "usage: $0 start DATASET RUN_DIR [flags...] | stop RUN_DIR" ;;
esac
