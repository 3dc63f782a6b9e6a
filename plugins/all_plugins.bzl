"""The plugins linked into the tools. Adding an in-tree plugin = its folder plus one line here."""

ALL_PLUGINS = [
    "//plugins/samplers/random",
    "//plugins/samplers/sequential",
]
