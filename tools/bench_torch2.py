"""PyTorch 2.x's own training step, for //tools:bench's torch2 section.

The runner's compute ceiling, written as a PyTorch user would: torchvision's
ResNet18 (2 classes), SGD (lr 0.05, momentum 0.9, weight decay 1e-4, as
configs/cats_vs_dogs.textproto), cross-entropy, forward + backward + step on
one in-memory 224x224 batch, every core. Eager or torch.compile (inductor),
float32 or bf16 autocast + channels-last:

    python3 tools/bench_torch2.py --batch_size=32 --threads=2 --precision=BF16 --compile

Prints one JSON line: images/s over the timed steps (after the warm-up
steps, which include inductor's compilation), the torch version, the mode.
//tools:bench runs it in the Debian 13 root (tools/debian13.sh), where
python3-torch is 2.6, with tcmalloc preloaded as the runner links it.
"""
import argparse
import json
import time

import torch
import torchvision


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--precision", choices=["FP32", "BF16"], default="FP32")
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--warmup_steps", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--max_steps", type=int, default=30)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    bf16 = args.precision == "BF16"
    memory_format = torch.channels_last if bf16 else torch.contiguous_format
    model = torchvision.models.resnet18(num_classes=2).to(memory_format=memory_format)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    images = torch.randn(args.batch_size, 3, 224, 224).to(memory_format=memory_format)
    labels = torch.randint(2, (args.batch_size,))

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = torch.nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()

    if args.compile:
        step = torch.compile(step)
    warmup_start = time.perf_counter()
    for _ in range(args.warmup_steps):
        step()
    warmup_seconds = time.perf_counter() - warmup_start

    steps = 0
    start = time.perf_counter()
    while steps < args.max_steps and (steps < 3 or time.perf_counter() - start < args.seconds):
        step()
        steps += 1
    seconds = time.perf_counter() - start
    print(json.dumps({
        "images_per_sec": steps * args.batch_size / seconds,
        "steps": steps,
        "warmup_seconds": warmup_seconds,
        "torch": torch.__version__,
        "compile": args.compile,
        "precision": args.precision,
        "threads": torch.get_num_threads(),
    }))


if __name__ == "__main__":
    main()
