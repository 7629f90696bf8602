#!/usr/bin/env bash
# The Python package in the two environments it is built for, each from its own wheel:
#
#   debian12  Debian 12's Python 3.11 and python3-torch 1.13 (this machine), in a venv
#   debian13  Python 3.13 and python3-torch 2.6 in a Debian 13 root made with mmdebstrap from
#             the mirror this machine's apt sources name
#
# For each: build the wheel once for that interpreter (python/_build/build_wheel.py), install it
# with pip (offline), and run tests/python's loader test against the installed package; at the
# end, compare the counts. The servers and tools the test starts are this checkout's Bazel
# build; in the Debian 13 root they run with this machine's own loader and libraries (copied
# into the root). Needs root (chroot, mounts). Takes about 10 minutes, 4 of them
# making the Debian 13 root the first time (kept in $GRAPHSTORE_ENVS, default
# ~/.cache/graphstore-envs; delete it to start afresh).
#
#   bash tools/test_envs.sh                    # both
#   bash tools/test_envs.sh debian13           # one
#   bash tools/test_envs.sh --bench [ENV ...]  # and bench/python_bench.py in each (~3 min more each)
#   GRAPHSTORE_BENCH_PAIRS=16 GRAPHSTORE_BENCH_CONFIGS=socket-64 bash tools/test_envs.sh --bench debian13
#                                              # more pairs of fewer configurations
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
ENVS=${GRAPHSTORE_ENVS:-$HOME/.cache/graphstore-envs}
ROOTFS=$ENVS/trixie
WHEELS=$ENVS/wheels
BENCH=0
if [ "${1:-}" = --bench ]; then BENCH=1; shift; fi
WANT=("${@:-debian12 debian13}")
WANT=(${WANT[*]})
BENCH_ARGS=(--pairs="${GRAPHSTORE_BENCH_PAIRS:-8}" --configs="${GRAPHSTORE_BENCH_CONFIGS:-socket-1024,shm-1024,socket-64,shm-64}"
  --installed)
start=$(date +%s)

bash tools/setup.sh
for p in mmdebstrap patchelf python3-venv; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$p" >/dev/null
done
source tools/shared_data.sh
export GRAPHSTORE_SHARED_DATA

# The Debian mirror this machine's apt sources name (deb822 .sources or one-line lists).
mirror() {
  local uri
  uri=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | grep -v security | head -1)
  [ -n "$uri" ] || uri=$(grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list |
                         awk '{print $2}' | grep -v security | head -1)
  [ -n "$uri" ] || { echo "test_envs: no Debian mirror in /etc/apt/sources*" >&2; exit 2; }
  echo "$uri"
}

# The test's runfiles (binaries, scripts, the package tree) and the extension for Python 3.11.
bazel build //tests/python:python_loader_test >/dev/null 2>&1 || bazel build //tests/python:python_loader_test
RUNFILES=$(readlink -f bazel-bin/tests/python/python_loader_test.runfiles/graphstore)
mkdir -p "$WHEELS"
declare -A COUNT

run_debian12() {
  echo "== debian12: Python 3.11, torch 1.13 =="
  local venv=$ENVS/venv311
  rm -rf "$venv" "$WHEELS"/graphstore-*-cp311-*.whl
  /usr/bin/python3 -m venv --system-site-packages "$venv"
  # Here the wheel comes through pip and the package's own PEP 517 backend.
  "$venv/bin/pip" wheel --quiet --no-index --no-deps -w "$WHEELS" ./python
  "$venv/bin/pip" install --quiet --no-index "$WHEELS"/graphstore-*-cp311-*.whl
  local log=$ENVS/debian12.log
  : >"$log"
  for t in python_loader_test write_dataset_test; do
    (cd "$RUNFILES" && GRAPHSTORE_TEST_INSTALLED=1 XML_OUTPUT_FILE=$ENVS/debian12-$t.xml \
       PYTHONPATH="$RUNFILES/tests/python" "$venv/bin/python" tests/python/$t.py) >>"$log" 2>&1 ||
      { tail -40 "$log"; echo "debian12: tests failed (log: $log)"; exit 1; }
  done
  COUNT[debian12]=$(cat "$ENVS"/debian12-*.xml | grep -o '<testcase' | wc -l)
  tail -3 "$log"
  if [ "$BENCH" = 1 ]; then
    bazel build //server:graphstored //tools:graphstore-generate >/dev/null 2>&1
    (cd /tmp && "$venv/bin/python" "$REPO/bench/python_bench.py" "${BENCH_ARGS[@]}" --bin="$REPO/bazel-bin" \
       --cache=/tmp/graphstore-bench)
  fi
}

make_root() {
  [ -x "$ROOTFS/usr/bin/python3.13" ] && return
  echo "making the Debian 13 root in $ROOTFS from $(mirror) (a few minutes)"
  rm -rf "$ROOTFS"
  mmdebstrap --variant=apt --quiet \
    --include=python3,python3-torch,python3-numpy,python3-protobuf,python3-grpcio,python3-dev,pybind11-dev,python3-venv,python3-pip,binutils,openssl \
    trixie "$ROOTFS" "$(mirror)"
}

MOUNTS=()
unmount_all() {
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount -l "${MOUNTS[$i]}" 2>/dev/null || true; done
}
trap unmount_all EXIT
bind() {  # bind SOURCE TARGET [ro]
  mkdir -p "$2"
  mount --bind "$1" "$2"
  MOUNTS+=("$2")
  if [ "${3:-}" = ro ]; then mount -o remount,bind,ro "$2"; fi
}

