"""libtorch_cuda_repository: the CUDA LibTorch that `--config=cuda` links.

Two sources, in this order:
  1. $LIBTORCH_CUDA_DIR: an unpacked CUDA LibTorch (the pytorch.org archive,
     or a pip wheel's torch/ folder), the folder holding include/ and lib/.
  2. Debian 13's libtorch-cuda-dev (contrib; tools/debian13.sh installs it):
     the same header paths as the CPU libtorch-dev plus libtorch_cuda and
     libc10_cuda, built against CUDA 12 with NCCL.
Only builds with --config=cuda fetch this repository; when neither source is
there they stop at once with a message saying what to install or set.
"""

_LINKOPTS = """[
        "-L{lib}",
        "-Wl,-rpath,{lib}",
        # torch_cuda registers its kernels from static initialisers; without
        # --no-as-needed the linker drops it and every CUDA op is missing.
        "-Wl,--no-as-needed",
        "-ltorch",
        "-ltorch_cuda",
        "-ltorch_cpu",
        "-lc10_cuda",
        "-lc10",
        "-Wl,--as-needed",
    ]"""

# An archive or wheel carries no CUDA headers (c10/cuda includes
# cuda_runtime_api.h): they come from the CUDA toolkit, $CUDA_HOME.
_ARCHIVE_BUILD = """
cc_library(
    name = "torch",
    hdrs = glob(["include/**/*.h", "include/**/*.hpp", "include/**/*.cuh", "include/**/*.inl"]) +
           glob(["cuda_include/**/*.h", "cuda_include/**/*.hpp"]),
    includes = ["include", "include/torch/csrc/api/include", "cuda_include"],
    defines = ["PIPELINE_CUDA"],
    linkopts = {linkopts},
    visibility = ["//visibility:public"],
)
"""

# Debian's headers are in /usr/include (the compiler's default path) and
# /usr/include/torch/csrc/api/include (@libtorch_api).
_DEBIAN_BUILD = """
cc_library(
    name = "torch",
    defines = ["PIPELINE_CUDA"],
    linkopts = {linkopts},
    deps = ["@libtorch_api//:headers"],
    visibility = ["//visibility:public"],
)
"""

def _multiarch_lib(ctx):
    multiarch = ctx.execute(["gcc", "-print-multiarch"]).stdout.strip() or "x86_64-linux-gnu"
    return "/usr/lib/" + multiarch

def _from_folder(ctx, root):
    for folder in ["include", "lib"]:
        if not ctx.path(root + "/" + folder).exists:
            fail(("LIBTORCH_CUDA_DIR=%s has no %s/ folder: point it at an unpacked CUDA LibTorch " +
                  "(the folder holding include/ and lib/), or unset it to use Debian 13's " +
                  "libtorch-cuda-dev") % (root, folder))
    if not ctx.path(root + "/lib/libtorch_cuda.so").exists:
        fail(("LIBTORCH_CUDA_DIR=%s holds a LibTorch without CUDA (no lib/libtorch_cuda.so): " +
              "unpack a CUDA build of LibTorch there (pytorch.org's cu12x archive or a CUDA " +
              "pip wheel's torch/ folder)") % root)
    # Every header folder but google/: a wheel or archive carries its own
    # protobuf headers, older than the system's protoc the runner's configs
    # are generated with, and they would shadow /usr/include's.
    for entry in ctx.path(root + "/include").readdir():
        if entry.basename != "google":
            ctx.symlink(entry, "include/" + entry.basename)
    cuda_home = ctx.os.environ.get("CUDA_HOME", "/usr/local/cuda")
    if not ctx.path(cuda_home + "/include/cuda_runtime_api.h").exists:
        fail(("LIBTORCH_CUDA_DIR is set, but the CUDA toolkit's headers are not in %s/include " +
              "(no cuda_runtime_api.h): install the CUDA toolkit matching that LibTorch, or set " +
              "CUDA_HOME to its folder") % cuda_home)
    ctx.symlink(cuda_home + "/include", "cuda_include")
    lib = str(ctx.path(root + "/lib"))
    ctx.file("BUILD", _ARCHIVE_BUILD.format(linkopts = _LINKOPTS.format(lib = lib)))

def _libtorch_cuda_impl(ctx):
    ctx.file("WORKSPACE", "")
    root = ctx.os.environ.get("LIBTORCH_CUDA_DIR", "")
    if root:
        _from_folder(ctx, root)
        return
    lib = _multiarch_lib(ctx)
    if ctx.path(lib + "/libtorch_cuda.so").exists:
        ctx.file("BUILD", _DEBIAN_BUILD.format(linkopts = _LINKOPTS.format(lib = lib)))
        return
    fail("--config=cuda needs a CUDA LibTorch, and this system has none (no %s/libtorch_cuda.so). " % lib +
         "Build in the Debian 13 root, which has libtorch-cuda-dev: " +
         "tools/debian13.sh bazel build --config=cuda //tools:train; or unpack a CUDA LibTorch and " +
         "set LIBTORCH_CUDA_DIR to its folder (the one holding include/ and lib/)")

libtorch_cuda_repository = repository_rule(
    implementation = _libtorch_cuda_impl,
    environ = ["LIBTORCH_CUDA_DIR", "CUDA_HOME"],
    local = True,
)
