"""The headers an extension module is compiled against: a CPython's C API and pybind11.

Which ones come from the environment, so that one checkout builds the extension for each Python
it is asked for (tools/build_wheel.py sets them per interpreter):

  GRAPHSTORE_PYTHON_INCLUDE   the directory holding Python.h (default: Debian 12's Python 3.11)
  GRAPHSTORE_PYBIND11_INCLUDE the directory holding pybind11/pybind11.h (default: /usr/include)
"""

def _python_headers_impl(ctx):
    python = ctx.os.environ.get("GRAPHSTORE_PYTHON_INCLUDE", "/usr/include/python3.11")
    pybind11 = ctx.os.environ.get("GRAPHSTORE_PYBIND11_INCLUDE", "/usr/include")
    if not ctx.path(python + "/Python.h").exists:
        fail("GRAPHSTORE_PYTHON_INCLUDE: no Python.h in %s (install python3-dev)" % python)
    if not ctx.path(pybind11 + "/pybind11/pybind11.h").exists:
        fail("GRAPHSTORE_PYBIND11_INCLUDE: no pybind11/pybind11.h in %s (install pybind11-dev)" % pybind11)
    ctx.symlink(python, "python")
    ctx.symlink(pybind11 + "/pybind11", "pybind/pybind11")

    # Debian's pyconfig.h includes <x86_64-linux-gnu/pythonX.Y/pyconfig.h> from beside the
    # include directory.
    name = python.rstrip("/").split("/")[-1]
    arch = python.rstrip("/")[:-len(name)] + "x86_64-linux-gnu/" + name
    if ctx.path(arch).exists:
        ctx.symlink(arch, "arch/x86_64-linux-gnu/" + name)
    else:
        ctx.file("arch/README", "no multiarch headers")
    ctx.file("BUILD", """# CPython's C API headers and pybind11's, for extension modules. Nothing to link: an
# extension resolves the interpreter's symbols when it is imported.
cc_library(
    name = "headers",
    hdrs = glob(["python/**/*.h", "pybind/**/*.h", "arch/**/*.h"]),
    includes = ["python", "pybind", "arch"],
    visibility = ["//visibility:public"],
)
""")

python_headers = repository_rule(
    implementation = _python_headers_impl,
    environ = ["GRAPHSTORE_PYTHON_INCLUDE", "GRAPHSTORE_PYBIND11_INCLUDE"],
    local = True,
)
