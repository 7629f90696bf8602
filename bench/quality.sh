#!/usr/bin/env bash
# Training quality, three parts (PARTS picks them; all by default):
#
#   global     one trainer reading 1 server, and 2- and 4-partition METIS clusters of a graph
#              whose METIS parts follow the labels (16 planted communities, label = community,
#              weak features): GraphSAGE's final validation accuracy per cluster and seed, with
#              global batches (the default) and with each server batching its own seeds, and
#              each batch's label mix (the total variation distance between its seed labels'
#              histogram and the epoch's), against one server. Targets: the clusters' accuracy
#              within 0.01 of one server's (mean of the seeds), their mean label-mix distance at
#              most 1.2 x one server's.
#   encodings  the GraphSAGE example on the demo's synthetic graph (2 partitions) per feature
#              encoding: the last epoch's validation accuracy.
#   linkpred   the link predictor on MovieLens 100k (2 partitions) per encoding: recall@20. Its
#              batches arrive from two servers in arrival order, so its recall varies from run
#              to run; SEEDS="1 2 3 4 5" repeats it per seed to show the spread.
#
#   bash bench/quality.sh
#   PARTS=global SEEDS="1 2 3" bash bench/quality.sh
#   PARTS=encodings SEEDS="1 2 3" ENCODINGS="float32 int8" bash bench/quality.sh
set -euo pipefail
cd "$(dirname "$0")/.."

parts=${PARTS:-"global encodings linkpred"}
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

# The last epoch's "val acc" and "label mix distance" of a train_sage run.
last_epoch() { awk '/^epoch/ {for (i = 1; i <= NF; i++) {if ($i == "val") v = $(i + 2); if ($i == "distance") d = $(i + 1)}}
                    END {sub(/\)/, "", d); print v, d}'; }

global_part() {
  local s g nodes=${GLOBAL_NODES:-100000}
  echo "GraphSAGE through one trainer, ${nodes}-node graph of 16 planted communities (label = community, feature"
  echo "signal 0.1), METIS partitions, 3 epochs, batch 1024, fanouts [10, 5]: final val acc | label mix distance"
  for p in 1 2 4; do
    bazel-bin/tools/graphstore-generate --nodes="$nodes" --feature_dim=32 --classes=16 --feature_signal=0.1 \
        --partitions=$p --method=metis --seed=5 --out="$work/global-$p" >/dev/null
  done
  declare -A acc mix
  for p in 1 2 4; do
    cluster=$(deploy/local/cluster.sh start "$work/global-$p" "$work/run-global-$p")
    for g in true false; do
      [[ $p == 1 && $g == false ]] && continue
      for s in $seeds; do
        read -r a d < <(bazel-bin/client/train_sage --servers="$cluster" --epochs=3 --batch_size=1024 --fanouts=10,5 \
                          --seed="$s" --global_batches=$g | last_epoch)
        acc[$p,$g]+="$a "
        mix[$p,$g]+="$d "
      done
    done
    deploy/local/cluster.sh stop "$work/run-global-$p" >/dev/null
  done
  mean() { python3 -c "import sys; v=[float(x) for x in sys.argv[1:]]; print(f'{sum(v)/len(v):.4f}')" "$@"; }
  local base_acc base_mix
  base_acc=$(mean ${acc[1,true]})
  base_mix=$(mean ${mix[1,true]})
  printf "  %-34s %-26s %8s %10s %12s %8s\n" setup "val acc per seed" "mean" "vs 1 srv" "mix dist" "ratio"
  for key in 1,true 2,true 4,true 2,false 4,false; do
    local p=${key%,*} g=${key#*,} name
    name=$([[ $p == 1 ]] && echo "1 server" || echo "$p partitions, $([[ $g == true ]] && echo global || echo owner-only) batches")
    local a m
    a=$(mean ${acc[$key]})
    m=$(mean ${mix[$key]})
    printf "  %-34s %-26s %8s %+10.4f %12s %8.2f\n" "$name" "${acc[$key]}" "$a" \
        "$(python3 -c "print($a - $base_acc)")" "$m" "$(python3 -c "print($m / max($base_mix, 1e-9))")"
  done
}

encodings_part() {
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
}

linkpred_part() {
movielens=${GRAPHSTORE_SHARED_DATA:-$PWD/../shared/data}/ml-100k
if [[ ! -f $movielens/u.data ]]; then
  echo "no MovieLens 100k at $movielens: skipping the link predictor"
  return 0
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
}

for part in $parts; do
  case $part in
    global) global_part ;;
    encodings) encodings_part ;;
    linkpred) linkpred_part ;;
    *) echo "quality.sh: unknown part '$part' (global, encodings, linkpred)" >&2; exit 2 ;;
  esac
done
