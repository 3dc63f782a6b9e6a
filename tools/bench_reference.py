"""The benchmark's Python reference: the same data pipelines in PIL and
torchvision, one process, one thread, as a PyTorch user would write them.

    python3 tools/bench_reference.py --jpeg_root=DIR --fashion_mnist_root=DIR

Prints one JSON line: images/s of each pipeline and the library versions.
With --transforms, each augmentation alone on 224x224 images instead, and
the JPEG pipeline with RandAugment.

With --ddp_steps, PyTorch's own DistributedDataParallel instead: the ddp
options' nproc_per_node processes (gloo over 127.0.0.1), 1 thread each,
torchvision's ResNet on in-memory 28x28 Fashion-MNIST tensors (random ones
without the files), no loader, with the model, optimizer, loss, memory format,
autocast and DDP options //tools:bench reads from the ddp config:

    python3 tools/bench_reference.py --ddp_steps=40 --batch_size=64 \
        --optimizer=adamw --optimizer_options="lr: 0.002 weight_decay: 0.05"

Prints one JSON line: images/s of both ranks together over the timed steps
(after --ddp_warmup_steps untimed ones). //tools:bench runs it with
LD_PRELOAD of the tcmalloc `train` links; under glibc malloc it is 2-3x slower.
Run by //tools:bench when Debian's python3-torch and python3-torchvision are
installed.
"""
import argparse
import gzip
import json
import os
import re
import socket
import time

import numpy as np
import PIL
import torch
import torchvision
from PIL import Image
from torchvision import transforms


def jpeg_paths(root):
    paths = []
    for name in sorted(os.listdir(root)):
        folder = os.path.join(root, name)
        paths += [os.path.join(folder, f) for f in sorted(os.listdir(folder))]
    return paths


