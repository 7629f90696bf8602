#!/usr/bin/env bash
# Training quality per feature encoding: the GraphSAGE example on the demo's synthetic graph
# (2 partitions) and the link predictor on MovieLens 100k (2 partitions), each trained once per
# encoding on the same cluster. Prints the last epoch's validation accuracy / recall@20 per
# encoding. The link predictor's batches arrive from two servers in arrival order, so its
# recall varies from run to run; SEEDS="1 2 3 4 5" repeats it per seed to show the spread.
#
#   bash bench/quality.sh
#   SEEDS="1 2 3" ENCODINGS="float32 int8" bash bench/quality.sh
set -euo pipefail
cd "$(dirname "$0")/.."

seeds=${SEEDS:-3}
encodings=${ENCODINGS:-"float32 float16 bfloat16 int8"}
bazel build -c opt //server:graphstored //tools:all //client:train_sage //client:train_link_pred >/dev/null 2>&1

work=$(mktemp -d)
cleanup() {
  for run in "$work"/run-*; do
    [ -e "$run/cluster" ] && deploy/local/cluster.sh stop "$run" >/dev/null 2>&1 || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

bazel-bin/tools/graphstore-generate --nodes=50000 --feature_dim=32 --classes=10 --feature_signal=0.15 \
    --partitions=2 --method=metis --out="$work/synthetic" >/dev/null
cluster=$(deploy/local/cluster.sh start "$work/synthetic" "$work/run-sage")
echo "GraphSAGE, synthetic 50k nodes, 2 servers, 8 epochs: validation accuracy of the last epoch"
for seed in $seeds; do
  for enc in $encodings; do
    acc=$(bazel-bin/client/train_sage --servers="$cluster" --epochs=8 --seed="$seed" --feature_encoding="$enc" |
          awk '/^epoch/ {for (i = 1; i <= NF; i++) if ($i == "val") v = $(i + 2)} END {print v}')
    echo "  seed $seed  $enc: $acc"
  done
  acc=$(bazel-bin/client/train_sage --servers="$cluster" --epochs=8 --seed="$seed" --feature_encoding=int8 \
        --feature_cache_rows=5000 | awk '/^epoch/ {for (i = 1; i <= NF; i++) if ($i == "val") v = $(i + 2)} END {print v}')
  echo "  seed $seed  int8 + cache of 10 %: $acc"
done
deploy/local/cluster.sh stop "$work/run-sage" >/dev/null

movielens=${GRAPHSTORE_SHARED_DATA:-$PWD/../shared/data}/ml-100k
if [[ ! -f $movielens/u.data ]]; then
  echo "no MovieLens 100k at $movielens: skipping the link predictor"
  exit 0
fi
bazel-bin/tools/graphstore-movielens --input="$movielens" --partitions=2 --method=metis --out="$work/ml100k" >/dev/null
cluster=$(deploy/local/cluster.sh start "$work/ml100k" "$work/run-lp")
echo "link prediction, MovieLens 100k, 2 servers, 25 epochs: validation recall@20 of the last epoch"
for seed in $seeds; do
  for enc in $encodings; do
    r=$(bazel-bin/client/train_link_pred --servers="$cluster" --epochs=25 --seed="$seed" --feature_encoding="$enc" |
        awk '/^epoch/ {for (i = 1; i <= NF; i++) if ($i == "recall@20") v = $(i + 1)} END {print v}')
    echo "  seed $seed  $enc: $r"
  done
done
deploy/local/cluster.sh stop "$work/run-lp" >/dev/null
