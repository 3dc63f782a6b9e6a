#!/bin/bash
# On the GPU machine, in a folder build_for_gpu.sh packed: the runner's
# training speed against PyTorch's on the same GPU, in one run, as a
# Markdown table (OUT_FOLDER/gpu_bench.md, also printed) with each
# measurement's logs beside it:
#   (a) ResNet18, 224 px, batch 256, bf16 autocast + channels-last, SGD:
#       `train` on the synthetic dataset; PyTorch eager and torch.compile on
#       in-memory uint8 batches normalized on the GPU (torch_step_bench.py);
#   (b) the same step fed from a JPEG ImageFolder (RandomResizedCrop 224 +
#       flip + to_float + normalize, a loader thread or worker per core):
#       `train` with image_folder; PyTorch's DataLoader + torchvision;
#   (c) one epoch of configs/single.textproto on cuda:0: plain, with
#       trainer.cuda_graphs, and ddp over NCCL with one rank.
# Every measurement has its own timeout and all of them share one budget
# (GPU_BENCH_BUDGET_S, default 450 s), so the script ends within it; a
# measurement that fails, times out or finds the budget spent gives
# "failed (reason)" in its row and the script goes on.
#   bash gpu_bench.sh OUT_FOLDER
# Scratch (the JPEG corpus, the runs' output_dirs) goes to a new folder in
# GPU_BENCH_WORK (default /tmp), removed at the end, not to OUT_FOLDER:
# OUT_FOLDER is what comes back from the machine.
set -uo pipefail
out=${1:?usage: gpu_bench.sh OUT_FOLDER}
mkdir -p "$out" && out=$(realpath "$out")
pack=$(cd "$(dirname "$0")" && pwd)
budget=${GPU_BENCH_BUDGET_S:-450}
deadline=$((SECONDS + budget))
device=${GPU_BENCH_DEVICE:-cuda:0}
batch=${GPU_BENCH_BATCH:-256}
size=${GPU_BENCH_IMAGE_SIZE:-224}
seconds=${GPU_BENCH_SECONDS:-15}     # PyTorch's timed steps, after its warm-up
a_steps=${GPU_BENCH_A_STEPS:-200}    # the runner's steps per epoch in (a), 3 epochs
b_epochs=${GPU_BENCH_B_EPOCHS:-6}    # the runner's epochs over the corpus in (b)
images=${GPU_BENCH_IMAGES:-10000}    # the JPEG corpus of (b)
cores=$(nproc)
baseline=13782 # images/s of the plain (c) run on an H100, docs/cuda.md, 2026-12-05
torch=$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null)
nvidia=$(dirname "${torch:-/nonexistent}")/nvidia
# As gpu_checks.sh, but for the runner's binaries only: Python's torch finds
# its own libraries, and the pack's (built on Debian) are not for it.
runner=(env "LD_LIBRARY_PATH=$torch/lib:$nvidia/cu13/lib:$nvidia/cu12/lib:$nvidia/cudnn/lib:$nvidia/nccl/lib:$nvidia/cusparselt/lib:$nvidia/nvshmem/lib:$pack/libs")
bench_py=(python3 "$pack/torch_step_bench.py" --device="$device" --batch="$batch"
  --image_size="$size" --seconds="$seconds")
