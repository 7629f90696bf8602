#!/usr/bin/env bash
# Partitioning graphs larger than memory: graphstore-partition on generated npy edge lists,
# each run's edge cut, balance, wall time, peak RSS and disk, beside its baselines in the same
# run (METIS's cut for the other methods; the in-memory path's time and memory for the bounded
# one).
#
#   bash bench/partition_bench.sh                   # the products-like graph (2.45M nodes, 125M edges,
#                                                   # 100 features): metis and random in memory, stream
#                                                   # within the default budget, random within 4096 MiB
#   GRAPH=1b bash bench/partition_bench.sh          # 25M nodes, ~1.02B edges, no features: random and
#                                                   # stream in 2 and 8 within --memory_mb=4096
#   RUNS="stream:2:4096 random:8:4096" GRAPH=1b bash bench/partition_bench.sh
#
# Each run is METHOD:PARTS:MEMORY_MB[:bounded] (MEMORY_MB 0: the tool's default, a quarter of
# the host's memory). Inputs are generated once under $DIR (default /tmp/graphstore-bench/partition):
# the 1B graph takes 16 GB, and a run needs about 24 bytes per edge of scratch besides its output.
set -euo pipefail
cd "$(dirname "$0")/.."

graph=${GRAPH:-products}
dir=${DIR:-/tmp/graphstore-bench/partition}
case "$graph" in
  products) gen_flags="--preset=products"
            runs=${RUNS:-"metis:2:22000 stream:2:0 random:2:22000 random:2:4096:bounded"} ;;
  1b) gen_flags="--nodes=25000000 --avg_degree=41.5 --feature_dim=0 --classes=1000"
      runs=${RUNS:-"random:2:4096 random:8:4096 stream:8:4096"} ;;
  *) echo "GRAPH must be products or 1b" >&2; exit 2 ;;
esac
bazel build //tools:graphstore-partition //tools:graphstore-generate >/dev/null 2>&1
bin=$(mktemp -d)
cp bazel-bin/tools/graphstore-partition bazel-bin/tools/graphstore-generate "$bin"/
trap 'rm -rf "$bin"' EXIT

input="$dir/$graph"
if [ ! -e "$input/test.npy" ]; then
  echo "generating $graph into $input ..."
  "$bin"/graphstore-generate --format=npy $gen_flags --out="$input" >/dev/null 2>&1
fi
files="--edges=$input/src.npy,$input/dst.npy --labels=$input/labels.npy --train_ids=$input/train.npy"
files="$files --val_ids=$input/val.npy --test_ids=$input/test.npy"
[ -e "$input/features.npy" ] && files="$files --features=$input/features.npy"
edges=$(( ($(stat -c %s "$input/src.npy") - 128) / 8 ))
echo "graph $graph: $edges edges, inputs $(du -sm "$input" | cut -f1) MiB; $(nproc) cores, $(free -g | awk '/Mem/ {print $2}') GiB"

used_mb() { df -B1M --output=used "$dir" | tail -1; }
printf '%-8s %5s %8s %-8s %8s %9s %7s %7s %8s %9s %9s %8s\n' method parts budget path "cut %" "cut/METIS" nodes edges "wall s" "RSS MiB" "disk MiB" "out MiB"
metis_cut=""
for run in $runs; do
  IFS=: read -r method parts memory mode <<<"$run"
  out="$dir/out-$$"
  rm -rf "$out"
  log="$dir/run-$graph-$method-$parts-$memory${mode:+-$mode}.log"
  flags="--partitions=$parts --method=$method --tmp_dir=$dir --out=$out"
  [ "$memory" != 0 ] && flags="$flags --memory_mb=$memory"
  [ "$mode" = bounded ] && flags="$flags --bounded=always"
  base=$(used_mb); peak=$base
  /usr/bin/time -v "$bin"/graphstore-partition $files $flags >"$log" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do u=$(used_mb); [ "$u" -gt "$peak" ] && peak=$u; sleep 1; done
  wait "$pid" || { echo "$run failed: see $log"; continue; }
  cut=$(sed -n 's/.*edge cut: \([0-9]*\) of.*/\1/p' "$log")
  balance=$(sed -n 's/balance (largest \/ mean): nodes \([0-9.]*\), edges \([0-9.]*\)/\1 \2/p' "$log")
  wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$log" | awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }')
  rss=$(( $(sed -n 's/.*Maximum resident set size (kbytes): //p' "$log") / 1024 ))
  path=memory; grep -q "in passes within" "$log" && path=bounded
  [ "$method" = metis ] && metis_cut=$cut
  ratio="-"; [ -n "$metis_cut" ] && ratio=$(awk -v a="$cut" -v b="$metis_cut" 'BEGIN { printf "%.2f", a / b }')
  printf '%-8s %5s %8s %-8s %8s %9s %7s %7s %8.0f %9s %9s %8s\n' "$method" "$parts" "$memory" "$path" \
    "$(awk -v c="$cut" -v e="$edges" 'BEGIN { printf "%.2f", 100 * c / e }')" "$ratio" $balance "$wall" "$rss" \
    "$(( peak - base ))" "$(du -sm "$out" | cut -f1)"
  rm -rf "$out"
done
