#!/usr/bin/env bash
# LibTorch 1.13 (Debian 12, this machine's build) against LibTorch 2.6 (the
# Debian 13 root's CUDA build, running its CPU kernels) on the same CPU: the
# bench's compute ceiling (the jpeg config's model, ResNet18, forward +
# backward + optimizer step on in-memory 224x224 batches, every core), in
# fp32 and in bf16 autocast + channels_last. The two builds alternate, round
# after round, so the machine's drift over minutes hits both alike.
#
#   tools/bench_libtorch.sh            # 3 rounds; ROUNDS=5 for more
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}

echo "bench_libtorch: building //tools:bench for LibTorch 1.13 here and 2.6 in the Debian 13 root" >&2
bazel build //tools:bench >/dev/null 2>&1 || { bazel build //tools:bench; exit 1; }
# Bazel's output tree lives under the same path inside the root, so
# bazel-bin/tools/bench is each world's own binary.
tools/debian13.sh bazel build --config=cuda //tools:bench >/dev/null 2>&1 ||
  { tools/debian13.sh bazel build --config=cuda //tools:bench; exit 1; }

ceiling() {  # ceiling WORLD(host|root) EXTRA_FLAGS...
  local world=$1
  shift
  local run=(bazel-bin/tools/bench --compute_child "$@")
  if [[ $world == root ]]; then run=(tools/debian13.sh "${run[@]}"); fi
  "${run[@]}" 2>/dev/null | tail -1
}

declare -A sums
for ((round = 1; round <= ROUNDS; round++)); do
  for variant in fp32 bf16; do
    flags=()
    [[ $variant == bf16 ]] && flags=(--compute_bf16 --compute_channels_last)
    for world in host root; do
      rate=$(ceiling "$world" "${flags[@]}")
      echo "round $round $variant $world: $rate images/s" >&2
      sums[$variant.$world]=$(awk -v a="${sums[$variant.$world]:-0}" -v b="$rate" 'BEGIN{print a+b}')
    done
  done
done

echo "## LibTorch 1.13 (Debian 12) against 2.6 (Debian 13), compute ceiling at 224, $(nproc) cores, mean of $ROUNDS alternated rounds"
echo
echo "| precision | 1.13 images/s | 2.6 images/s | 2.6 / 1.13 |"
echo "|---|---|---|---|"
for variant in fp32 bf16; do
  awk -v a="${sums[$variant.host]}" -v b="${sums[$variant.root]}" -v n="$ROUNDS" -v v="$variant" 'BEGIN{
    label = (v == "fp32") ? "fp32" : "bf16 autocast + channels_last";
    printf "| %s | %.2f | %.2f | %.2f |\n", label, a / n, b / n, b / a }'
done
