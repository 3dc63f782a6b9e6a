#!/bin/bash
# On a GPU machine whose Python has a CUDA torch: packs what a build machine
# needs to compile and link against that LibTorch (its headers and the
# symbols its libraries export; not the libraries), for
# tools/cuda/build_for_gpu.sh.
#   tools/cuda/collect_libtorch.sh OUT_FOLDER
set -euo pipefail
out=${1:?usage: collect_libtorch.sh OUT_FOLDER}
torch=$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
  "cxx11 abi", torch._C._GLIBCXX_USE_CXX11_ABI)' | tee "$out/libtorch_version.txt"
work=$(mktemp -d)
mkdir -p "$work/syms"
for lib in libtorch libtorch_cpu libtorch_cuda libc10 libc10_cuda; do
  readelf --dyn-syms -W "$torch/lib/$lib.so" > "$work/syms/$lib.so.dynsym"
done
tar czf "$out/libtorch_syms.tgz" -C "$work" syms
tar czf "$out/libtorch_include.tgz" -C "$torch" include
rm -rf "$work"
ls -la "$out"
