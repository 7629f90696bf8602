# Sourced by tools/test.sh and tools/demo.sh: exports GRAPHSTORE_SHARED_DATA, the directory of
# the shared datasets (cora/, ml-100k/), when it is not set already. They sit beside the
# repository (../shared/data); a clone elsewhere (e.g. in /tmp) finds them beside the
# repository it was cloned from. Nothing is exported when neither has them.
if [ -z "${GRAPHSTORE_SHARED_DATA:-}" ]; then
  for base in "$(cd .. && pwd)" "$(git config --get remote.origin.url 2>/dev/null)/.."; do
    if [ -d "$base/shared/data" ]; then
      export GRAPHSTORE_SHARED_DATA="$(cd "$base/shared/data" && pwd)"
      break
    fi
  done
fi
