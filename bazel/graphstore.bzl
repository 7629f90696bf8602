"""Build macros shared by every graphstore package (after Ray's ray_cc_* helpers)."""

load("@rules_cc//cc:defs.bzl", "cc_binary", "cc_library", "cc_test")

GS_COPTS = [
    "-Wall",
    "-Wextra",
    "-Wno-unused-parameter",
    "-Wno-sign-compare",
]

def gs_cc_library(name, copts = [], **kwargs):
    cc_library(name = name, copts = GS_COPTS + copts, **kwargs)

def gs_cc_binary(name, copts = [], **kwargs):
    cc_binary(name = name, copts = GS_COPTS + copts, **kwargs)

def gs_cc_test(name, deps = [], copts = [], size = "small", **kwargs):
    """A Catch2 test; //tests:catch_main supplies main() and the JUnit report for CI."""
    cc_test(
        name = name,
        copts = GS_COPTS + copts,
        deps = deps + ["//tests:catch_main"],
        size = size,
        **kwargs
    )

def gs_proto_library(name, srcs, deps = [], grpc = False, visibility = None):
    """C++ code for .proto files via the system protoc (and grpc_cpp_plugin when grpc=True).

    Sources live under proto/; imports are written relative to proto/ ("graphstore/v1/x.proto"),
    and so are the generated headers' include paths.
    """
    outs = []
    for src in srcs:
        base = src[:-len(".proto")]
        outs += [base + ".pb.h", base + ".pb.cc"]
        if grpc:
            outs += [base + ".grpc.pb.h", base + ".grpc.pb.cc"]
    plugin = ""
    if grpc:
        plugin = "--plugin=protoc-gen-grpc=/usr/bin/grpc_cpp_plugin --grpc_out=$(GENDIR)/proto "
    native.genrule(
        name = name + "_gen",
        srcs = srcs + [d + "_srcs" for d in deps],
        outs = outs,
        cmd = ("/usr/bin/protoc -Iproto --cpp_out=$(GENDIR)/proto " + plugin +
               " ".join(["proto/" + s for s in srcs])),
    )
    native.filegroup(name = name + "_srcs", srcs = srcs)
    cc_library(
        name = name,
        srcs = [o for o in outs if o.endswith(".cc")],
        hdrs = [o for o in outs if o.endswith(".h")],
        includes = ["."],
        deps = deps + ["@system//:protobuf"] + (["@system//:grpc"] if grpc else []),
        visibility = visibility,
    )
