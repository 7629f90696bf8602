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
    """C++ code for .proto files from the system protoc.

    `name` holds the messages; with grpc=True, `name + "_grpc"` adds the service stubs from
    grpc_cpp_plugin, so code that only needs messages does not depend on gRPC. Sources live
    under proto/; imports and generated include paths are relative to proto/
    ("graphstore/v1/x.proto" -> "graphstore/v1/x.pb.h").
    """
    bases = [src[:-len(".proto")] for src in srcs]
    native.filegroup(name = name + "_srcs", srcs = srcs)
    dep_srcs = [d + "_srcs" for d in deps]
    native.genrule(
        name = name + "_gen",
        srcs = srcs + dep_srcs,
        outs = [b + ".pb.h" for b in bases] + [b + ".pb.cc" for b in bases],
        cmd = "/usr/bin/protoc -Iproto --cpp_out=$(GENDIR)/proto " + " ".join(["proto/" + s for s in srcs]),
    )
    cc_library(
        name = name,
        srcs = [b + ".pb.cc" for b in bases],
        hdrs = [b + ".pb.h" for b in bases],
        includes = ["."],
        deps = deps + ["@system//:protobuf"],
        visibility = visibility,
    )
    if grpc:
        native.genrule(
            name = name + "_grpc_gen",
            srcs = srcs + dep_srcs,
            outs = [b + ".grpc.pb.h" for b in bases] + [b + ".grpc.pb.cc" for b in bases],
            cmd = ("/usr/bin/protoc -Iproto --plugin=protoc-gen-grpc=/usr/bin/grpc_cpp_plugin " +
                   "--grpc_out=$(GENDIR)/proto " + " ".join(["proto/" + s for s in srcs])),
        )
        cc_library(
            name = name + "_grpc",
            srcs = [b + ".grpc.pb.cc" for b in bases],
            hdrs = [b + ".grpc.pb.h" for b in bases],
            includes = ["."],
            deps = [":" + name, "@system//:grpc"],
            visibility = visibility,
        )
