"""cc_fuzz_test: one fuzz target, two ways to run it.

The source defines libFuzzer's `LLVMFuzzerTestOneInput`. In the normal build
(gcc) the test links //tests/fuzz:fuzz_driver, which replays the seeds and
then mutates them for `seconds`; under `--config=fuzz` (clang,
-fsanitize=fuzzer,address,undefined) it links libFuzzer instead, and
`bazel test` replays the seeds through it while the binary itself is the
real fuzzer:

    bazel build --config=fuzz //tests/fuzz:idx_reader_fuzz_test
    mkdir -p /tmp/idx_corpus
    bazel-bin/tests/fuzz/idx_reader_fuzz_test /tmp/idx_corpus tests/fuzz/corpus/idx_reader \
        -max_total_time=60

(libFuzzer writes new inputs into the first folder; keep it outside the tree.)
"""

load("//bazel:cc.bzl", "test_copts_and_deps")

def cc_fuzz_test(name, srcs, corpus, deps = [], seconds = 10, tags = [], **kwargs):
    """A fuzz target that is also a cc_test.

    Args:
      name: the test (and fuzzer binary) name.
      srcs: sources; one defines LLVMFuzzerTestOneInput.
      corpus: seed input files (labels or globs); each is run first, then
        mutated.
      deps: the code under test.
      seconds: how long the gcc build's driver mutates the seeds.
      tags: extra tags; "fuzz_target" is always added.
      **kwargs: passed to cc_test.
    """
    copts, deps = test_copts_and_deps(deps, kwargs.pop("copts", []))
    native.filegroup(
        name = name + "_corpus",
        srcs = corpus,
        testonly = True,
    )
    native.cc_test(
        name = name,
        srcs = srcs,
        args = ["$(rootpaths :%s_corpus)" % name],
        data = [":" + name + "_corpus"],
        env = {"FUZZ_SECONDS": str(seconds)},
        copts = copts,
        deps = deps + ["//tests/fuzz:fuzz_check"] + select({
            "//tests/fuzz:libfuzzer": ["//tests/fuzz:libfuzzer_main"],
            "//conditions:default": ["//tests/fuzz:fuzz_driver"],
        }),
        tags = tags + ["fuzz_target"],
        **kwargs
    )
