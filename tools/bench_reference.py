"""The benchmark's Python reference: the same data pipelines in PIL and
torchvision, one process, one thread, as a PyTorch user would write them.

    python3 tools/bench_reference.py --jpeg_root=DIR --fashion_mnist_root=DIR

Prints one JSON line: images/s of each pipeline and the library versions.
Run by //tools:bench when Debian's python3-torchvision is installed.
"""
import argparse
import gzip
import json
import os
import time

import numpy as np
import PIL
import torch
import torchvision
from PIL import Image
from torchvision import transforms


def jpeg_rate(root, images, batch_size):
    paths = []
    for name in sorted(os.listdir(root)):
        folder = os.path.join(root, name)
        paths += [os.path.join(folder, f) for f in sorted(os.listdir(folder))]
    # torchvision's ImageFolder loader and the cats_vs_dogs training transforms
    # (TrivialAugmentWide on the PIL image, as torchvision's reference recipe).
    transform = transforms.Compose([
        transforms.RandomResizedCrop(224),
        transforms.RandomHorizontalFlip(),
        transforms.TrivialAugmentWide(),
        transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
        transforms.RandomErasing(p=0.1),
    ])

    def load(path):
        with open(path, "rb") as f:
            return transform(Image.open(f).convert("RGB"))

    for path in paths[:8]:  # warm-up: imports, caches
        load(path)
    start = time.perf_counter()
    done = 0
    while done < images:
        batch = [load(paths[(done + i) % len(paths)]) for i in range(batch_size)]
        torch.stack(batch)
        done += batch_size
    return done / (time.perf_counter() - start)


def fashion_mnist_rate(root, images, batch_size):
    with gzip.open(os.path.join(root, "train-images-idx3-ubyte.gz"), "rb") as f:
        pixels = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    # torchvision.datasets.FashionMNIST.__getitem__ and the single.textproto
    # transforms.
    transform = transforms.Compose([
        transforms.ToTensor(),
        transforms.Normalize((0.286,), (0.353,)),
    ])
    start = time.perf_counter()
    done = 0
    while done < images:
        batch = [transform(Image.fromarray(pixels[(done + i) % len(pixels)], mode="L"))
                 for i in range(batch_size)]
        torch.stack(batch)
        done += batch_size
    return done / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--jpeg_root", required=True)
    parser.add_argument("--fashion_mnist_root", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--jpeg_images", type=int, default=512)
    parser.add_argument("--fashion_mnist_images", type=int, default=20480)
    parser.add_argument("--batch_size", type=int, default=32)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(1)
    print(json.dumps({
        "jpeg_images_per_sec": jpeg_rate(args.jpeg_root, args.jpeg_images, args.batch_size),
        "fashion_mnist_images_per_sec": fashion_mnist_rate(
            args.fashion_mnist_root, args.fashion_mnist_images, args.batch_size),
        "torchvision": torchvision.__version__,
        "pillow": PIL.__version__,
        "torch": torch.__version__,
    }))


if __name__ == "__main__":
    main()
