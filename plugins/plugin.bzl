"""pipeline_plugin: the one way a plugin library is declared.

A plugin registers itself from a static initialiser, which nothing references;
without alwayslink the linker would drop it and the name would be unknown at
run time. The macro sets it so nobody forgets.
"""

load("//third_party:proto.bzl", "cc_proto")

def pipeline_plugin(name, srcs, options_proto = None, hdrs = [], deps = [], **kwargs):
    """A self-registering plugin library.

    Args:
      name: the library (by convention the folder's name).
      srcs: implementation and registration sources.
      options_proto: the .proto file of the plugin's options message, if any;
        it becomes the cc_proto `<name>_options_proto`.
      hdrs: headers other targets may use (tests, tools).
      deps: further dependencies.
    """
    all_deps = list(deps)
    if options_proto:
        cc_proto(
            name = name + "_options_proto",
            srcs = [options_proto],
            visibility = ["//visibility:public"],
        )
        all_deps.append(":" + name + "_options_proto")
    native.cc_library(
        name = name,
        srcs = srcs,
        hdrs = hdrs,
        deps = all_deps,
        alwayslink = 1,
        visibility = kwargs.pop("visibility", ["//visibility:public"]),
        **kwargs
    )