if [ ! -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  mkdir -p /usr/share/datasets/fashion-mnist && cp "$pack"/data/* /usr/share/datasets/fashion-mnist/
fi
cd "$pack/run" || exit 1
echo "the runner's binaries run with ${runner[1]}" | tee "$out/commands.txt"
work=$(mktemp -d "${GPU_BENCH_WORK:-/tmp}/gpu_bench.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
mkdir -p "$out/configs"
declare -A rate val failed note

# ---- running one measurement ----

# Seconds the next measurement may take: its own cap or what is left of the
# budget, whichever is less.
limit_for() {
  local cap=$1 left=$((deadline - SECONDS))
  echo $((left < cap ? left : cap))
}

# One line fit for a table cell, at most WIDTH (default 160) characters.
cell() { tr '|\n' '/ ' | sed 's/  */ /g; s/ $//' | cut -c1-"${1:-160}"; }

# The line of a log that says why a program failed: its last error line,
# else its last line.
reason_in() {
  local line
  line=$(grep -a -i -E 'error|what\(\)|terminate|exception|traceback' "$1" | tail -1)
  [ -n "$line" ] || line=$(grep -a -v '^[[:space:]]*$' "$1" | tail -1)
  echo "${line:-no output}" | cell
}

# measure NAME CAP PROGRAM ARGS...: the program under a timeout, its stdout in
# NAME.out, stderr in NAME.log. Returns 0 when it ran and exited 0, else
# records why in failed[NAME].
measure() {
  local name=$1 cap=$2 limit
  shift 2
  limit=$(limit_for "$cap")
  if [ "$limit" -lt 15 ]; then
    failed[$name]="not run: the ${budget} s budget was spent"
    return 1
  fi
  local shown="$*"
  echo "$name (at most $limit s): ${shown#env LD_LIBRARY_PATH=* }" | tee -a "$out/commands.txt"
  local start=$SECONDS
  timeout -k 10 "$limit" "$@" >"$out/$name.out" 2>"$out/$name.log"
  local rc=$?
  echo "  exit $rc after $((SECONDS - start)) s" | tee -a "$out/commands.txt"
  case $rc in
    0) return 0 ;;
    124 | 137) failed[$name]="timed out after $limit s" ;;
    *) failed[$name]="exit $rc: $(reason_in "$out/$name.log")" ;;
  esac
  return 1
}

# ---- reading results ----

# "images/s val_acc" from the runner's JSON events (its stdout). With more
# than one epoch, images/s is over the epochs after the first (which holds
# cuDNN's autotuning, the allocator's first blocks and the loader's first
# fill): the steps between the first and the last epoch event times the
# batch, over those epochs' seconds. With one epoch, the summary's (what
# docs/cuda.md's 13,782 is). val_acc from the summary, "-" without one.
runner_result() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
events = []
for line in open(sys.argv[1], errors="replace"):
    if line.startswith("{"):
        try:
            events.append(json.loads(line))
        except ValueError:
            pass
epochs = [e for e in events if e.get("event") == "epoch"]
summary = [e for e in events if e.get("event") == "summary"]
if not summary:
    sys.exit("no summary event")
if len(epochs) > 1:
    images = (epochs[-1]["step"] - epochs[0]["step"]) * int(sys.argv[2])
    rate = images / sum(e["seconds"] for e in epochs[1:])
else:
    rate = summary[-1]["images_per_sec"]
acc = summary[-1].get("val_acc")
print("%.1f %s" % (rate, "-" if acc is None else "%.2f%%" % (100 * acc)))
EOF
}

# torch_step_bench.py's JSON line: "images/s", or its error on stderr.
torch_result() {
  python3 -c '
import json, sys
lines = [l for l in open(sys.argv[1]) if l.startswith("{")]
if not lines:
    sys.exit("no result line")
result = json.loads(lines[-1])
if result.get("error"):
    sys.exit(result["error"])
print("%.1f" % result["images_per_sec"])' "$1"
}

# What a torch_step_bench.py row ran: its model, data, warm-up and memory.
torch_details() {
  python3 -c '
import json, sys
lines = [l for l in open(sys.argv[1]) if l.startswith("{")]
result = json.loads(lines[-1]) if lines else {}
parts = [result.get("model"), result.get("data"), "torch %s" % result.get("torch")]
if result.get("warmup_seconds") is not None:
    parts.append("%d warm-up steps in %.1f s" % (result["warmup_steps"], result["warmup_seconds"]))
if result.get("peak_memory_gib") is not None:
    parts.append("peak %.1f GiB" % result["peak_memory_gib"])
print("; ".join(p for p in parts if p))' "$1" 2>/dev/null | cell 500
}

# Records NAME's rate (and val_acc) from its output, or why there is none.
collect() {
  local name=$1 kind=$2 parsed
  [ -z "${failed[$name]:-}" ] || return
  if [ "$kind" = runner ]; then
    parsed=$(runner_result "$out/$name.out" "$3" 2>"$work/parse.err")
  else
    parsed=$(torch_result "$out/$name.out" 2>"$work/parse.err")
  fi
  if [ -z "$parsed" ]; then
    failed[$name]=$(cell <"$work/parse.err")
    return
  fi
  read -r "rate[$name]" "val[$name]" <<<"$parsed"
}

