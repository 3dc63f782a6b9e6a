"""The models section's Python reference: torchvision's model of the same
name, trained the way //tools:bench's models section trains the runner's.

    python3 tools/bench_models_reference.py --model=resnet18 --batch_size=8 \
        --threads=2 --min_seconds=8 [--kwargs='{"aux_logits": false}']

Random 224x224 images and labels of 1000 classes, SGD with momentum 0.9 at
lr 0.01, cross-entropy; one untimed step, then steps until min_seconds have
passed (at least two). Prints one JSON line: training images/s and the
library versions. Run by //tools:bench (with LD_PRELOAD of the tcmalloc it
links) when Debian's python3-torchvision is installed.
"""
import argparse
import json
import time

import torch
import torchvision


def steps_per_second(step, min_seconds, warmup=1, min_steps=2):
    for _ in range(warmup):
        step()
    start = time.perf_counter()
    steps = 0
    while True:
        step()
        steps += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds and steps >= min_steps:
            return steps / elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="torchvision.models name")
    parser.add_argument("--kwargs", default="{}", help="JSON: keyword arguments of the builder")
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--min_seconds", type=float, default=8)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = torchvision.models.get_model(args.model, num_classes=1000, **json.loads(args.kwargs))
    model.train()
    sgd = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = torch.randn(args.batch_size, 3, 224, 224)
    labels = torch.randint(1000, (args.batch_size,))

    def step():
        sgd.zero_grad()
        torch.nn.functional.cross_entropy(model(images), labels).backward()
        sgd.step()

    rate = steps_per_second(step, args.min_seconds) * args.batch_size
    print(json.dumps({
        "model_images_per_sec": rate,
        "model": args.model,
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
    }))


if __name__ == "__main__":
    main()
