#!/usr/bin/env bash
# Installs every Debian package graphstore needs to build, test and run. Idempotent: when
# everything is present it only checks and returns.
set -euo pipefail

PACKAGES=(
  bazel-bootstrap         # the build (Bazel 4.2.3, works offline with third_party/ stand-ins)
  g++                     # compiler
  pkg-config
  protobuf-compiler       # protoc
  libprotobuf-dev
  protobuf-compiler-grpc  # grpc_cpp_plugin
  libgrpc++-dev           # gRPC C++ (health checking, reflection)
  libspdlog-dev           # logging
  catch2                  # tests (v2, single header)
  libtorch-dev            # LibTorch for the client and the example trainers (CPU)
  libmetis-dev            # METIS partitioning
  python3                 # test-result counting in tools/test.sh, the local cluster launcher
  python3-yaml            # the Kubernetes manifest check (tests/e2e/k8s_manifest_test.py)
  python3-dev             # CPython headers for the Python package's extension module (python/)
  pybind11-dev            # the extension's bindings
  libdlpack-dev           # DLPack: how the extension hands tensors to any torch
  patchelf                # the wheel's bundled libraries (python/_build/build_wheel.py)
  python3-venv            # pip install ./python into a virtual environment
  python3-torch           # PyTorch for Python trainers: the same LibTorch build as libtorch-dev
  python3-protobuf        # graphstore.v1 message stubs (python/)
  python3-grpcio          # graphstore.v1 service stubs, used by operators' scripts and tests
  python3-numpy           # the Python tests read partitions' .npy arrays
  prometheus-cpp-dev      # graphstored's metrics endpoint (--metrics_port)
  libssl-dev              # OpenSSL headers: certificate checks at start-up, token digests
  openssl                 # the TLS tests make their certificates at test time
  jq                      # the grpcurl examples of docs/operations.md (tests/docs/)
  clang                   # the libFuzzer targets (tests/fuzz/run.sh)
  libclang-rt-14-dev      # libFuzzer and AddressSanitizer runtimes for clang 14
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "setup: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
