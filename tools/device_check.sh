#!/usr/bin/env bash
# What only a larger machine measures, in one run: on a GPU host of 16 cores whose Python has
# torch (CUDA) and torch_geometric but no apt and no network. From .gpu-bundle/ (tools/gpu_bundle.sh
# where the build runs; the device tool carries it: carry=[".gpu-bundle"]):
#
#   env      the machine: cores, GPU, Python, torch, torch_geometric, netns and tbf
#   gpu      tools/gpu_check.sh (GraphSAGE on the GPU, device batches, host-to-device GB/s)
#   pyg      tests/python/pyg_backend_test.py against the installed torch_geometric, no stand-ins
#   pygbench bench/pyg_bench.py, PyG's in-memory NeighborLoader line included
#   fleet    bench/fleet_bench.py, a core group per host (--cores_per_host): N = 1 and 4, 2 cores a host
#   fleet8   the same at N = 8 with W = 8 (16 hosts, a core each, 100 Mbit/s links)
#   rtt      the same at N = 4 with a round trip of 0.1 and 1 ms by netem, or where the kernel has no
#            netem, of +0 and +1 ms through bench/delay_relay.py in front of every server
#   stream   bench/stream_bench sections n and t: striped streams and TLS with 8 sampling workers
#
# Each section's log goes to $OUT/NAME.log (the device tool brings $OUT back; else
# /tmp/graphstore-device); each is cut at its own limit and at what is left of BUDGET seconds.
#
#   BUDGET=480 bash tools/device_check.sh [SECTION ...]
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
BUNDLE=$REPO/${GRAPHSTORE_GPU_BUNDLE:-.gpu-bundle}
OUT=${OUT:-/tmp/graphstore-device}
BUDGET=${BUDGET:-480}
PY=${PYTHON:-python3}
SECTIONS=${*:-env gpu pyg pygbench fleet fleet8 rtt stream}
T0=$(date +%s)
mkdir -p "$OUT"
[ -d "$BUNDLE" ] || { echo "device_check: no $BUNDLE (bash tools/gpu_bundle.sh 312)" >&2; exit 2; }

# A tree laid out as bazel-bin (what the benches and the tests look for) over the bundle.
TREE=/tmp/graphstore-tree
rm -rf "$TREE" && mkdir -p "$TREE/server" "$TREE/tools" "$TREE/bench" "$TREE/python" "$TREE/sbin"
wrap() {  # wrap PATH: $TREE/PATH runs the bundle's program of that name
  printf '#!/bin/sh\nexec "%s/bin/%s" "$@"\n' "$BUNDLE" "$(basename "$1")" >"$TREE/$1"
  chmod +x "$TREE/$1"
}
for prog in server/graphstored tools/graphstore-generate bench/stream_bench; do wrap "$prog"; done
for prog in ip tc; do  # iproute2 where the machine has none (the fleet's namespaces and links)
  command -v "$prog" >/dev/null || wrap "sbin/$prog"
done
export PATH=$PATH:$TREE/sbin
tag=$("$PY" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
wheel=$(ls "$BUNDLE"/wheels/graphstore-*-"$tag"-"$tag"-linux_x86_64.whl 2>/dev/null | head -1)
[ -n "$wheel" ] || { echo "device_check: no wheel for $tag in $BUNDLE/wheels" >&2; exit 2; }
"$PY" -m pip install --quiet --no-index --no-deps --target "$TREE/python/site" "$wheel" ||
  { echo "device_check: pip could not install $wheel" >&2; exit 2; }
export GRAPHSTORE_BIN=$TREE PYTHONUNBUFFERED=1

left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
section() {  # section NAME LIMIT COMMAND...: runs it within LIMIT and what is left, log to $OUT/NAME.log
  local name=$1 limit=$2 rest
  shift 2
  rest=$(left)
  (( rest < limit )) && limit=$rest
  if (( limit < 10 )); then echo "== $name: skipped, budget spent"; return; fi
  echo "== $name (limit $limit s, at $(( $(date +%s) - T0 )) s)"
  timeout -k 5 "$limit" bash -c '"$@"' _ "$@" >"$OUT/$name.log" 2>&1  # bash: the functions too
  echo "== $name: exit $? after $(( $(date +%s) - T0 )) s"
  grep -v '^\s*$' "$OUT/$name.log" | tail -n "${TAIL:-25}"
}

env_info() {
  echo "cores $(nproc), memory $(awk '/MemTotal/{print int($2/1048576)}' /proc/meminfo) GiB, kernel $(uname -r)"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -2
  "$PY" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())'
  "$PY" -c 'import torch_geometric as g; print("torch_geometric", g.__version__)' 2>&1 | tail -1
  ip netns add gsd-probe 2>&1 && echo "netns: yes" || echo "netns: no"
  tc -n gsd-probe qdisc add dev lo root tbf rate 100mbit burst 64kb latency 50ms 2>&1 && echo "tbf: yes"
  ip netns del gsd-probe 2>/dev/null
}

rtt() {  # netem where the kernel has it, else a relay that holds each byte (bench/delay_relay.py)
  if ip netns add gsd-rtt 2>/dev/null && tc -n gsd-rtt qdisc add dev lo root netem delay 1ms 2>/dev/null; then
    ip netns del gsd-rtt
    for ms in 0.1 1; do
      "$PY" bench/fleet_bench.py --cases=4x4 --cores_per_host=2 --warmup=8 --seconds=26 --rtt_ms="$ms" \
        --cache=/tmp/graphstore-fleet || return
    done
  else
    ip netns del gsd-rtt 2>/dev/null
    "$PY" bench/fleet_bench.py --cases=4x4 --cores_per_host=2 --warmup=8 --seconds=26 --relay_rtt_ms=0,1 \
      --cache=/tmp/graphstore-fleet
  fi
}

export -f env_info rtt
export PY

for s in $SECTIONS; do
  case $s in
    env) section env 30 env_info ;;
    gpu) section gpu 200 env PYTHON="$PY" bash tools/gpu_check.sh ;;
    pyg) (cd "$TREE" && section pyg 120 env GRAPHSTORE_PYG=installed PYTHONPATH="$REPO/tests/python" \
            "$PY" "$REPO/tests/python/pyg_backend_test.py") ;;
    pygbench) section pygbench 100 "$PY" bench/pyg_bench.py --rounds=3 ;;
    # 26 s windows: 12 s ones hold too few batches a trainer for its share, and the send
    # share's first probe (2 s holding no one) falls inside them.
    fleet) section fleet 200 "$PY" bench/fleet_bench.py --cases=1x1,1x4,4x4 --cores_per_host=2 --warmup=8 \
             --seconds=26 --cache=/tmp/graphstore-fleet ;;
    fleet8) section fleet8 150 "$PY" bench/fleet_bench.py --cases=1x8,8x8 --cores_per_host=1 --rate_mbit=100 \
              --warmup=8 --seconds=26 --cache=/tmp/graphstore-fleet ;;
    rtt) section rtt 160 rtt ;;
    stream) section stream 150 "$TREE/bench/stream_bench" --sections=n,t --connections=1,2,4 --seconds=3 \
              --trials=2 --workers=8 --tls_certs="$BUNDLE/certs" ;;
    *) echo "device_check: no section $s" >&2 ;;
  esac
done
echo "device_check: done in $(( $(date +%s) - T0 )) s"
