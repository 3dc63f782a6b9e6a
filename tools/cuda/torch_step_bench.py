"""PyTorch's own training step on one device, for tools/cuda/gpu_bench.sh.

The runner's step as a PyTorch user writes it: ResNet18
(torchvision.models.resnet18(num_classes=...)), cross-entropy, forward +
backward + optimizer step (SGD lr 0.05, momentum 0.9, weight decay 1e-4, as
configs/cats_vs_dogs.textproto; or AdamW lr 0.002, weight decay 0.05, as
configs/single.textproto), bf16 autocast and channels-last by default,
cudnn.benchmark on. Batches come from one of:

- memory (default): two batches of random images in host memory (pinned on
  a GPU), each step copying one to the device. --input=uint8 (default):
  uint8 pixels, made float and normalized on the device, as the runner does
  with data.normalize_on_device and timm's CUDA prefetcher; --input=float:
  normalized float32, 4x the bytes, as a DataLoader hands them over;
  --input=device: batches already on the device, the step alone;
- --image_folder=DIR: DataLoader(ImageFolder(DIR), num_workers, pin_memory)
  with RandomResizedCrop + RandomHorizontalFlip + ToTensor + Normalize.

--warmup untimed steps (they hold torch.compile's compilation and cuDNN's
autotuning), then --steps timed steps, or as many as --seconds allow;
torch.cuda.synchronize before each clock reading.

    python3 tools/cuda/torch_step_bench.py --device=cuda:0 --batch=256 --compile
    python3 tools/cuda/torch_step_bench.py --device=cpu --batch=4 --image_size=32 \
        --precision=fp32 --warmup=1 --steps=2        # a CPU smoke run

Prints one JSON line: images_per_sec over the timed steps and how it was
measured; on failure (torch.compile missing or failing, no GPU, no
images) images_per_sec null, the reason in "error", exit status 1.
"""
import argparse
import json
import math
import os
import random
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


class BenchError(Exception):
    """A reason this measurement cannot be made, for the row."""


# ---- the model ----

class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                            nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + identity)


def builtin_resnet18(num_classes):
    """torchvision's resnet18, layer for layer, for a machine whose torch
    came without torchvision (the pip wheel does not bring it)."""
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
              nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, num_classes)]
    model = nn.Sequential(*layers)
    for module in model.modules():
        if isinstance(module, nn.Conv2d):
            nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
    return model


def resnet18(num_classes):
    """The model and where it came from."""
    try:
        import torchvision
    except Exception as error:  # ImportError, or a torchvision built for another torch
        return builtin_resnet18(num_classes), "built-in copy of resnet18 (%s)" % error
    return (torchvision.models.resnet18(num_classes=num_classes),
            "torchvision %s resnet18" % torchvision.__version__)


def make_optimizer(name, parameters):
    if name == "sgd":
        return torch.optim.SGD(parameters, lr=0.05, momentum=0.9, weight_decay=1e-4)
    return torch.optim.AdamW(parameters, lr=0.002, weight_decay=0.05)


# ---- batches ----

def memory_batches(args, device):
    """Endless batches of random images, as --input says: in host memory
    (pinned on a GPU, as the runner's loader pins its batches), or on the
    device."""
    generator = torch.Generator().manual_seed(1)
    shape = (args.batch, 3, args.image_size, args.image_size)
    if args.input == "float":
        images = [torch.randn(shape, generator=generator) for _ in range(2)]
    else:
        images = [torch.randint(256, shape, generator=generator, dtype=torch.uint8)
                  for _ in range(2)]
    labels = [torch.randint(args.num_classes, (args.batch,), generator=generator)
              for _ in range(2)]
    if args.input == "device":
        images, labels = [x.to(device) for x in images], [y.to(device) for y in labels]
    elif device.type == "cuda":
        images, labels = [x.pin_memory() for x in images], [y.pin_memory() for y in labels]
    step = 0
    while True:
        yield images[step % 2], labels[step % 2]
        step += 1


