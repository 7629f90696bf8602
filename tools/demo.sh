#!/usr/bin/env bash
# The main job: set up, build, generate the default dataset, start graphstored on it, train a
# GraphSAGE model through it for a few epochs, and stop the server cleanly (Exit RPC).
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/setup.sh
bazel build //server:graphstored //tools:all //client:train_sage

work=${GRAPHSTORE_DEMO_DIR:-/tmp/graphstore-demo}
rm -rf "$work"
mkdir -p "$work"
bazel-bin/tools/graphstore-generate --nodes=50000 --feature_dim=32 --classes=10 --feature_signal=0.15 \
    --out="$work/synthetic"

bazel-bin/server/graphstored --partition="$work/synthetic" --port=0 --port_file="$work/port" \
    > "$work/graphstored.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { echo "graphstored did not start:"; cat "$work/graphstored.log"; exit 1; }
port=$(cat "$work/port")
echo "graphstored is serving on 127.0.0.1:$port (log: $work/graphstored.log)"

bazel-bin/client/train_sage --servers="127.0.0.1:$port" --epochs=5 --shutdown_servers

status=0
wait $server || status=$?
trap - EXIT
if [ "$status" -ne 0 ]; then
  echo "graphstored exited with status $status"; tail -20 "$work/graphstored.log"; exit 1
fi
echo "graphstored stopped cleanly:"
tail -3 "$work/graphstored.log"
