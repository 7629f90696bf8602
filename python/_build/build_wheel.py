"""Builds graphstore's wheel for one Python interpreter.

The extension is compiled by Bazel against that interpreter's headers (bazel/python_headers.bzl
reads them from the environment), then the wheel is assembled as auditwheel would repair it:
every native library the extension needs beyond the C and C++ runtimes (gRPC, protobuf, abseil,
OpenSSL, ...) is copied into ``graphstore.libs/`` under a name of its own (so it cannot collide
with another copy in the process, e.g. grpcio's), and the extension and the copies find each
other through RPATH ``$ORIGIN``. The extension links no torch: one wheel per Python serves any
torch from 1.13 on.

Used by the in-tree PEP 517 backend (``pip install ./python``) for the interpreter pip runs
under, and from the command line for another interpreter's headers (tools/test_envs.sh)::

    python3 python/_build/build_wheel.py --python-include=ROOT/usr/include/python3.13 \\
        --pybind11-include=ROOT/usr/include --ext-suffix=.cpython-313-x86_64-linux-gnu.so \\
        --tag=cp313-cp313-linux_x86_64 --out=dist
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAME = "graphstore"
LIBS_DIR = f"{NAME}.libs"

# Libraries every Linux with a C++ runtime has (manylinux's policy): not bundled.
SYSTEM_LIBRARY = re.compile(r"^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libutil|libgcc_s|libstdc\+\+)\.so")


@dataclass
class Target:
    """The interpreter a wheel is for."""

    python_include: str  # directory with Python.h
    pybind11_include: str  # directory with pybind11/pybind11.h
    ext_suffix: str  # e.g. ".cpython-311-x86_64-linux-gnu.so"
    tag: str  # e.g. "cp311-cp311-linux_x86_64"

    @staticmethod
    def for_interpreter(include: str, ext_suffix: str, version_info) -> "Target":
        abi = f"cp{version_info[0]}{version_info[1]}"
        return Target(include, os.environ.get("GRAPHSTORE_PYBIND11_INCLUDE", "/usr/include"), ext_suffix,
                      f"{abi}-{abi}-linux_x86_64")


def _version() -> str:
    with open(os.path.join(REPO, "python", "pyproject.toml")) as f:
        return re.search(r'^version = "([^"]+)"', f.read(), re.M).group(1)


def _run(args, **kwargs) -> str:
    r = subprocess.run(args, capture_output=True, text=True, check=False, **kwargs)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({r.returncode}):\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}")
    return r.stdout


def _tool(name: str, package: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(f"building graphstore's wheel needs {name} (Debian package {package}; "
                           f"bash tools/setup.sh installs it)")
    return path


# The interpreter bazel/python_headers.bzl builds for when the environment names none: its
# package tree is the one the README points to (bazel-bin/python/site).
DEFAULT_PYTHON_INCLUDE = "/usr/include/python3.11"


def _bazel_build(target: Target) -> str:
    """Builds the package tree for `target`; returns the directory holding it.

    The default interpreter's tree is bazel-bin/python/site. Another interpreter's is built
    into an output directory of its own (Bazel's --platform_suffix, named by the wheel tag)
    without moving the bazel-* links, so the default tree stays as it was and still imports
    under the default Python.
    """
    if not os.path.isfile(os.path.join(REPO, "WORKSPACE")):
        raise RuntimeError(f"{REPO} is not a graphstore checkout: the wheel is built from the repository")
    env = dict(os.environ, GRAPHSTORE_PYTHON_INCLUDE=target.python_include,
               GRAPHSTORE_PYBIND11_INCLUDE=target.pybind11_include)
    bazel = _tool("bazel", "bazel-bootstrap")
    if os.path.normpath(target.python_include) == DEFAULT_PYTHON_INCLUDE:
        _run([bazel, "build", "//python:graphstore"], cwd=REPO, env=env)
        return os.path.join(REPO, "bazel-bin", "python", "site")
    own = [f"--platform_suffix=-{target.tag}", "--symlink_prefix=/"]
    _run([bazel, "build"] + own + ["//python:graphstore"], cwd=REPO, env=env)
    bin_dir = _run([bazel, "info"] + own + ["bazel-bin"], cwd=REPO, env=env).strip()
    return os.path.join(bin_dir, "python", "site")


def _needed(path: str):
    """(soname, resolved path) of every shared library `path` loads, its own dependencies too."""
    out = []
    for line in _run(["ldd", path]).splitlines():
        m = re.match(r"\s*(\S+) => (\S+) \(0x", line)
        if m:
            out.append((m.group(1), m.group(2)))
        elif "not found" in line:
            raise RuntimeError(f"{path}: {line.strip()}")
    return out


def _bundle(extension: str, libs_dir: str) -> list:
    """Copies the extension's libraries into libs_dir under names of their own and points the
    extension and the copies at each other; returns the copies' new names."""
    patchelf = _tool("patchelf", "patchelf")
    os.makedirs(libs_dir, exist_ok=True)
    renamed = {}
    for soname, path in _needed(extension):
        if SYSTEM_LIBRARY.match(soname):
            continue
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()[:8]
        base, _, version = soname.partition(".so")
        new = f"{base}-{digest}.so{version}"
        shutil.copy2(path, os.path.join(libs_dir, new))
        os.chmod(os.path.join(libs_dir, new), 0o755)
        renamed[soname] = new
    for soname, new in renamed.items():
        copy = os.path.join(libs_dir, new)
        _run([patchelf, "--set-soname", new, copy])
        _run([patchelf, "--set-rpath", "$ORIGIN", copy])
    for elf in [extension] + [os.path.join(libs_dir, n) for n in renamed.values()]:
        needed = _run([patchelf, "--print-needed", elf]).split()
        for old in needed:
            if old in renamed:
                _run([patchelf, "--replace-needed", old, renamed[old], elf])
    _run([patchelf, "--set-rpath", f"$ORIGIN/../{LIBS_DIR}", extension])
    return sorted(renamed.values())


def _dist_info(root: str, version: str, tag: str) -> str:
    info = os.path.join(root, f"{NAME}-{version}.dist-info")
    os.makedirs(info)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write(f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version}\n"
                "Summary: Sampled subgraphs from graphstore servers as PyG-shaped batches of torch.Tensor\n"
                "Requires-Python: >=3.9\nRequires-Dist: protobuf>=3.20\n")
    with open(os.path.join(info, "WHEEL"), "w") as f:
        f.write(f"Wheel-Version: 1.0\nGenerator: graphstore\nRoot-Is-Purelib: false\nTag: {tag}\n")
    with open(os.path.join(info, "top_level.txt"), "w") as f:
        f.write(f"{NAME}\n")
    return info