def random_resized_crop_box(width, height, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
    """torchvision's RandomResizedCrop.get_params: (left, top, right, bottom)."""
    area = width * height
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target = area * random.uniform(*scale)
        aspect = math.exp(random.uniform(*log_ratio))
        w = int(round(math.sqrt(target * aspect)))
        h = int(round(math.sqrt(target / aspect)))
        if 0 < w <= width and 0 < h <= height:
            top, left = random.randint(0, height - h), random.randint(0, width - w)
            return left, top, left + w, top + h
    w, h = width, height  # the fallback: a center crop within the ratio range
    if width / height < ratio[0]:
        h = int(round(w / ratio[0]))
    elif width / height > ratio[1]:
        w = int(round(h * ratio[1]))
    left, top = (width - w) // 2, (height - h) // 2
    return left, top, left + w, top + h


class PilImageFolder(torch.utils.data.Dataset):
    """ImageFolder + the transforms in PIL and torch alone, as torchvision
    does them on PIL images, for a machine without torchvision."""

    def __init__(self, root, size):
        from PIL import Image
        self.image_module, self.size = Image, size
        self.classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
        self.samples = []
        for label, name in enumerate(self.classes):
            for folder, _, files in sorted(os.walk(os.path.join(root, name), followlinks=True)):
                self.samples += [(os.path.join(folder, f), label) for f in sorted(files)
                                 if f.lower().endswith((".jpg", ".jpeg", ".png"))]

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        path, label = self.samples[index]
        with open(path, "rb") as f:
            image = self.image_module.open(f).convert("RGB")
        box = random_resized_crop_box(*image.size)
        image = image.resize((self.size, self.size), self.image_module.BILINEAR, box=box)
        if random.random() < 0.5:
            image = image.transpose(self.image_module.FLIP_LEFT_RIGHT)
        pixels = torch.frombuffer(bytearray(image.tobytes()), dtype=torch.uint8)
        tensor = pixels.view(self.size, self.size, 3).permute(2, 0, 1).float().div(255)
        mean, std = torch.tensor(MEAN).view(3, 1, 1), torch.tensor(STD).view(3, 1, 1)
        return (tensor - mean) / std, label


def image_folder(root, size):
    """The dataset and what read it: torchvision's, else the PIL copy."""
    try:
        from torchvision import datasets, transforms
    except Exception as error:
        try:
            return PilImageFolder(root, size), "PIL, no torchvision (%s)" % error
        except ImportError as pil_error:
            raise BenchError("neither torchvision nor PIL can be imported: %s; %s"
                             % (error, pil_error))
    transform = transforms.Compose([
        transforms.RandomResizedCrop(size),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(MEAN, STD),
    ])
    return datasets.ImageFolder(root, transform), "torchvision ImageFolder + transforms"


def folder_batches(args, device):
    """Endless batches from a DataLoader over the folder; its workers stay
    up across epochs, as a user's persistent_workers=True."""
    dataset, reader = image_folder(args.image_folder, args.image_size)
    if len(dataset) < args.batch:
        raise BenchError("%s holds %d images, fewer than one batch of %d"
                         % (args.image_folder, len(dataset), args.batch))
    args.num_classes = len(dataset.classes)
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=args.batch, shuffle=True, num_workers=args.num_workers,
        pin_memory=device.type == "cuda", drop_last=True,
        persistent_workers=args.num_workers > 0)
    args.data = "%s of %d images in %s, DataLoader num_workers=%d pin_memory=%s" % (
        reader, len(dataset), args.image_folder, args.num_workers, device.type == "cuda")

    def endless():
        while True:
            yield from loader
    return endless()


# ---- the step and its timing ----

def make_step(model, optimizer, device, args):
    memory_format = torch.channels_last if args.channels_last else torch.contiguous_format
    bf16 = args.precision == "bf16"
    mean = torch.tensor(MEAN, device=device).view(1, 3, 1, 1) * 255
    std = torch.tensor(STD, device=device).view(1, 3, 1, 1) * 255

    def step(images, labels):
        images = images.to(device, non_blocking=True)
        if images.dtype == torch.uint8:  # to_float + normalize, on the device
            images = (images.float() - mean) / std
        images = images.contiguous(memory_format=memory_format)
        labels = labels.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
    return step


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(step, batches, device, args):
    """(timed steps, their seconds, warm-up seconds)."""
    start = time.perf_counter()
    for _ in range(args.warmup):
        step(*next(batches))
    synchronize(device)
    warmup_seconds = time.perf_counter() - start
    steps = 0
    start = time.perf_counter()
    while (steps < args.steps if args.steps > 0
           else steps < 3 or time.perf_counter() - start < args.seconds):
        step(*next(batches))
        steps += 1
    synchronize(device)
    return steps, time.perf_counter() - start, warmup_seconds


