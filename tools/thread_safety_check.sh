#!/usr/bin/env bash
# Compiles every source whose locks are annotated (ABSL_GUARDED_BY and friends, in the file or
# its own header) or that takes an absl::MutexLock, with clang's thread-safety analysis as errors: a member read or written
# without the lock that guards it, or a helper called without the lock it requires, fails the
# build. Run by the genrule //tests:thread_safety_check (bazel test //... runs it):
#
#   thread_safety_check.sh GENDIR OUTPUT SOURCE...
#
# GENDIR is Bazel's output directory (the generated protobuf headers lie under GENDIR/proto);
# OUTPUT lists the files checked. Needs Debian's clang (the fuzz targets use it too).
set -uo pipefail
gendir=$1
out=$2
shift 2
CXX=${CXX_THREAD_SAFETY:-clang++}
if ! command -v "$CXX" >/dev/null; then
  echo "thread safety: $CXX is missing (apt-get install clang)" >&2
  exit 1
fi
checked=()
for f in "$@"; do
  [[ $f == *.cc ]] || continue
  header=${f%.cc}.h
  if grep -q 'ABSL_GUARDED_BY\|ABSL_EXCLUSIVE_LOCKS_REQUIRED\|ABSL_LOCKS_EXCLUDED\|absl::MutexLock' "$f" ||
     { [ -f "$header" ] && grep -q 'ABSL_GUARDED_BY\|ABSL_EXCLUSIVE_LOCKS_REQUIRED\|ABSL_LOCKS_EXCLUDED' "$header"; }; then
    checked+=("$f")
  fi
done
if [ "${#checked[@]}" -eq 0 ]; then
  echo "thread safety: no annotated source among the inputs" >&2
  exit 1
fi
export CXX gendir
printf '%s\n' "${checked[@]}" |
  xargs -P "$(nproc)" -I{} sh -c '"$CXX" -std=c++17 -fsyntax-only -Wthread-safety -Werror=thread-safety \
      -Wno-unknown-warning-option -I. -I"$gendir/proto" "{}" || { echo "thread safety: {} fails the analysis" >&2; exit 255; }'
status=$?
[ "$status" -eq 0 ] || exit 1
printf '%s\n' "${checked[@]}" > "$out"
