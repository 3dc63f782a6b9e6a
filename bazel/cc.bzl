"""cc_library, cc_test and cc_binary as Bazel's, plus LibTorch's precompiled
header for targets that use LibTorch.

A target whose deps name //third_party:torch or //third_party:c10d compiles
each of its files with `-include third_party/torch_precompiled.h` first
(bazel/precompiled_header.bzl): GCC then loads <torch/torch.h> already parsed.
Nothing else changes; a file that includes fewer torch headers sees more
declarations, none of which it uses. Load these instead of the native rules:

    load("//bazel:cc.bzl", "cc_library", "cc_test")
"""

_TORCH_TARGETS = ["//third_party:torch", "//third_party:c10d"]

TORCH_PRECOMPILED_COPTS = ["-include", "third_party/torch_precompiled.h"]

def uses_torch(deps):
    """Whether `deps` (a list as written in BUILD) names LibTorch."""
    if type(deps) != "list":
        return False
    for dep in deps:
        if dep in _TORCH_TARGETS:
            return True
    return False

def with_torch_precompiled(deps, copts):
    """`copts`, led by the precompiled-header flags where `deps` use LibTorch."""
    return TORCH_PRECOMPILED_COPTS + copts if uses_torch(deps) else copts

def cc_library(name, deps = [], copts = [], **kwargs):
    native.cc_library(name = name, deps = deps, copts = with_torch_precompiled(deps, copts), **kwargs)

def cc_test(name, deps = [], copts = [], **kwargs):
    native.cc_test(name = name, deps = deps, copts = with_torch_precompiled(deps, copts), **kwargs)

def cc_binary(name, deps = [], copts = [], **kwargs):
    native.cc_binary(name = name, deps = deps, copts = with_torch_precompiled(deps, copts), **kwargs)
