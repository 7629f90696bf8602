#!/usr/bin/env bash
# graphstore on a GPU machine, in at most 5 minutes: installs the bundled wheel for the Python
# there (no network, no apt), starts a graphstored on a generated 1M-node graph, and prints
# GraphSAGE trained one epoch on the GPU from to_pyg(), batches/s with device="cuda" against
# the trainer's own .to("cuda") and against host batches, and the loader's host-to-device GB/s
# against torch's pinned copy (bench/gpu_check.py).
#
# Needs: python3 with torch (CUDA) and torch_geometric, a CUDA device, and .gpu-bundle/ from
# tools/gpu_bundle.sh (the device tool carries it: carry=[".gpu-bundle"]). Without one of them
# it refuses, naming what is missing (exit 2).
#
#   bash tools/gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
BUNDLE=${GRAPHSTORE_GPU_BUNDLE:-.gpu-bundle}
PY=${PYTHON:-python3}
WORK=$(mktemp -d)
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
refuse() { echo "gpu_check: $*" >&2; exit 2; }

command -v "$PY" >/dev/null || refuse "no $PY on PATH (set PYTHON=...)"
missing=$("$PY" - <<'EOF'
import importlib.util
need = [m for m in ("torch", "torch_geometric", "numpy") if importlib.util.find_spec(m) is None]
if "torch" not in need:
    import torch
    if not torch.cuda.is_available():
        need.append(f"a CUDA device (torch {torch.__version__}: torch.cuda.is_available() is False)")
print(", ".join(need))
EOF
)
[ -z "$missing" ] || refuse "this machine lacks $missing"
[ -d "$BUNDLE" ] || refuse "no $BUNDLE (make it with bash tools/gpu_bundle.sh where the build runs, carry it here)"
tag=$("$PY" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
wheel=$(ls "$BUNDLE"/wheels/graphstore-*-"$tag"-"$tag"-linux_x86_64.whl 2>/dev/null | head -1)
[ -n "$wheel" ] || refuse "no wheel for $tag in $BUNDLE/wheels ($(ls "$BUNDLE/wheels" | tr '\n' ' '))"

start=$(date +%s)
"$PY" -m pip install --quiet --no-index --no-deps --target "$WORK/site" "$wheel" || refuse "pip could not install $wheel"
echo "installed $(basename "$wheel") ($(( $(date +%s) - start )) s)"
"$BUNDLE/bin/graphstore-generate" --nodes=1000000 --avg_degree=15 --feature_dim=100 --classes=16 \
  --out="$WORK/graph" >/dev/null || refuse "graphstore-generate failed"
echo "generated a 1M-node graph ($(( $(date +%s) - start )) s)"
"$BUNDLE/bin/graphstored" --partition="$WORK/graph" --port=0 --port_file="$WORK/port" \
  --num_workers="$(( $(nproc) > 2 ? $(nproc) - 2 : 1 ))" >"$WORK/server.log" 2>&1 &
server=$!
for _ in $(seq 600); do
  [ -s "$WORK/port" ] && break
  kill -0 "$server" 2>/dev/null || { tail -5 "$WORK/server.log"; refuse "graphstored exited"; }
  sleep 0.1
done
[ -s "$WORK/port" ] || refuse "graphstored did not serve within 60 s"
PYTHONPATH="$WORK/site${PYTHONPATH:+:$PYTHONPATH}" timeout 240 "$PY" bench/gpu_check.py \
  --server="127.0.0.1:$(cat "$WORK/port")" --seconds=10
status=$?
echo "gpu_check: done in $(( $(date +%s) - start )) s (exit $status)"
exit $status
