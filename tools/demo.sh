#!/usr/bin/env bash
# The main job: set up, build, generate the default dataset and validate it.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/setup.sh
bazel build //tools:all
data=${GRAPHSTORE_DEMO_DIR:-/tmp/graphstore-demo}
rm -rf "$data"
bazel-bin/tools/graphstore-generate --nodes=20000 --feature_dim=32 --classes=8 --out="$data/synthetic"
bazel-bin/tools/graphstore-inspect --partition="$data/synthetic"
