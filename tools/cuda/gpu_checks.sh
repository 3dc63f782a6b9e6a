#!/bin/bash
# On the GPU machine, in a folder build_for_gpu.sh packed: the GPU tests
# (tests/cuda_test) and one epoch of the default ResNet18 run on cuda:0 in
# float32 and bf16, under ddp over NCCL and under data_parallel. Each log
# goes to OUT_FOLDER. A check fails when its program fails or when its log
# holds a deprecation or unclean-teardown warning; the script ends with
# "N passed, M failed" and exits 1 when any failed.
#   bash gpu_checks.sh OUT_FOLDER
out=$(realpath "${1:?usage: gpu_checks.sh OUT_FOLDER}")
pack=$(cd "$(dirname "$0")" && pwd)
torch=$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')
nvidia=$(dirname "$torch")/nvidia
export LD_LIBRARY_PATH=$torch/lib:$nvidia/cu13/lib:$nvidia/cu12/lib:$nvidia/cudnn/lib:$nvidia/nccl/lib:$nvidia/cusparselt/lib:$nvidia/nvshmem/lib:$pack/libs
if [ ! -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  mkdir -p /usr/share/datasets/fashion-mnist && cp "$pack"/data/* /usr/share/datasets/fashion-mnist/
fi
cd "$pack/run"
passed=0
failed=0
# A check passes when its log ends "<name> exit 0" and holds none of
# LibTorch's deprecation or unclean-teardown warnings.
verdict() {
  local log=$1 name
  name=$(basename "$log" .log)
  local warned
  warned=$(grep -c -a -E 'deprecated|destroy_process_group' "$log")
  if tail -1 "$log" | grep -q -x "$name exit 0" && [ "$warned" = 0 ]; then
    passed=$((passed + 1))
    echo "PASS $name"
  else
    failed=$((failed + 1))
    echo "FAIL $name ($(tail -1 "$log"), $warned warning lines)"
  fi
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/env.txt"
tools/train --version 2>&1 | tee -a "$out/env.txt"
(timeout 120 tests/cuda_test 2>&1; echo "cuda_test exit $?") > "$out/cuda_test.log"
tail -25 "$out/cuda_test.log"
verdict "$out/cuda_test.log"
single='[type.googleapis.com/pipeline.SingleDeviceOptions] { device: "cuda:0" }'
ddp='[type.googleapis.com/pipeline.DdpOptions] { nproc_per_node: 1 backend: NCCL device: "cuda" }'
dp='[type.googleapis.com/pipeline.DataParallelOptions] { replicas: 0 device: "cuda" }'
one_epoch() {
  local name=$1
  shift
  (timeout 150 tools/train "$@" --set=trainer.epochs=1 --set=output_dir=/tmp/$name 2>&1
   echo "$name exit $?") > "$out/$name.log"
  grep -a -E '"summary"|exit|rror' "$out/$name.log" | cut -c1-600
  verdict "$out/$name.log"
}
one_epoch fp32 --config=configs/single.textproto --set="strategy={name: \"single\" options { $single }}"
one_epoch bf16 --config=configs/single.textproto --set="strategy={name: \"single\" options { $single }}" \
  --set=trainer.precision=BF16_AUTOCAST
one_epoch ddp_nccl --config=configs/ddp.textproto --set="strategy={name: \"ddp\" options { $ddp }}"
one_epoch dp_cuda --config=configs/dp.textproto --set="strategy={name: \"data_parallel\" options { $dp }}"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
