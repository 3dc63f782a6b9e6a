"""The plugins linked into the tools. Adding an in-tree plugin = its folder plus one line here."""

ALL_PLUGINS = [
    "//plugins/datasets/fashion_mnist",
    "//plugins/datasets/image_folder",
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
    "//plugins/transforms/center_crop",
    "//plugins/transforms/grayscale_to_rgb",
    "//plugins/transforms/normalize",
    "//plugins/transforms/random_horizontal_flip",
    "//plugins/transforms/random_resized_crop",
    "//plugins/transforms/resize",
    "//plugins/transforms/to_float",
]
