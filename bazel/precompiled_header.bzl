"""precompiled_header: one header compiled once, so each C++ file that uses it
loads the parsed result instead of parsing it again.

LibTorch's <torch/torch.h> costs about 8 s of parsing in every file that
includes it (GCC 12, -O2, AMD EPYC Zen 5), more than the code of most of our
files takes to compile. GCC reads `<header>.gch` in place of `<header>` when it
was compiled with the same code-generation flags, so this rule compiles the
header with exactly the C++ toolchain's command line for the current
configuration (-c opt, --config=asan, ...) and offers both files as headers of
a CcInfo: every compile that depends on it waits for them and lists them as
inputs. Files use it through `-include <header>` (bazel/cc.bzl adds it).

With a compiler other than GCC (clang in --config=fuzz) only the header is
written; it is then parsed as before, just as fast as without this rule.
"""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")
load("@bazel_tools//tools/build_defs/cc:action_names.bzl", "CPP_COMPILE_ACTION_NAME")

def _precompile(ctx, cc_toolchain, feature_configuration, header, compilation_context):
    gch = ctx.actions.declare_file(header.basename + ".gch", sibling = header)
    variables = cc_common.create_compile_variables(
        cc_toolchain = cc_toolchain,
        feature_configuration = feature_configuration,
        source_file = header.path,
        output_file = gch.path,
        # -x before the source: compile it as a header (a .gch), not a unit.
        user_compile_flags = ctx.fragments.cpp.copts + ctx.fragments.cpp.cxxopts + ctx.attr.copts + ["-x", "c++-header"],
        include_directories = compilation_context.includes,
        quote_include_directories = compilation_context.quote_includes,
        system_include_directories = compilation_context.system_includes,
        preprocessor_defines = compilation_context.defines,
        # .bazelrc's --force_pic: every object is position-independent, and
        # GCC refuses a .gch whose -fPIC differs from the file's.
        use_pic = True,
    )
    ctx.actions.run(
        executable = cc_common.get_tool_for_action(
            feature_configuration = feature_configuration,
            action_name = CPP_COMPILE_ACTION_NAME,
        ),
        arguments = cc_common.get_memory_inefficient_command_line(
            feature_configuration = feature_configuration,
            action_name = CPP_COMPILE_ACTION_NAME,
            variables = variables,
        ),
        env = cc_common.get_environment_variables(
            feature_configuration = feature_configuration,
            action_name = CPP_COMPILE_ACTION_NAME,
            variables = variables,
        ),
        inputs = depset([header], transitive = [compilation_context.headers, cc_toolchain.all_files]),
        outputs = [gch],
        mnemonic = "CppPrecompileHeader",
        progress_message = "Precompiling %s" % header.short_path,
    )
    return gch

# A file compiled with the .gch does not list it (nor the header, nor what it
# includes) in the dependency file GCC writes, and Bazel keeps only what that
# file lists as the inputs that decide whether to compile it again: a changed
# .gch would leave every object stale. Files also include this stamp, parsed
# as usual, which holds the .gch's digest: a new .gch, a new stamp, and
# everything that used the old one compiles again.
def _write_stamp(ctx, gch, stamp):
    ctx.actions.run_shell(
        inputs = [gch],
        outputs = [stamp],
        command = 'printf "// %%s\\n" "$(md5sum < %s)" > %s' % (gch.path, stamp.path),
        mnemonic = "PrecompiledHeaderStamp",
        progress_message = "Stamping %s" % gch.short_path,
    )

def _is_gcc(cc_toolchain, feature_configuration):
    # Bazel's autodetected toolchain names GCC "compiler"; look at the tool.
    tool = cc_common.get_tool_for_action(
        feature_configuration = feature_configuration,
        action_name = CPP_COMPILE_ACTION_NAME,
    )
    return "clang" not in cc_toolchain.compiler and "clang" not in tool.split("/")[-1]

def _precompiled_header_impl(ctx):
    cc_toolchain = find_cpp_toolchain(ctx)
    feature_configuration = cc_common.configure_features(
        ctx = ctx,
        cc_toolchain = cc_toolchain,
        requested_features = ctx.features,
        unsupported_features = ctx.disabled_features,
    )
    deps = cc_common.merge_cc_infos(cc_infos = [dep[CcInfo] for dep in ctx.attr.deps])

    # Written here rather than kept as a source file: `-include` looks in the
    # working directory (the source tree) first, and the .gch must sit beside
    # the header that is found.
    header = ctx.actions.declare_file(ctx.attr.header)
    ctx.actions.write(header, "".join(["#include <%s>\n" % h for h in ctx.attr.includes]))
    files = [header]
    stamp = ctx.actions.declare_file(ctx.attr.header.replace(".h", "_stamp.h"), sibling = header)
    if _is_gcc(cc_toolchain, feature_configuration):
        gch = _precompile(ctx, cc_toolchain, feature_configuration, header, deps.compilation_context)
        files.append(gch)
        _write_stamp(ctx, gch, stamp)
    else:
        ctx.actions.write(stamp, "// Nothing precompiled: the header is parsed.\n")
    files.append(stamp)
    own = CcInfo(compilation_context = cc_common.create_compilation_context(headers = depset(files)))
    return [
        DefaultInfo(files = depset(files)),
        cc_common.merge_cc_infos(cc_infos = [own, deps]),
    ]

precompiled_header = rule(
    implementation = _precompiled_header_impl,
    doc = "A header of #include <...> lines, precompiled for the current configuration.",
    attrs = {
        "header": attr.string(mandatory = True, doc = "file name of the written header"),
        "includes": attr.string_list(mandatory = True, doc = "what it includes, as in #include <...>"),
        "deps": attr.label_list(providers = [CcInfo], doc = "where those headers come from"),
        "copts": attr.string_list(doc = "the flags of the targets that use it, after the configuration's"),
        "_cc_toolchain": attr.label(default = "@bazel_tools//tools/cpp:current_cc_toolchain"),
    },
    fragments = ["cpp"],
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
    incompatible_use_toolchain_transition = True,
)
