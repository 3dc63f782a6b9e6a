"""abseil_repository: link flags for every Abseil library Debian installed.

Abseil's split into shared libraries changes between releases (Debian 12 has
20220623, Debian 13 20240722, which moved string_view, log and more into
libraries of their own). A fixed list of -labsl_* flags breaks on one or the
other ("DSO missing from command line"), so this rule lists the libraries
that are there and links them all. (Not with --as-needed: in Bazel's
dynamic test linking a binary that does not itself call into a library
would drop it, and the shared objects of its dependencies, which do, would
fail to load.)
"""

_BUILD = """
cc_library(
    name = "absl",
    linkopts = {linkopts},
    visibility = ["//visibility:public"],
)
"""

def _abseil_impl(ctx):
    multiarch = ctx.execute(["gcc", "-print-multiarch"]).stdout.strip() or "x86_64-linux-gnu"
    folder = ctx.path("/usr/lib/" + multiarch)
    names = []
    for entry in folder.readdir():
        name = entry.basename
        # The development symlinks (libabsl_X.so) only; not the test helpers
        # (they would pull GoogleTest in), nor Abseil's command-line flags,
        # which the runner does not use (it has gflags): loaded, 2024's
        # libabsl_log_flags registers its flags from a static initialiser
        # and crashed every binary at start in Debian 13.
        if (name.startswith("libabsl_") and name.endswith(".so") and
            "test" not in name and "flags" not in name):
            names.append(name[len("lib"):-len(".so")])
    if not names:
        fail("no Abseil libraries in %s: install libabsl-dev (tools/setup.sh does)" % folder)
    linkopts = ["-l" + n for n in sorted(names)]
    ctx.file("BUILD", _BUILD.format(linkopts = repr(linkopts)))
    ctx.file("WORKSPACE", "")

abseil_repository = repository_rule(
    implementation = _abseil_impl,
    local = True,
)
