#!/usr/bin/env bash
# Packs what tools/gpu_check.sh needs on a GPU machine that has Python, torch and
# torch_geometric but no apt and no network: graphstore's wheels (one per Python this machine
# has headers for: Debian's 3.11, and 3.12 / 3.13 where a pyenv or the Debian 13 root of
# tools/test_envs.sh has them), graphstored, graphstore-generate, bench/stream_bench and
# iproute2's ip and tc with every library they load and this machine's dynamic loader, and the
# TLS tests' certificates (that machine may have no openssl). Writes .gpu-bundle/ (git ignores it; the device tool
# carries it: carry=[".gpu-bundle"]); tools/device_check.sh runs what is in it.
#
#   bash tools/gpu_bundle.sh          # wheels for 3.11, 3.12 and 3.13
#   bash tools/gpu_bundle.sh 312      # only the wheel for that Python (the device tool carries
#                                     # 64 MiB at most; three wheels and the libraries are over it)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=.gpu-bundle
rm -rf "$OUT"
mkdir -p "$OUT/wheels" "$OUT/bin" "$OUT/lib"

bash tools/setup.sh
command -v patchelf >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq patchelf >/dev/null
bazel build //server:graphstored //tools:graphstore-generate //bench:stream_bench >/dev/null

# A wheel for every Python whose headers are here.
wheel() {  # wheel INCLUDE PYBIND11_INCLUDE VERSION (e.g. 312)
  [ -f "$1/Python.h" ] || return 0
  /usr/bin/python3 python/_build/build_wheel.py --python-include="$1" --pybind11-include="$2" \
    --ext-suffix=".cpython-$3-x86_64-linux-gnu.so" --tag="cp$3-cp$3-linux_x86_64" --out="$OUT/wheels" >/dev/null
  echo "wheel for Python ${3:0:1}.${3:1}"
}
PYTHONS=" ${*:-311 312 313} "
[[ $PYTHONS == *" 311 "* ]] && wheel /usr/include/python3.11 /usr/include 311
for v in 12 13; do
  [[ $PYTHONS == *" 3$v "* ]] || continue
  for include in "$HOME"/.pyenv/versions/3.$v.*/include/python3.$v; do
    [ -d "$include" ] && wheel "$include" /usr/include "3$v" && break
  done
done
TRIXIE=${GRAPHSTORE_ENVS:-$HOME/.cache/graphstore-envs}/trixie
[[ $PYTHONS != *" 313 "* ]] || ls "$OUT"/wheels/*cp313* >/dev/null 2>&1 ||
  wheel "$TRIXIE/usr/include/python3.13" "$TRIXIE/usr/include" 313

# The programs, run through this machine's loader with their libraries beside them.
cp -L "$(readlink -f /lib64/ld-linux-x86-64.so.2)" "$OUT/lib/ld-linux-x86-64.so.2"
# iproute2's ip, tc and ss too: bench/fleet_bench.py's namespaces, shaping and socket counts, on a
# machine without them.
for prog in bazel-bin/server/graphstored bazel-bin/tools/graphstore-generate bazel-bin/bench/stream_bench \
    /usr/sbin/ip /usr/sbin/tc /usr/bin/ss; do
  name=$(basename "$prog")
  cp -L "$prog" "$OUT/bin/$name.elf"
  strip --strip-debug "$OUT/bin/$name.elf"
  ldd "$prog" | awk '/=> \//{print $1, $3}' | while read -r soname path; do
    [ -e "$OUT/lib/$soname" ] || cp -L "$path" "$OUT/lib/$soname"
  done
  printf '#!/bin/sh\nd=$(dirname "$0")\nexec "$d/../lib/ld-linux-x86-64.so.2" --library-path "$d/../lib" "$d/%s.elf" "$@"\n' \
    "$name" >"$OUT/bin/$name"
  chmod +x "$OUT/bin/$name"
done
strip --strip-unneeded "$OUT"/lib/*.so* 2>/dev/null || true
bash tests/security/make_certs.sh "$PWD/$OUT/certs" >/dev/null
du -sh "$OUT"