# A torch_step_bench.py row fails with the script's own reason, not with
# "exit 1".
collect_torch() {
  local name=$1
  if [ -n "${failed[$name]:-}" ] && [ -s "$out/$name.out" ]; then
    local reason
    reason=$(torch_result "$out/$name.out" 2>&1 >/dev/null)
    [ -z "$reason" ] || failed[$name]=$(echo "$reason" | cell)
  fi
  collect "$name" torch
}

# ---- configs ----

# What (a) and (b) share: configs/cats_vs_dogs.textproto's model and
# optimizer on cuda:0 in bf16 + channels-last, no validation, no checkpoints.
step_config() {
  local output_dir=$1 epochs=$2
  cat <<EOF
model { name: "resnet" options { [type.googleapis.com/pipeline.ResNetOptions] { depth: 18 } } }
strategy {
  name: "single"
  options { [type.googleapis.com/pipeline.SingleDeviceOptions] { device: "$device" } }
}
optimizer {
  name: "sgd"
  options {
    [type.googleapis.com/pipeline.SgdOptions] { lr: 0.05 momentum: 0.9 weight_decay: 0.0001 }
  }
}
trainer {
  epochs: $epochs batch_size: $batch seed: 1 log_interval: 20
  precision: BF16_AUTOCAST memory_format: CHANNELS_LAST
}
checkpoint { every_epochs: 0 }
output_dir: "$output_dir"
EOF
}

normalize='transforms {
    name: "normalize"
    options {
      [type.googleapis.com/pipeline.NormalizeOptions] {
        mean: [0.485, 0.456, 0.406] std: [0.229, 0.224, 0.225]
      }
    }
  }'

# (a): synthetic images made in the loader's threads (one per core), 3
# epochs of a_steps steps; the last two are timed.
synthetic_config() {
  step_config "$work/a_runner" 3
  cat <<EOF
train_data {
  dataset {
    name: "synthetic"
    options {
      [type.googleapis.com/pipeline.SyntheticOptions] {
        num_samples: $((a_steps * batch)) height: $size width: $size channels: 3 num_classes: 10
      }
    }
  }
  transforms { name: "to_float" }
  $normalize
  num_workers: $cores
}
EOF
}

# (b): the JPEG folder, b_epochs epochs; all but the first are timed.
folder_config() {
  step_config "$work/b_runner" "$b_epochs"
  cat <<EOF
train_data {
  dataset {
    name: "image_folder"
    options { [type.googleapis.com/pipeline.ImageFolderOptions] { root: "$1" color: RGB } }
  }
  transforms {
    name: "random_resized_crop"
    options { [type.googleapis.com/pipeline.RandomResizedCropOptions] { size: $size } }
  }
  transforms { name: "random_horizontal_flip" }
  transforms { name: "to_float" }
  $normalize
  num_workers: $cores
}
EOF
}

# ---- the JPEG corpus ----

