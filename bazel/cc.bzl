"""cc_library, cc_test and cc_binary as Bazel's, plus LibTorch's precompiled
header for targets that use LibTorch, and test code compiled for compile speed.

A target whose deps name //third_party:torch or //third_party:c10d compiles
each of its files with `-include third_party/torch_precompiled.h` first
(bazel/precompiled_header.bzl): GCC then loads the LibTorch headers most of our
files use (third_party/BUILD lists them) already parsed.
Nothing else changes; a file that includes fewer torch headers sees more
declarations, none of which it uses.

Test code (cc_test, and cc_library and cc_binary with testonly) compiles at
-O0 and, where it uses LibTorch, with third_party/test_precompiled.h: the same
LibTorch headers plus gmock and gtest, precompiled with these same flags. The
work a test does runs in LibTorch and in the libraries under test, which keep
-O2; what -O2 bought in a test file was code generation for its assertion
templates, about a third of its compile time (log_hooks_test.cc: 13.3-14.3 s
at -O2 with LibTorch's header, 9.0 s at -O0 with the test header, GCC 12,
AMD EPYC Zen 5). Load these instead of the native rules:

    load("//bazel:cc.bzl", "cc_library", "cc_test")
"""

_TORCH_TARGETS = ["//third_party:torch", "//third_party:c10d"]

def _precompiled_copts(name):
    # -Winvalid-pch: GCC says so where a target's own flags make it parse the
    # headers instead. The stamp after the header: the digest of the .gch, so
    # a new one recompiles what used the old (bazel/precompiled_header.bzl).
    return [
        "-Winvalid-pch",
        "-include",
        "third_party/%s.h" % name,
        "-include",
        "third_party/%s_stamp.h" % name,
    ]

TORCH_PRECOMPILED_COPTS = _precompiled_copts("torch_precompiled")

# -O0 after the configuration's -O2; glibc warns about _FORTIFY_SOURCE (set
# by -c opt) without optimization, so it goes too. //third_party:
# test_precompiled is compiled with exactly these flags: change both at once.
TEST_COPTS = ["-O0", "-U_FORTIFY_SOURCE"]
_TEST_PRECOMPILED = "//third_party:test_precompiled"
_TEST_PRECOMPILED_COPTS = _precompiled_copts("test_precompiled")

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

def test_copts_and_deps(deps, copts):
    """(copts, deps) for test code: -O0, and the test header where it uses LibTorch."""
    if uses_torch(deps):
        return TEST_COPTS + _TEST_PRECOMPILED_COPTS + copts, deps + [_TEST_PRECOMPILED]
    return TEST_COPTS + copts, deps

def _copts_and_deps(deps, copts, testonly):
    if testonly:
        return test_copts_and_deps(deps, copts)
    return with_torch_precompiled(deps, copts), deps

def cc_library(name, deps = [], copts = [], **kwargs):
    copts, deps = _copts_and_deps(deps, copts, kwargs.get("testonly"))
    native.cc_library(name = name, deps = deps, copts = copts, **kwargs)

def cc_test(name, deps = [], copts = [], **kwargs):
    copts, deps = test_copts_and_deps(deps, copts)
    native.cc_test(name = name, deps = deps, copts = copts, **kwargs)

def cc_binary(name, deps = [], copts = [], **kwargs):
    copts, deps = _copts_and_deps(deps, copts, kwargs.get("testonly"))
    native.cc_binary(name = name, deps = deps, copts = copts, **kwargs)
