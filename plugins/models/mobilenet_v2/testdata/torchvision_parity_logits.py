"""Writes torchvision's logits for a model whose weights follow a fixed rule,
the fixtures that check a C++ model computes what torchvision's computes.

Random weights cannot be shared between Python and C++ without a large
checkpoint, so both sides set every floating state_dict entry from its key
and shape alone (the rule below, mirrored by FillDeterministically in the
C++ tests), feed the same input and compare the logits in eval mode. The
fixtures stay a few hundred bytes.

Needs Debian's python3-torch and python3-torchvision, so run it with
/usr/bin/python3 (the `python3` on PATH may be one without torch):

  S=plugins/models/mobilenet_v2/testdata/torchvision_parity_logits.py
  /usr/bin/python3 $S --out_dir plugins/models/mobilenet_v2/testdata \
      mobilenet_v2 mobilenet_v2:width_mult=0.5
  /usr/bin/python3 $S --out_dir plugins/models/mobilenet_v3/testdata \
      mobilenet_v3_large mobilenet_v3_small
  /usr/bin/python3 $S --out_dir plugins/models/efficientnet/testdata efficientnet_b0

A model is a torchvision.models constructor name, optionally followed by
`:arg=value,...` keyword arguments. Each gives
`<out_dir>/torchvision_<name>[_<arg>_<value>...]_parity_logits.txt`: one
line of NUM_CLASSES logits per image of the batch.
"""

import argparse
import math
import os

import torch
import torchvision

NUM_CLASSES = 10
INPUT_SHAPE = (2, 3, 64, 64)


def hash_wave(n, seed):
    """`n` values in [-1, 1) from a 32-bit integer hash of (index, seed).

    Integer arithmetic only, so C++ and Python agree bit for bit, and unlike
    a smooth function of the index it gives no structure for convolutions to
    resonate with.
    """
    h = (torch.arange(n, dtype=torch.int64) * 2654435761 + seed * 40503) & 0xFFFFFFFF
    for _ in range(2):
        h = h ^ (h >> 16)
        h = (h * 0x45D9F3B) & 0xFFFFFFFF
    h = h ^ (h >> 16)
    return h.double() / 2**31 - 1.0


def deterministic_value(key, tensor):
    """The value the rule gives state_dict entry `key` of `tensor`'s shape."""
    n = tensor.numel()
    wave = hash_wave(n, sum(key.encode()))
    leaf = key.rsplit(".", 1)[-1]
    if leaf == "running_var":
        value = 1.0 + 0.5 * wave
    elif leaf == "running_mean":
        value = 0.02 * wave
    elif tensor.dim() == 1 and leaf == "weight":  # BatchNorm's scale
        value = 1.0 + 0.2 * wave
    elif tensor.dim() == 1:  # biases
        value = 0.02 * wave
    else:  # conv and linear weights: Kaiming uniform's range
        value = wave * math.sqrt(6.0 / (n // tensor.shape[0]))
    return value.reshape(tensor.shape).to(tensor.dtype)


def deterministic_input():
    return hash_wave(math.prod(INPUT_SHAPE), 1).reshape(INPUT_SHAPE).float()


def parse_model(spec):
    name, _, args = spec.partition(":")
    kwargs = {}
    for arg in filter(None, args.split(",")):
        key, _, value = arg.partition("=")
        kwargs[key] = float(value) if "." in value else int(value)
    return name, kwargs


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+", help="e.g. mobilenet_v2 mobilenet_v2:width_mult=0.5")
    parser.add_argument("--out_dir", required=True, help="folder for the fixtures")
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    for spec in args.models:
        name, kwargs = parse_model(spec)
        model = getattr(torchvision.models, name)(weights=None, num_classes=NUM_CLASSES, **kwargs)
        state = model.state_dict()
        model.load_state_dict({key: deterministic_value(key, tensor) if tensor.is_floating_point()
                               else tensor for key, tensor in state.items()})
        model.eval()
        with torch.no_grad():
            logits = model(deterministic_input())
        suffix = "".join("_%s_%s" % item for item in sorted(kwargs.items()))
        path = os.path.join(args.out_dir, "torchvision_%s%s_parity_logits.txt" % (name, suffix))
        with open(path, "w") as out:
            for row in logits.tolist():
                out.write(" ".join("%.9g" % value for value in row) + "\n")
        # The images must give clearly different logits, or the check would
        # not notice layers that ignore their input.
        print("wrote", os.path.relpath(path, os.getcwd()),
              "(largest |logit| %.3g, images differ by up to %.3g)"
              % (logits.abs().max().item(), (logits[0] - logits[1]).abs().max().item()))


if __name__ == "__main__":
    main()
