"""libtorch_cuda_repository: a CUDA build of LibTorch the user unpacked.

Debian's LibTorch is CPU-only. `bazel build --config=cuda` links against the
LibTorch found at $LIBTORCH_CUDA_DIR instead: the "cxx11 ABI" CUDA archive of
LibTorch 1.13.x from pytorch.org, unpacked (the folder holding include/ and
lib/). Only builds with --config=cuda fetch this repository; without the
variable they stop at once with a message saying what to set.
"""

_BUILD = """
cc_library(
    name = "torch",
    hdrs = glob(["include/**/*.h", "include/**/*.hpp", "include/**/*.cuh"]),
    includes = ["include", "include/torch/csrc/api/include"],
    defines = ["PIPELINE_CUDA"],
    # torch_cuda registers its kernels from static initialisers; without
    # --no-as-needed the linker drops it and every CUDA op is missing.
    linkopts = [
        "-L{lib}",
        "-Wl,-rpath,{lib}",
        "-Wl,--no-as-needed",
        "-ltorch",
        "-ltorch_cuda",
        "-ltorch_cpu",
        "-lc10_cuda",
        "-lc10",
        "-Wl,--as-needed",
    ],
    visibility = ["//visibility:public"],
)
"""

def _libtorch_cuda_impl(ctx):
    root = ctx.os.environ.get("LIBTORCH_CUDA_DIR", "")
    if not root:
        fail("--config=cuda needs a CUDA LibTorch 1.13 (cxx11 ABI): unpack it and set " +
             "LIBTORCH_CUDA_DIR to its folder (the one holding include/ and lib/), e.g. " +
             "LIBTORCH_CUDA_DIR=/opt/libtorch bazel build --config=cuda //tools:train")
    for folder in ["include", "lib"]:
        if not ctx.path(root + "/" + folder).exists:
            fail("LIBTORCH_CUDA_DIR=%s has no %s/ folder; point it at the unpacked LibTorch " % (root, folder) +
                 "archive (the folder holding include/ and lib/)")
    ctx.symlink(root + "/include", "include")
    ctx.file("BUILD", _BUILD.format(lib = root + "/lib"))

libtorch_cuda_repository = repository_rule(
    implementation = _libtorch_cuda_impl,
    environ = ["LIBTORCH_CUDA_DIR"],
    local = True,
)
