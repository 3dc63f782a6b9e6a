"""pipeline_plugin: the one way a plugin library is declared.

A plugin registers itself from a static initialiser, which nothing references;
without alwayslink the linker would drop it and the name would be unknown at
run time. The macro sets it so nobody forgets.
"""

load("//bazel:cc.bzl", "with_torch_precompiled")
load("//third_party:proto.bzl", "cc_proto")

def pipeline_plugin(name, srcs, options_proto = None, options_proto_deps = [], hdrs = [], deps = [],
                    **kwargs):
    """A self-registering plugin library.

    Args:
      name: the library (by convention the folder's name).
      srcs: implementation and registration sources.
      options_proto: the .proto file of the plugin's options message, if any;
        it becomes the cc_proto `<name>_options_proto`.
      options_proto_deps: cc_proto targets whose .proto files it imports.
      hdrs: headers other targets may use (tests, tools).
      deps: further dependencies.
    """
    all_deps = list(deps)
    if options_proto:
        cc_proto(
            name = name + "_options_proto",
            srcs = [options_proto],
            deps = options_proto_deps,
            visibility = ["//visibility:public"],
        )
        all_deps.append(":" + name + "_options_proto")
    native.cc_library(
        name = name,
        srcs = srcs,
        hdrs = hdrs,
        deps = all_deps,
        copts = with_torch_precompiled(deps, kwargs.pop("copts", [])),
        alwayslink = 1,
        visibility = kwargs.pop("visibility", ["//visibility:public"]),
        **kwargs
    )

def _headers_only_impl(ctx):
    merged = cc_common.merge_cc_infos(cc_infos = [dep[CcInfo] for dep in ctx.attr.deps])
    return [CcInfo(compilation_context = merged.compilation_context)]

# The headers (and defines, include paths) of `deps` without their code or
# link flags: what a plugin library compiles against but takes from train.
_headers_only = rule(
    implementation = _headers_only_impl,
    attrs = {"deps": attr.label_list(providers = [CcInfo])},
)

def pipeline_plugin_library(name, srcs, options_proto = None, deps = [], linked_deps = [], **kwargs):
    """A plugin built as a shared library, loaded by train at start-up.

        train --plugin_library=bazel-bin/<package>/lib<name>.so --config=...
        (or `plugin_libraries: "..."` in the config)

    The registrations in `srcs` (PIPELINE_REGISTER_PLUGIN) then work by name
    like the plugins linked into train, which is neither rebuilt nor
    relinked. The library contains only the plugin's own code: `deps` (the
    core and system targets such as //pipeline/interfaces:model and
    //third_party:torch) are compiled against but not linked, because train
    already holds them and exports them (it links with --export-dynamic). A
    second copy would mean a second registry and a second registration of
    the config protos. The library also gets the ABI stamp train checks
    (pipeline/registry/plugin_abi.h).

    Args:
      name: the plugin; the target `name` is the file lib<name>.so.
      srcs: implementation and registration sources.
      options_proto: the .proto of the plugin's options message, if any; it
        becomes the cc_proto `<name>_options_proto` and is linked in.
      deps: core targets whose headers the plugin uses; provided by train.
      linked_deps: the plugin's own libraries, linked into the .so; they must
        not depend on the core (or they would bring a second copy of it).
    """
    options_deps = []
    if options_proto:
        cc_proto(
            name = name + "_options_proto",
            srcs = [options_proto],
            visibility = ["//visibility:public"],
        )
        options_deps.append(":" + name + "_options_proto")
    _headers_only(
        name = name + "_core_headers",
        deps = deps + [Label("//pipeline/registry"), Label("//pipeline/registry:plugin_abi")],
    )
    native.cc_binary(
        name = "lib" + name + ".so",
        srcs = srcs,
        linkshared = 1,
        copts = with_torch_precompiled(deps, kwargs.pop("copts", [])),
        deps = [":" + name + "_core_headers", Label("//pipeline/registry:plugin_abi_stamp")] +
               options_deps + linked_deps,
        visibility = kwargs.pop("visibility", ["//visibility:public"]),
        **kwargs
    )
    native.alias(
        name = name,
        actual = ":lib" + name + ".so",
        visibility = ["//visibility:public"],
    )