def check_device(args):
    if args.compile and not hasattr(torch, "compile"):
        raise BenchError("torch.compile is not in torch %s (it came with 2.0)" % torch.__version__)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise BenchError("no CUDA device visible to torch %s (CUDA build: %s)"
                         % (torch.__version__, torch.version.cuda))
    return device


def run(args, result):
    device = check_device(args)
    torch.manual_seed(1)
    torch.backends.cudnn.benchmark = args.cudnn_benchmark
    if device.type == "cuda":
        result["device_name"] = torch.cuda.get_device_name(device)
    batches = (folder_batches(args, device) if args.image_folder
               else memory_batches(args, device))
    result["data"] = args.data
    memory_format = torch.channels_last if args.channels_last else torch.contiguous_format
    model, result["model"] = resnet18(args.num_classes)
    model = model.to(device, memory_format=memory_format).train()
    optimizer = make_optimizer(args.optimizer, model.parameters())
    if args.compile:
        model = torch.compile(model)
    step = make_step(model, optimizer, device, args)
    try:
        steps, seconds, warmup_seconds = timed(step, batches, device, args)
    except Exception as error:
        if not args.compile:
            raise
        raise BenchError("torch.compile failed: %s: %s"
                         % (type(error).__name__, first_line(error)))
    result.update(images_per_sec=steps * args.batch / seconds, steps=steps,
                  seconds=round(seconds, 3), warmup_seconds=round(warmup_seconds, 3))
    if device.type == "cuda":
        result["peak_memory_gib"] = round(torch.cuda.max_memory_allocated(device) / 2**30, 2)


def first_line(error):
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else repr(error)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--image_size", type=int, default=224)
    parser.add_argument("--num_classes", type=int, default=10,
                        help="in-memory batches; with --image_folder, its class folders")
    parser.add_argument("--optimizer", choices=["sgd", "adamw"], default="sgd")
    parser.add_argument("--precision", choices=["bf16", "fp32"], default="bf16")
    parser.add_argument("--channels_last", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--cudnn_benchmark", action=argparse.BooleanOptionalAction,
                        default=True)
    parser.add_argument("--compile", action="store_true", help="torch.compile(model)")
    parser.add_argument("--input", choices=["uint8", "float", "device"], default="uint8",
                        help="in-memory batches: what crosses to the device each step")
    parser.add_argument("--image_folder", help="batches from this ImageFolder, not memory")
    parser.add_argument("--num_workers", type=int, default=os.cpu_count())
    parser.add_argument("--warmup", type=int, default=20, help="untimed steps first")
    parser.add_argument("--steps", type=int, default=0, help="timed steps; 0 = --seconds")
    parser.add_argument("--seconds", type=float, default=15.0)
    args = parser.parse_args()
    where = "pinned host" if args.device.startswith("cuda") else "host"
    args.data = {
        "uint8": "in-memory random uint8 images in %s memory, normalized on the device" % where,
        "float": "in-memory normalized float32 images in %s memory" % where,
        "device": "in-memory random uint8 images on the device, normalized there",
    }[args.input]
    return args


def main():
    args = parse_args()
    result = {"images_per_sec": None, "mode": "torch.compile" if args.compile else "eager",
              "batch": args.batch, "image_size": args.image_size,
              "precision": args.precision, "channels_last": args.channels_last,
              "optimizer": args.optimizer, "warmup_steps": args.warmup,
              "device": args.device, "torch": torch.__version__,
              "cuda": torch.version.cuda, "python": sys.version.split()[0]}
    try:
        run(args, result)
    except BenchError as error:
        result["error"] = str(error)
    except Exception as error:  # the row says why; the bench goes on
        result["error"] = "%s: %s" % (type(error).__name__, first_line(error))
    print(json.dumps(result), flush=True)
    sys.exit(1 if result.get("error") else 0)


if __name__ == "__main__":
    main()