def _zip(root: str, path: str, info: str) -> None:
    records = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for dirpath, _, files in sorted(os.walk(root)):
            for name in sorted(files):
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root)
                with open(full, "rb") as f:
                    data = f.read()
                digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                records.append(f"{rel},sha256={digest},{len(data)}")
                z.write(full, rel)
        record = os.path.relpath(os.path.join(info, "RECORD"), root)
        records.append(f"{record},,")
        z.writestr(record, "\n".join(records) + "\n")


def build(target: Target, out_dir: str) -> str:
    """Builds the wheel for `target` into out_dir; returns its file name."""
    site = _bazel_build(target)
    version = _version()
    with tempfile.TemporaryDirectory() as tmp:
        package = os.path.join(tmp, NAME)
        shutil.copytree(os.path.join(site, NAME), package)
        for dirpath, _, files in os.walk(package):
            for name in files:
                os.chmod(os.path.join(dirpath, name), 0o644)
        extension = os.path.join(package, "_graphstore" + target.ext_suffix)
        os.rename(os.path.join(package, "_graphstore.so"), extension)
        os.chmod(extension, 0o755)
        _bundle(extension, os.path.join(tmp, LIBS_DIR))
        info = _dist_info(tmp, version, target.tag)
        os.makedirs(out_dir, exist_ok=True)
        filename = f"{NAME}-{version}-{target.tag}.whl"
        _zip(tmp, os.path.join(out_dir, filename), info)
    return filename


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--python-include", required=True, help="directory with the interpreter's Python.h")
    p.add_argument("--pybind11-include", default="/usr/include", help="directory with pybind11/pybind11.h")
    p.add_argument("--ext-suffix", required=True, help="the interpreter's EXT_SUFFIX")
    p.add_argument("--tag", required=True, help="the wheel's tag, e.g. cp313-cp313-linux_x86_64")
    p.add_argument("--out", required=True, help="directory the wheel is written to")
    a = p.parse_args(argv)
    print(os.path.join(a.out, build(Target(a.python_include, a.pybind11_include, a.ext_suffix, a.tag), a.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
