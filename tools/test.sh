#!/usr/bin/env bash
# Runs every test: installs what is missing, builds with Bazel (offline), runs `bazel test`
# over the whole workspace, and ends with the count of test cases: "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."

bash tools/setup.sh || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }

# The shared datasets (an exported GRAPHSTORE_SHARED_DATA wins).
source tools/shared_data.sh

log=$(mktemp)
fuzz_report=$(mktemp)
trap 'rm -f "$log" "$fuzz_report"' EXIT
bazel test --keep_going --test_summary=short "$@" //... 2>&1 | tee "$log"
status=${PIPESTATUS[0]}

# Every libFuzzer target for a few seconds from its seed corpus, so that a regression in the
# readers or the request validation surfaces here (longer runs: bash tests/fuzz/run.sh 600).
bash tests/fuzz/run.sh "${GRAPHSTORE_FUZZ_SECONDS:-5}" "$fuzz_report" || status=1

python3 tools/count_tests.py "$(bazel info bazel-testlogs 2>/dev/null)" "$log" "$fuzz_report"
count_status=$?
if [ "$status" -ne 0 ] || [ "$count_status" -ne 0 ]; then exit 1; fi
exit 0