def jpeg_rate(root, images, batch_size, augment=None):
    paths = jpeg_paths(root)
    # torchvision's ImageFolder loader and the cats_vs_dogs training transforms
    # (TrivialAugmentWide on the PIL image, as torchvision's reference recipe;
    # or `augment` in its place).
    transform = transforms.Compose([
        transforms.RandomResizedCrop(224),
        transforms.RandomHorizontalFlip(),
        augment or transforms.TrivialAugmentWide(),
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


def transform_rates(root, seconds):
    """Each augmentation alone on 224x224 RGB PIL images (RandomErasing, which
    takes tensors only, on uint8 tensors), the keys //tools:bench's
    transforms section uses."""
    images = []
    for path in jpeg_paths(root)[:64]:
        with open(path, "rb") as f:
            images.append(Image.open(f).convert("RGB").resize((224, 224), Image.BILINEAR))
    tensors = [transforms.functional.pil_to_tensor(image) for image in images]
    cases = {
        "color_jitter": (transforms.ColorJitter(0.4, 0.4, 0.4, 0.1), images),
        "random_erasing": (transforms.RandomErasing(p=1), tensors),
        "trivial_augment_wide": (transforms.TrivialAugmentWide(), images),
        "rand_augment": (transforms.RandAugment(), images),
        "random_rotation": (transforms.RandomRotation(30), images),
        "random_affine": (transforms.RandomAffine(10, (0.1, 0.1), (0.9, 1.1), 5), images),
        "random_crop_padding_4": (transforms.RandomCrop(224, padding=4), images),
        "gaussian_blur": (transforms.GaussianBlur(23, (0.1, 2.0)), images),
    }
    rates = {}
    for name, (transform, inputs) in cases.items():
        for x in inputs[:8]:  # warm-up
            transform(x)
        start = time.perf_counter()
        done = 0
        while time.perf_counter() - start < seconds:
            transform(inputs[done % len(inputs)])
            done += 1
        rates[name] = done / (time.perf_counter() - start)
    return rates


# ---- DDP ----

def options(text):
    """A plugin's options as //tools:bench prints them ("lr: 0.002 nesterov:
    true"): a dict of Python values."""
    values = {}
    for key, value in re.findall(r'(\w+): ("[^"]*"|\S+)', text):
        if value.startswith('"'):
            values[key] = value[1:-1]
        elif value in ("true", "false"):
            values[key] = value == "true"
        else:
            try:
                values[key] = float(value) if re.search(r"[.eE]|inf|nan", value) else int(value)
            except ValueError:
                values[key] = value  # an enum's name
    return values


def take(values, *keys):
    """Pops `keys` from `values`; fails on any option left over, which this
    reference does not mirror."""
    taken = {key: values.pop(key) for key in keys if key in values}
    if values:
        raise SystemExit("bench_reference.py: options not mirrored: %s" % sorted(values))
    return taken


def ddp_model(args):
    if args.model != "resnet":
        raise SystemExit("bench_reference.py: --ddp_steps mirrors model resnet only, not "
                         + args.model)
    model_options = options(args.model_options)
    depth = model_options.pop("depth", 18)
    kwargs = take(model_options, "zero_init_residual")
    model = getattr(torchvision.models, "resnet%d" % depth)(num_classes=args.num_classes, **kwargs)
    if args.in_channels != 3:
        # As the runner's ResNet with in_channels: torchvision's stem, other inputs.
        model.conv1 = torch.nn.Conv2d(args.in_channels, 64, 7, 2, 3, bias=False)
    return model


def ddp_optimizer(args, parameters, sharded):
    """The config's optimizer; `sharded`: as ddp's shard_optimizer_state, a
    ZeroRedundancyOptimizer of it."""
    values = options(args.optimizer_options)
    if args.optimizer in ("adam", "adamw"):
        kwargs = {"betas": (values.pop("beta1", 0.9), values.pop("beta2", 0.999))}
        kwargs.update(take(values, "lr", "eps", "weight_decay", "amsgrad"))
        kind = torch.optim.AdamW if args.optimizer == "adamw" else torch.optim.Adam
    elif args.optimizer == "sgd":
        kwargs = take(values, "lr", "momentum", "dampening", "weight_decay", "nesterov")
        kind = torch.optim.SGD
    else:
        raise SystemExit("bench_reference.py: optimizer not mirrored: " + args.optimizer)
    if sharded:
        from torch.distributed.optim import ZeroRedundancyOptimizer
        return ZeroRedundancyOptimizer(parameters, optimizer_class=kind, **kwargs)
    return kind(parameters, **kwargs)


def ddp_data(args, rank, count):
    """`count` images and labels of rank's shard (every world_size-th image),
    normalized as the configs do, or random ones without the files."""
    path = os.path.join(args.fashion_mnist_root, "train-images-idx3-ubyte.gz")
    if not os.path.exists(path):
        torch.manual_seed(rank)
        return (torch.randn(count, args.in_channels, 28, 28),
                torch.randint(args.num_classes, (count,)), "random tensors")
    with gzip.open(path, "rb") as f:
        pixels = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(path.replace("images-idx3", "labels-idx1"), "rb") as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    index = (rank + args.world_size * np.arange(count)) % len(pixels)
    images = (torch.from_numpy(pixels[index].astype(np.float32)) / 255 - 0.286) / 0.353
    return (images.expand(-1, args.in_channels, -1, -1).contiguous(),
            torch.from_numpy(labels[index].astype(np.int64)), "Fashion-MNIST train images")


def ddp_worker(rank, args, port, results):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    # Loopback, as the runner's ddp when every rank is on this machine.
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    torch.set_num_threads(1)
    torch.distributed.init_process_group("gloo", rank=rank, world_size=args.world_size)
    torch.manual_seed(args.seed)
    ddp = options(args.ddp_options)
    if (ddp.pop("backend", "GLOO"), ddp.pop("device", "cpu")) != ("GLOO", "cpu"):
        raise SystemExit("bench_reference.py: --ddp_steps mirrors gloo on the CPU only")
    compression = ddp.pop("gradient_compression", "NONE")
    sharded = ddp.pop("shard_optimizer_state", False)
    if ddp.pop("sync_batch_norm", False):
        raise SystemExit("bench_reference.py: sync_batch_norm not mirrored: torch 1.13's "
                         "SyncBatchNorm runs on CUDA only")
    kwargs = {"bucket_cap_mb": ddp.pop("bucket_cap_mb", 25),
              "broadcast_buffers": ddp.pop("broadcast_buffers", True),
              "find_unused_parameters": ddp.pop("find_unused_parameters", False)}
    take(ddp, "nproc_per_node", "timeout_seconds", "max_restarts")  # the launch, not the step
    model = ddp_model(args)
    memory_format = torch.channels_last if args.channels_last else torch.contiguous_format
    model = torch.nn.parallel.DistributedDataParallel(
        model.to(memory_format=memory_format), **kwargs)
    if compression == "FP16":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        model.register_comm_hook(None, default_hooks.fp16_compress_hook)
    optimizer = ddp_optimizer(args, model.parameters(), sharded)
    loss_options = options(args.loss_options)
    if args.loss != "cross_entropy":
        raise SystemExit("bench_reference.py: loss not mirrored: " + args.loss)
    loss_fn = torch.nn.CrossEntropyLoss(**take(loss_options, "label_smoothing"))
    steps = args.ddp_warmup_steps + args.ddp_steps
    images, labels, source = ddp_data(args, rank, steps * args.batch_size)
    if args.precision not in ("FP32", "BF16_AUTOCAST"):
        raise SystemExit("bench_reference.py: precision not mirrored on the CPU: " + args.precision)
    bf16 = args.precision == "BF16_AUTOCAST"
    model.train()

    def step(i):
        batch = images[i * args.batch_size:(i + 1) * args.batch_size]
        batch = batch.contiguous(memory_format=memory_format)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = loss_fn(model(batch), labels[i * args.batch_size:(i + 1) * args.batch_size])
        loss.backward()
        optimizer.step()

    for i in range(args.ddp_warmup_steps):
        step(i)
    torch.distributed.barrier()
    start = time.perf_counter()
    for i in range(args.ddp_warmup_steps, steps):
        step(i)
    torch.distributed.barrier()
    seconds = time.perf_counter() - start
    if rank == 0:
        results.put({"ddp_images_per_sec":
                     args.ddp_steps * args.batch_size * args.world_size / seconds,
                     "seconds": seconds, "steps": args.ddp_steps,
                     "warmup_steps": args.ddp_warmup_steps, "batch_size_per_rank": args.batch_size,
                     "world_size": args.world_size, "data": source})
    torch.distributed.destroy_process_group()


def ddp_rate(args):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args.world_size = options(args.ddp_options).get("nproc_per_node", 2)
    results = torch.multiprocessing.get_context("spawn").SimpleQueue()
    torch.multiprocessing.spawn(ddp_worker, args=(args, port, results), nprocs=args.world_size)
    return results.get()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--jpeg_root")
    parser.add_argument("--fashion_mnist_root", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--jpeg_images", type=int, default=512)
    parser.add_argument("--fashion_mnist_images", type=int, default=20480)
    parser.add_argument("--batch_size", type=int, default=32)
    # --ddp_steps > 0: the DDP reference (per-rank batch --batch_size).
    parser.add_argument("--ddp_steps", type=int, default=0)
    parser.add_argument("--ddp_warmup_steps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--model", default="resnet")
    parser.add_argument("--model_options", default="depth: 18")
    parser.add_argument("--in_channels", type=int, default=1)
    parser.add_argument("--num_classes", type=int, default=10)
    parser.add_argument("--optimizer", default="adamw")
    parser.add_argument("--optimizer_options", default="")
    parser.add_argument("--loss", default="cross_entropy")
    parser.add_argument("--loss_options", default="")
    parser.add_argument("--channels_last", action="store_true")
    parser.add_argument("--precision", default="FP32")
    # The strategy's options; nproc_per_node is the world size.
    parser.add_argument("--ddp_options", default="")
    # --transforms: each augmentation alone, and the JPEG pipeline with
    # RandAugment in place of TrivialAugmentWide.
    parser.add_argument("--transforms", action="store_true")
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    if args.ddp_steps > 0:
        result = ddp_rate(args)
        result["torch"] = torch.__version__
        print(json.dumps(result))
        return
    if not args.jpeg_root:
        parser.error("--jpeg_root is required (or --ddp_steps)")
    torch.set_num_threads(1)
    torch.manual_seed(1)
    if args.transforms:
        print(json.dumps({
            "transform_images_per_sec": transform_rates(args.jpeg_root, args.seconds),
            "jpeg_rand_augment_images_per_sec": jpeg_rate(
                args.jpeg_root, args.jpeg_images, args.batch_size, transforms.RandAugment()),
            "torchvision": torchvision.__version__,
        }))
        return
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
