#!/usr/bin/env bash
# A trainer on another host over a 10 Gbit/s and a 1 Gbit/s link, simulated on this machine:
# graphstored and bench/link_bench run inside a private network namespace whose loopback is
# shaped with a token bucket (tc tbf); traffic stays on that namespace's 127.0.0.1. The script
# creates and deletes the namespace itself and skips, saying so, without the rights to.
#
#   bash bench/link_bench.sh                      # products-like graph, batch 1024, [15, 10, 5]
#   GRAPH=1m RATES="10gbit" bash bench/link_bench.sh
#   CONNECTIONS="1 2 4" TLS=1 BATCH=64 FANOUTS=10,5 CONFIGS=float32:0 bash bench/link_bench.sh
#       striped streams: the Loader over 1, 2 and 4 connections, plaintext and over TLS (certificates
#       made for the run), batch 64 with fanouts [10, 5]
#   BASELINE_BIN=DIR BASELINE_GRAPH=DIR bash bench/link_bench.sh
#       also runs an earlier release: DIR/graphstored and DIR/link_bench (built with
#       -DLINK_BENCH_PROTO_ONLY) on a graph in that release's format.
set -euo pipefail
cd "$(dirname "$0")/.."

graph_name=${GRAPH:-products}
rates=${RATES:-"10gbit 1gbit"}
seconds=${SECONDS_PER_ROW:-12}
configs=${CONFIGS:-"float32:0 float16:0 int8:0 int8:0.1"}
connections=${CONNECTIONS:-1}
batch=${BATCH:-1024}
fanouts=${FANOUTS:-15,10,5}
ns="gs-link-$$"

if [ "$(id -u)" != 0 ] || ! ip netns add "$ns" 2>/dev/null; then
  echo "link_bench: skipped: creating a network namespace needs root (CAP_NET_ADMIN)"
  exit 0
fi
work=$(mktemp -d)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
ip netns exec "$ns" ip link set lo up

bazel build //bench:link_bench //server:graphstored >/dev/null 2>&1 ||
  { echo "link_bench: build failed"; exit 1; }
bin=$(bazel info bazel-bin 2>/dev/null)
graph=$("$bin/bench/link_bench" --graph="$graph_name")

tls_flags=()
if [ -n "${TLS:-}" ]; then
  bash tests/security/make_certs.sh "$work/certs" >/dev/null
  tls_flags=(--tls_cert="$work/certs/server.pem" --tls_key="$work/certs/server.key")
fi

# Starts graphstored ($1) on partition $2 inside the namespace (${@:3}: more flags); waits for
# its port file.
start_server() {
  rm -f "$work/port"
  ip netns exec "$ns" "$1" --partition="$2" --port=0 --port_file="$work/port" --verify_partition=false \
    --shared_memory_dir= --log_level=warn --max_message_mb=2047 "${@:3}" >"$work/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 600); do
    [ -s "$work/port" ] && return 0
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log"; return 1; }
    sleep 0.1
  done
  echo "graphstored did not report its port"; return 1
}
stop_server() {
  kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null || true
  server_pid=""
}

echo "graph $graph; batch $batch, fanout [$fanouts], 100 float features; ${seconds}s per row; $(nproc) cores"
for rate in $rates; do
  gbit=${rate%gbit}
  ip netns exec "$ns" tc qdisc replace dev lo root tbf rate "$rate" burst 8mb latency 20ms
  echo "== link $rate"
  if [ -n "${BASELINE_BIN:-}" ]; then
    start_server "$BASELINE_BIN/graphstored" "${BASELINE_GRAPH:?BASELINE_GRAPH: that release\'s graph}"
    ip netns exec "$ns" "$BASELINE_BIN/link_bench" --server="127.0.0.1:$(cat "$work/port")" --client=proto \
      --seconds="$seconds" --link_gbit="$gbit" --label="earlier release, float32"
    stop_server
  fi
  start_server "$bin/server/graphstored" "$graph"
  for c in $configs; do
    for n in $connections; do
      ip netns exec "$ns" "$bin/bench/link_bench" --server="127.0.0.1:$(cat "$work/port")" \
        --encoding="${c%%:*}" --cache_fraction="${c##*:}" --seconds="$seconds" --link_gbit="$gbit" \
        --connections="$n" --batch_size="$batch" --fanouts="$fanouts"
    done
  done
  stop_server
  if [ -n "${TLS:-}" ]; then
    start_server "$bin/server/graphstored" "$graph" "${tls_flags[@]}"
    for c in $configs; do
      for n in $connections; do
        ip netns exec "$ns" "$bin/bench/link_bench" --server="127.0.0.1:$(cat "$work/port")" \
          --encoding="${c%%:*}" --cache_fraction="${c##*:}" --seconds="$seconds" --link_gbit="$gbit" \
          --connections="$n" --batch_size="$batch" --fanouts="$fanouts" --ca_file="$work/certs/ca.pem"
      done
    done
    stop_server
  fi
done
