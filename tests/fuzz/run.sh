#!/usr/bin/env bash
# Builds the libFuzzer targets with Debian's clang (-fsanitize=fuzzer,address) and runs each
# for a bounded time from seed corpora the targets write from a generated dataset.
#
#   bash tests/fuzz/run.sh [SECONDS_PER_TARGET=60] [JUNIT_XML]
#
# Objects are cached by content in ~/.cache/graphstore-fuzz, so a second run (or a fresh
# clone of unchanged sources) only links. Prints executions and findings per target; exits 1
# when a target found a crash, a sanitizer report or an INTERNAL answer (the reproducer is
# kept under the work directory and named in the output). With JUNIT_XML, writes one
# <testcase> per target there.
set -uo pipefail
cd "$(dirname "$0")/../.."
SECONDS_PER_TARGET=${1:-60}
JUNIT=${2:-}
# GRAPHSTORE_FUZZ_TARGETS="request_fuzz" runs some of them.
TARGETS=(${GRAPHSTORE_FUZZ_TARGETS:-npy_fuzz manifest_fuzz partition_fuzz request_fuzz})
CACHE=${GRAPHSTORE_FUZZ_CACHE:-$HOME/.cache/graphstore-fuzz}
WORK=${GRAPHSTORE_FUZZ_WORK:-$(mktemp -d /tmp/graphstore-fuzz-run.XXXXXX)}
mkdir -p "$CACHE/obj" "$CACHE/proto" "$WORK/tmp"

CXX=${CXX_FUZZ:-clang++}
FLAGS=(-std=c++17 -O1 -g -fsanitize=fuzzer-no-link,address -fno-omit-frame-pointer -mavx2 -mf16c -mfma
       -I. -I"$CACHE/proto" -w)
# The sources the targets need: the closure of the service core and the generator, as Bazel
# lists it, so that a new source file of theirs is compiled here too.
mapfile -t SOURCES < <(bazel query --noshow_progress \
  'filter("^//(server|scheduler|proto|tools|common)[/:].*[.]cc$", kind("source file", deps(set(//server/service:core //tools:generator))))' \
  2>/dev/null | sed 's|^//||; s|:|/|')
if [ "${#SOURCES[@]}" -eq 0 ]; then
  echo "fuzz: bazel query listed no sources"
  exit 1
fi
LIBS=($(pkg-config --libs protobuf grpc++) -lspdlog -lfmt -lmetis -lpthread)

if ! command -v "$CXX" >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  echo "fuzz: clang with libFuzzer is missing (apt-get install clang libclang-rt-14-dev)"
  exit 1
fi

# Generated protobuf code, remade when a .proto changes.
proto_key=$(cat proto/graphstore/v1/*.proto | sha1sum | cut -c1-16)
if [ ! -f "$CACHE/proto/$proto_key.stamp" ]; then
  rm -rf "$CACHE/proto"/*
  /usr/bin/protoc -Iproto --cpp_out="$CACHE/proto" proto/graphstore/v1/types.proto \
    proto/graphstore/v1/manifest.proto proto/graphstore/v1/graphstore.proto || exit 1
  touch "$CACHE/proto/$proto_key.stamp"
fi
GENERATED=("$CACHE"/proto/graphstore/v1/{types,manifest,graphstore}.pb.cc)

# An object is reused while its source, every project header and the flags are unchanged.
headers_key=$( (echo "${FLAGS[*]}" "$CXX"; find server scheduler proto tools common tests/fuzz -name '*.h' | sort | xargs cat;
                cat "$CACHE"/proto/graphstore/v1/*.pb.h) | sha1sum | cut -c1-16)
# compile SOURCE: prints the object, compiling it unless cached.
export CXX CACHE headers_key
export FLAGS_STR="${FLAGS[*]}"
compile() {
  local src=$1 key obj
  key=$( (echo "$headers_key"; cat "$src") | sha1sum | cut -c1-16)
  obj="$CACHE/obj/$(basename "$src" .cc)-$key.o"
  local cxx="$CXX $FLAGS_STR"
  # The codec's runtime CPU checks use a feature name clang 14 does not know: gcc builds it,
  # uninstrumented (it only converts numbers between buffers it is given).
  [ "$src" = proto/feature_codec.cc ] && cxx="g++ -std=c++17 -O2 -g -I. -I$CACHE/proto -w"
  if [ ! -f "$obj" ]; then
    # shellcheck disable=SC2086
    $cxx -c "$src" -o "$obj.tmp.$$" && mv "$obj.tmp.$$" "$obj" || { echo "fuzz: cannot compile $src" >&2; return 1; }
  fi
  echo "$obj"
}
export -f compile

echo "fuzz: compiling (cached in $CACHE)"
objects=$(printf '%s\n' "${SOURCES[@]}" "${GENERATED[@]}" | xargs -P "$(nproc)" -I{} bash -c 'compile "$@"' _ {}) || exit 1
[ "$(echo "$objects" | wc -l)" -eq $(( ${#SOURCES[@]} + ${#GENERATED[@]} )) ] || { echo "fuzz: compilation failed"; exit 1; }

failed=0
cases=""
for t in "${TARGETS[@]}"; do
  main=$(compile "tests/fuzz/$t.cc") || exit 1
  bin="$WORK/$t"
  # shellcheck disable=SC2086
  $CXX -fsanitize=fuzzer,address "$main" $objects "${LIBS[@]}" -o "$bin" || { echo "fuzz: cannot link $t"; exit 1; }
  corpus="$WORK/$t-corpus"
  mkdir -p "$corpus"
  # The targets make their scratch directories under TMPDIR: inside WORK, so they go with it.
  TMPDIR="$WORK/tmp" GRAPHSTORE_FUZZ_SEEDS="$corpus" "$bin" >/dev/null 2>&1 || { echo "fuzz: $t wrote no seeds"; exit 1; }
  log="$WORK/$t.log"
  start=$(date +%s)
  TMPDIR="$WORK/tmp" ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 \
    "$bin" -max_total_time="$SECONDS_PER_TARGET" -timeout=20 -rss_limit_mb=4096 -max_len=4096 \
    -artifact_prefix="$WORK/$t-" -print_final_stats=1 "$corpus" >"$log" 2>&1
  rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  crash=$(ls "$WORK/$t-"crash-* "$WORK/$t-"timeout-* "$WORK/$t-"oom-* 2>/dev/null | head -1)
  secs=$(( $(date +%s) - start ))
  if [ "$rc" -ne 0 ] || [ -n "$crash" ]; then
    failed=1
    echo "fuzz: $t FOUND a failure after ${execs:-?} executions: ${crash:-see $log}"
    grep -m5 -E "ERROR|answered|Assertion|SUMMARY" "$log"
    cases+="<testcase name=\"$t\" classname=\"fuzz\" time=\"$secs\"><failure message=\"${crash:-exit $rc}\"/></testcase>"
  else
    echo "fuzz: $t ${execs:-0} executions in ${secs} s, corpus $(ls "$corpus" | wc -l) inputs, no crash"
    cases+="<testcase name=\"$t\" classname=\"fuzz\" time=\"$secs\"/>"
  fi
done
if [ -n "$JUNIT" ]; then
  echo "<testsuite name=\"fuzz\" tests=\"${#TARGETS[@]}\">$cases</testsuite>" >"$JUNIT"
fi
[ -z "${GRAPHSTORE_FUZZ_WORK:-}" ] && [ "$failed" -eq 0 ] && rm -rf "$WORK"
exit $failed