# A copy of the runfiles in the root whose ELF programs (graphstored, the tools, the C++
# reference the test starts) run with this machine's loader and libraries, copied to /gs/lib.
stage_runfiles() {
  local dest=$ROOTFS/gs/runfiles lib=$ROOTFS/gs/lib f
  rm -rf "$ROOTFS/gs"
  mkdir -p "$dest" "$lib"
  cp -rL "$RUNFILES/." "$dest/"
  cp -L "$(readlink -f /lib64/ld-linux-x86-64.so.2)" "$lib/ld-linux-x86-64.so.2"
  while IFS= read -r f; do
    [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] && [ -x "$f" ] || continue
    case "$f" in *.so | *.so.*) continue ;; esac
    ldd "$f" | awk '/=> \//{print $1, $3}' | while read -r name path; do
      [ -e "$lib/$name" ] || cp -L "$path" "$lib/$name"
    done
    mv "$f" "$f.elf"
    printf '#!/bin/sh\nexec /gs/lib/ld-linux-x86-64.so.2 --library-path /gs/lib "$0.elf" "$@"\n' >"$f"
    chmod +x "$f"
  done < <(find "$dest" -type f)
  # The Python package tree Bazel built stays out of the way: the test imports the wheel.
  rm -rf "$dest/python/site"
}

run_debian13() {
  echo "== debian13: Python 3.13, torch 2.6 =="
  make_root
  rm -f "$WHEELS"/graphstore-*-cp313-*.whl
  /usr/bin/python3 python/_build/build_wheel.py --python-include="$ROOTFS/usr/include/python3.13" \
    --pybind11-include="$ROOTFS/usr/include" --ext-suffix=.cpython-313-x86_64-linux-gnu.so \
    --tag=cp313-cp313-linux_x86_64 --out="$WHEELS" >/dev/null
  mkdir -p "$ROOTFS/proc" && mount -t proc proc "$ROOTFS/proc" && MOUNTS+=("$ROOTFS/proc")
  bind /dev "$ROOTFS/dev"
  bind /dev/shm "$ROOTFS/dev/shm"
  if [ -n "${GRAPHSTORE_SHARED_DATA:-}" ] && [ -d "$GRAPHSTORE_SHARED_DATA" ]; then
    bind "$GRAPHSTORE_SHARED_DATA" "$ROOTFS/gs-data" ro
  fi
  stage_runfiles
  local wheel
  wheel=$(basename "$(ls "$WHEELS"/graphstore-*-cp313-*.whl)")
  mkdir -p "$ROOTFS/gs/wheels" && cp "$WHEELS/$wheel" "$ROOTFS/gs/wheels/"
  chroot "$ROOTFS" python3 -m venv --system-site-packages /gs/venv
  chroot "$ROOTFS" /gs/venv/bin/pip install --quiet --no-index "/gs/wheels/$wheel"
  local log=$ENVS/debian13.log
  : >"$log"
  for t in python_loader_test write_dataset_test; do
    chroot "$ROOTFS" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root GRAPHSTORE_TEST_INSTALLED=1 \
      GRAPHSTORE_SHARED_DATA=/gs-data XML_OUTPUT_FILE=/gs/debian13-$t.xml PYTHONPATH=/gs/runfiles/tests/python \
      /bin/sh -c "cd /gs/runfiles && exec /gs/venv/bin/python tests/python/$t.py" >>"$log" 2>&1 ||
      { tail -40 "$log"; echo "debian13: tests failed (log: $log)"; exit 1; }
  done
  COUNT[debian13]=$(cat "$ROOTFS"/gs/debian13-*.xml | grep -o '<testcase' | wc -l)
  tail -3 "$log"
  if [ "$BENCH" = 1 ]; then
    mkdir -p /tmp/graphstore-bench && bind /tmp/graphstore-bench "$ROOTFS/gs-bench"
    cp bench/python_bench.py "$ROOTFS/gs/python_bench.py"
    chroot "$ROOTFS" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root /gs/venv/bin/python /gs/python_bench.py \
      "${BENCH_ARGS[@]}" --bin=/gs/runfiles --cache=/gs-bench
  fi
  unmount_all
  MOUNTS=()
}

for env in "${WANT[@]}"; do
  case "$env" in
    debian12) run_debian12 ;;
    debian13) run_debian13 ;;
    *) echo "test_envs: unknown environment '$env' (debian12, debian13)" >&2; exit 2 ;;
  esac
done
# A build for another Python has outputs of its own: the default package tree still imports here.
if [ -f bazel-bin/python/site/graphstore/_graphstore.so ]; then
  /usr/bin/python3 -c 'import sys; sys.path.insert(0, "bazel-bin/python/site"); import graphstore._graphstore' ||
    { echo "test_envs: bazel-bin/python/site no longer imports under Debian 12's Python" >&2; exit 1; }
fi
for env in "${WANT[@]}"; do echo "$env: ${COUNT[$env]} tests passed"; done
if [ "${#WANT[@]}" -eq 2 ] && [ "${COUNT[debian12]}" != "${COUNT[debian13]}" ]; then
  echo "test_envs: the environments ran different numbers of tests" >&2
  exit 1
fi
echo "test_envs: done in $(( $(date +%s) - start )) s"
