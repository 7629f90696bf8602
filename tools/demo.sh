#!/usr/bin/env bash
# The main job: set up, build, generate the default dataset as two METIS partitions, start a
# two-server cluster on loopback (deploy/local/cluster.sh), train a GraphSAGE model through it
# for a few epochs from Python and from C++, and stop both servers cleanly. Then, when
# MovieLens 100k is beside the repository (../shared/data/ml-100k, read in place; a clone
# elsewhere finds it beside its origin, tools/shared_data.sh), the same for link prediction:
# convert it into two partitions and train a user -> movie link predictor through a two-server
# cluster, from Python and from C++.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/setup.sh
bazel build //server:graphstored //tools:all //client:train_sage //client:train_link_pred //python:graphstore
export PYTHONPATH=$PWD/bazel-bin/python/site${PYTHONPATH:+:$PYTHONPATH}

work=${GRAPHSTORE_DEMO_DIR:-/tmp/graphstore-demo}
if [[ -e $work/run/cluster ]]; then deploy/local/cluster.sh stop "$work/run" >/dev/null 2>&1 || true; fi
rm -rf "$work"
mkdir -p "$work"
bazel-bin/tools/graphstore-generate --nodes=50000 --feature_dim=32 --classes=10 --feature_signal=0.15 \
    --partitions=2 --method=metis --out="$work/synthetic"

# Each server knows the other; cluster.sh returns once both serve sampling.
cluster=$(deploy/local/cluster.sh start "$work/synthetic" "$work/run")
trap 'deploy/local/cluster.sh stop "$work/run" >/dev/null 2>&1 || true' EXIT
echo "graphstore cluster serving at $cluster (logs: $work/run/part-*.log)"

echo "== GraphSAGE from Python (python/examples/train_sage.py)"
/usr/bin/python3 python/examples/train_sage.py --servers="$cluster" --epochs=5
echo "== GraphSAGE from C++ (client/examples/train_sage.cc)"
bazel-bin/client/train_sage --servers="$cluster" --epochs=5

trap - EXIT
deploy/local/cluster.sh stop "$work/run"
echo "both servers stopped cleanly:"
for log in "$work"/run/part-*.log; do tail -1 "$log"; done

source tools/shared_data.sh
movielens=${GRAPHSTORE_SHARED_DATA:-$PWD/../shared/data}/ml-100k
if [[ ! -f $movielens/u.data ]]; then
  echo "no MovieLens 100k at $movielens: skipping the link-prediction part"
  exit 0
fi
bazel-bin/tools/graphstore-movielens --input="$movielens" --partitions=2 --method=metis --out="$work/ml100k"
cluster=$(deploy/local/cluster.sh start "$work/ml100k" "$work/run-lp")
trap 'deploy/local/cluster.sh stop "$work/run-lp" >/dev/null 2>&1 || true' EXIT
echo "graphstore cluster serving MovieLens at $cluster"
echo "== link prediction from Python (python/examples/train_link_pred.py)"
/usr/bin/python3 python/examples/train_link_pred.py --servers="$cluster" --epochs=25
echo "== link prediction from C++ (client/examples/train_link_pred.cc)"
bazel-bin/client/train_link_pred --servers="$cluster" --epochs=25
trap - EXIT
deploy/local/cluster.sh stop "$work/run-lp"
echo "both servers stopped cleanly:"
for log in "$work"/run-lp/part-*.log; do tail -1 "$log"; done
