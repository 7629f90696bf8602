#!/usr/bin/env bash
# Runs every test: installs what is missing, builds with Bazel (offline), runs `bazel test`
# over the whole workspace, and ends with the count of test cases: "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."

bash tools/setup.sh || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }

# The shared datasets sit beside the repository; a local clone elsewhere (e.g. in /tmp) finds
# them beside the repository it was cloned from. An exported GRAPHSTORE_SHARED_DATA wins.
if [ -z "${GRAPHSTORE_SHARED_DATA:-}" ]; then
  for base in "$(cd .. && pwd)" "$(git config --get remote.origin.url 2>/dev/null)/.."; do
    if [ -d "$base/shared/data" ]; then
      export GRAPHSTORE_SHARED_DATA="$(cd "$base/shared/data" && pwd)"
      break
    fi
  done
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
bazel test --keep_going --test_summary=short "$@" //... 2>&1 | tee "$log"
status=${PIPESTATUS[0]}

python3 tools/count_tests.py "$(bazel info bazel-testlogs 2>/dev/null)" "$log"
count_status=$?
if [ "$status" -ne 0 ] || [ "$count_status" -ne 0 ]; then exit 1; fi
exit 0
