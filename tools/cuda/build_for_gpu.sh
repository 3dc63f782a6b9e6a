#!/bin/bash
# On the build machine: a CUDA build of //tools:train and //tests:cuda_test
# against a GPU machine's own LibTorch, from what collect_libtorch.sh packed
# there, and a folder to copy to that machine and run gpu_checks.sh in (and
# gpu_bench.sh, with //tools:make_jpeg_corpus, the mate-backgrounds photos
# it crops and torch_step_bench.py).
#   tools/cuda/build_for_gpu.sh COLLECTED_FOLDER PACK_FOLDER
# Needs the CUDA toolkit's headers of the same major version ($CUDA_HOME,
# default /usr/local/cuda). The build has its own Bazel output base, so the
# CPU build's objects stay as they are.
set -euo pipefail
collected=$(realpath "${1:?usage: build_for_gpu.sh COLLECTED_FOLDER PACK_FOLDER}")
pack=$(realpath -m "${2:?usage: build_for_gpu.sh COLLECTED_FOLDER PACK_FOLDER}")
cache=${PIPELINE_CACHE:-$HOME/.cache/pipeline_runner}
libtorch=$cache/libtorch-gpu-machine
rm -rf "$libtorch" && mkdir -p "$libtorch/syms"
tar xzf "$collected/libtorch_include.tgz" -C "$libtorch"
tar xzf "$collected/libtorch_syms.tgz" -C "$libtorch"
"$(dirname "$0")/link_stubs.py" --out="$libtorch/lib" "$libtorch"/syms/*.dynsym
base=$cache/bazel-output-gpu-machine
# --symlink_prefix=/: the checkout's bazel-bin stays the CPU build's.
LIBTORCH_CUDA_DIR=$libtorch bazel --output_base="$base" build --config=cuda --symlink_prefix=/ \
  //tools:train //tests:cuda_test //tools:make_jpeg_corpus
bin=$(LIBTORCH_CUDA_DIR=$libtorch bazel --output_base="$base" info --config=cuda bazel-bin 2>/dev/null)
rm -rf "$pack" && mkdir -p "$pack/run/tools" "$pack/run/tests" "$pack/run/_solib_k8" "$pack/libs" \
  "$pack/data" "$pack/photos"
cp "$bin/tools/train" "$bin/tools/make_jpeg_corpus" "$pack/run/tools/"
cp "$bin/tests/cuda_test" "$pack/run/tests/"
cp -L "$bin"/_solib_k8/*.so "$pack/run/_solib_k8/"
cp -r configs "$pack/run/configs"
cp "$(dirname "$0")"/{gpu_checks.sh,gpu_bench.sh,torch_step_bench.py} "$pack/"
cp /usr/share/datasets/fashion-mnist/* "$pack/data/"
# Not under data/: gpu_checks.sh copies data/* into the Fashion-MNIST folder.
cp /usr/share/backgrounds/mate/nature/*.jpg "$pack/photos/"
# This machine's libraries the binaries need, but not LibTorch's nor the C
# and C++ runtimes (the GPU machine's own, newer ones serve).
for binary in "$pack/run/tools/train" "$pack/run/tools/make_jpeg_corpus" "$pack/run/tests/cuda_test"; do
  LD_LIBRARY_PATH=$libtorch/lib:$pack/run/_solib_k8 ldd "$binary"
done | awk '/=>/ {print $3}' | sort -u |
  grep -v -E 'libtorch|libc10|/lib(c|m|dl|rt|pthread|stdc\+\+|gcc_s)\.so|ld-linux|_solib' |
  xargs -r cp -L -t "$pack/libs/"
du -sh "$pack"