# make_jpeg_corpus's crops of the packed photographs (500x375, quality 75),
# one process per photo: its seed is fixed and it takes the photos in name
# order, so each process sees them renamed in another rotation and crops
# other photos than the rest. Each writes <part>/<class>/N.jpg; the part
# folders move under the class folders, where both loaders look too.
# Records why in failed[corpus] when it cannot make one batch's worth.
make_corpus() {
  local corpus=$1 photos=("$pack"/photos/*.jpg) limit k i status=0
  local parts=${#photos[@]}
  local per_class=$(((images / 2 + parts - 1) / parts))
  limit=$(limit_for 60)
  [ "$limit" -ge 15 ] || { failed[corpus]="not run: the ${budget} s budget was spent"; return 1; }
  [ -e "${photos[0]}" ] || { failed[corpus]="no photographs in $pack/photos"; return 1; }
  mkdir -p "$corpus/cat" "$corpus/dog"
  echo "corpus (at most $limit s): $parts x make_jpeg_corpus --images_per_class=$per_class" |
    tee -a "$out/commands.txt"
  for ((k = 0; k < parts; k++)); do
    mkdir -p "$work/photos_$k"
    for ((i = 0; i < parts; i++)); do
      ln -s "${photos[(i + k) % parts]}" "$work/photos_$k/$(printf %03d "$i").jpg"
    done
    "${runner[@]}" timeout "$limit" tools/make_jpeg_corpus --source_dir="$work/photos_$k" \
      --output_dir="$work/part_$k" --images_per_class="$per_class" >>"$out/corpus.log" 2>&1 &
  done
  for ((k = 0; k < parts; k++)); do wait -n || status=$?; done
  for ((k = 0; k < parts; k++)); do
    mv "$work/part_$k/cat" "$corpus/cat/part_$k" && mv "$work/part_$k/dog" "$corpus/dog/part_$k"
  done 2>/dev/null
  local count
  count=$(find "$corpus" -name '*.jpg' | wc -l)
  note[corpus]="$count JPEGs, $(du -sh "$corpus" | cut -f1)"
  echo "  ${note[corpus]}, last exit $status" | tee -a "$out/commands.txt"
  if [ "$status" != 0 ] || [ "$count" -lt "$batch" ]; then
    failed[corpus]="make_jpeg_corpus: exit $status, $count JPEGs: $(reason_in "$out/corpus.log")"
    return 1
  fi
}

# ---- the measurements ----

run_a() {
  synthetic_config >"$out/configs/a_runner.textproto"
  measure a_runner 120 "${runner[@]}" tools/train --config="$out/configs/a_runner.textproto"
  collect a_runner runner "$batch"
  measure a_eager 75 "${bench_py[@]}" --warmup=20
  collect_torch a_eager
}

run_a_compile() {
  measure a_compile 200 "${bench_py[@]}" --compile --warmup=20
  collect_torch a_compile
}

run_b() {
  local corpus=$work/corpus
  if ! make_corpus "$corpus"; then
    failed[b_runner]="no corpus: ${failed[corpus]}"
    failed[b_torch]=${failed[b_runner]}
    return
  fi
  folder_config "$corpus" >"$out/configs/b_runner.textproto"
  measure b_runner 100 "${runner[@]}" tools/train --config="$out/configs/b_runner.textproto"
  collect b_runner runner "$batch"
  measure b_torch 75 "${bench_py[@]}" --image_folder="$corpus" --num_workers="$cores" --warmup=10
  collect_torch b_torch
}

# As gpu_checks.sh's one_epoch: the default job, one epoch, on cuda:0.
fashion_epoch() {
  local name=$1
  shift
  measure "$name" 75 "${runner[@]}" tools/train "$@" --set=trainer.epochs=1 --set=output_dir="$work/$name"
  collect "$name" runner 0
}

run_c() {
  local single="[type.googleapis.com/pipeline.SingleDeviceOptions] { device: \"$device\" }"
  local ddp='[type.googleapis.com/pipeline.DdpOptions] { nproc_per_node: 1 backend: NCCL device: "cuda" }'
  local plain=(--config=configs/single.textproto --set="strategy={name: \"single\" options { $single }}")
  fashion_epoch c_plain "${plain[@]}"
  fashion_epoch c_graphs "${plain[@]}" --set=trainer.cuda_graphs=true
  fashion_epoch c_ddp --config=configs/ddp.textproto --set="strategy={name: \"ddp\" options { $ddp }}"
}

# ---- the table ----

# A/B to 2 places, "-" when either is missing.
ratio() { awk -v a="${1:--}" -v b="${2:--}" 'BEGIN {
  if (a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
# Whether ratio R reaches T: "yes", "no", or "-".
meets() { awk -v r="$1" -v t="$2" 'BEGIN { print r == "-" ? "-" : (r + 0 >= t ? "yes" : "no") }'; }
# 13782.4 -> 13,782
thousands() { printf '%.0f' "$1" | sed ':a; s/\B[0-9]\{3\}\>/,&/; ta'; }
rate_cell() {
  if [ -n "${rate[$1]:-}" ]; then thousands "${rate[$1]}"; else echo "failed (${failed[$1]:-no result})"; fi
}

# The machine, the libraries and the date, above the table.
header() {
  local gpu cpu torch_version
  gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
  cpu=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
  torch_version=$(python3 -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda,
    "cuDNN", torch.backends.cudnn.version())' 2>&1 | tail -1)
  echo "GPU: ${gpu:-none found by nvidia-smi} (name, driver); torch $torch_version;" \
    "CPU: ${cpu:-unknown}, $cores cores; $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "Runner: $("${runner[@]}" tools/train --version 2>&1 | head -1)"
}

table() {
  local faster a_vs b_vs_torch b_vs_a graphs_vs
  faster=$(printf '%s\n' "${rate[a_eager]:-}" "${rate[a_compile]:-}" | sort -g | tail -1)
  a_vs=$(ratio "${rate[a_runner]:-}" "$faster")
  b_vs_torch=$(ratio "${rate[b_runner]:-}" "${rate[b_torch]:-}")
  b_vs_a=$(ratio "${rate[b_runner]:-}" "${rate[a_runner]:-}")
  graphs_vs=$(ratio "${rate[c_graphs]:-}" "$baseline")
  echo "$header_text"
  echo
  echo "| row | what | images/s | val_acc | target | ratio | met |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
  echo "| (a) runner | \`train\`, synthetic ${size} px, batch $batch, bf16 autocast + channels-last, SGD; epochs 2-3 of 3 | $(rate_cell a_runner) | - | >= 1.0x the faster PyTorch row | $a_vs | $(meets "$a_vs" 1.0) |"
  echo "| (a) PyTorch eager | torch_step_bench.py, the same step; uint8 batches in pinned memory, normalized on the GPU | $(rate_cell a_eager) | - | - | - | - |"
  echo "| (a) PyTorch torch.compile | the same, torch.compile(model), compilation in the warm-up | $(rate_cell a_compile) | - | - | - | - |"
  echo "| (b) runner | \`train\`, image_folder (${note[corpus]:-no corpus}), random_resized_crop + flip + to_float + normalize, $cores loader threads; epochs 2-$b_epochs of $b_epochs | $(rate_cell b_runner) | - | >= 1.5x PyTorch's loader; >= 0.9x (a) runner | $b_vs_torch; $b_vs_a | $(meets "$b_vs_torch" 1.5); $(meets "$b_vs_a" 0.9) |"
  echo "| (b) PyTorch DataLoader | ImageFolder + torchvision transforms, num_workers=$cores, pin_memory, the (a) eager step | $(rate_cell b_torch) | - | - | - | - |"
  echo "| (c) Fashion-MNIST | configs/single.textproto on $device, 1 epoch | $(rate_cell c_plain) | ${val[c_plain]:--} | - (13,782 in docs/cuda.md; ratio to it) | $(ratio "${rate[c_plain]:-}" "$baseline") | - |"
  echo "| (c) CUDA graphs | the same, --set=trainer.cuda_graphs=true | $(rate_cell c_graphs) | ${val[c_graphs]:--} | >= 3x 13,782 | $graphs_vs | $(meets "$graphs_vs" 3) |"
  echo "| (c) ddp over NCCL | configs/ddp.textproto, 1 rank on cuda:0, 1 epoch | $(rate_cell c_ddp) | ${val[c_ddp]:--} | - | - | - |"
  echo
  echo "Runner rows of (a) and (b): images/s over the epochs after the first, from the"
  echo "epoch events on \`train\`'s stdout; (c): the summary event's images_per_sec (the"
  echo "whole epoch). PyTorch rows: after their warm-up steps, ${seconds} s of timed steps"
  echo "between torch.cuda.synchronize calls. Logs: OUT_FOLDER/<row>.log and .out."
  local name
  for name in a_eager a_compile b_torch; do
    [ -s "$out/$name.out" ] && echo "- $name: $(torch_details "$out/$name.out")"
  done
  # A step that cannot be captured trains on without graphs, saying why.
  local graphs
  graphs=$(grep -a -i -m3 'graph' "$out/c_graphs.log" 2>/dev/null | cell 500)
  [ -z "$graphs" ] || echo "- c_graphs log: $graphs"
  return 0
}

header_text=$(header)
# The table is rewritten after each part, so a run stopped from outside
# still leaves the rows it measured.
run_a; table >"$out/gpu_bench.md"
run_b; table >"$out/gpu_bench.md"
run_c; table >"$out/gpu_bench.md"
run_a_compile  # last: its compilation takes what the others leave of the budget
table | tee "$out/gpu_bench.md"
echo "done in $SECONDS s (budget $budget s)"
