"""The plugins linked into the tools. Adding an in-tree plugin = its folder plus one line here."""

ALL_PLUGINS = [
    "//plugins/datasets/fashion_mnist",
    "//plugins/datasets/synthetic",
    "//plugins/models/resnet",
    "//plugins/optimizers/adam",
    "//plugins/optimizers/adamw",
    "//plugins/optimizers/sgd",
    "//plugins/samplers/random",
    "//plugins/samplers/sequential",
    "//plugins/schedules/constant",
    "//plugins/schedules/cosine",
    "//plugins/schedules/step",
    "//plugins/strategies/single",
]
