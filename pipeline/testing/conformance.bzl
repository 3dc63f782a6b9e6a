"""Shared conformance tests: one line in a plugin's BUILD runs its kind's suite.

    load("//pipeline/testing:conformance.bzl", "transform_conformance_test")

    transform_conformance_test(
        name = "conformance_test",
        plugin = ":random_horizontal_flip",
        options = "probability: 0.5",
    )

The suites (pipeline/testing/<kind>_conformance.cc, one per kind in _SUITES) are
value-parameterized gtest suites in alwayslink libraries; the macro writes a
one-statement source file that instantiates the suite with the plugin's
registered name and options, and links it with the plugin. `options` is the
body of the plugin's options message in text format (its type is looked up in
the registry), or a list of them: each is one instance of the whole suite.
"""

_SUITES = {
    "transform": ("TransformConformanceTest", "TransformConformanceParams"),
    "dataset": ("DatasetConformanceTest", "DatasetConformanceParams"),
    "strategy": ("StrategyConformanceTest", "StrategyConformanceParams"),
    "schedule": ("ScheduleConformanceTest", "ScheduleConformanceParams"),
    "sampler": ("SamplerConformanceTest", "SamplerConformanceParams"),
    "optimizer": ("OptimizerConformanceTest", "OptimizerConformanceParams"),
    "loss": ("LossConformanceTest", "LossConformanceParams"),
    "metric": ("MetricConformanceTest", "MetricConformanceParams"),
    "batch_transform": ("BatchTransformConformanceTest", "BatchTransformConformanceParams"),
    "model": ("ModelConformanceTest", "ModelConformanceParams"),
}

_SCHEDULE_SHAPES = ["", "non_increasing", "rises_then_falls"]

_DELIMITER = "conformance"

def _write_source_impl(ctx):
    ctx.actions.write(ctx.outputs.out, ctx.attr.content)

_write_source = rule(
    implementation = _write_source_impl,
    attrs = {
        "content": attr.string(mandatory = True),
        "out": attr.output(mandatory = True),
    },
)

def _absolute(label):
    if label.startswith(":"):
        return "//" + native.package_name() + label
    if label.startswith("//") and ":" not in label:
        return label + ":" + label.split("/")[-1]
    return label

def _registered_name(plugin):
    """The plugin's registered name: by convention its target's name."""
    return _absolute(plugin).split(":")[-1]

def _cc_string(value):
    if (")" + _DELIMITER + "\"") in value:
        fail("a conformance option string may not contain )%s\"" % _DELIMITER)
    return "R\"%s(%s)%s\"" % (_DELIMITER, value, _DELIMITER)

def _as_list(options):
    return options if type(options) == "list" else [options]

def _conformance_test(
        name,
        kind,
        plugin,
        options,
        plugin_name,
        deps,
        extra_fields = [],
        per_options_fields = None,
        **kwargs):
    """One plugin's instance of `kind`'s suite, one parameter set per options.

    Each parameter set is {registered name, options, *extra_fields,
    *per_options_fields[i]}: the fields of the suite's Params struct after
    the first two, as C++ text; per_options_fields, where given, holds one
    list for each options entry.
    """
    registered = plugin_name or _registered_name(plugin)
    options = _as_list(options)
    if per_options_fields == None:
        per_options_fields = [[] for _ in options]
    param_fields = [
        [_cc_string(registered), _cc_string(o)] + extra_fields + per_options_fields[i]
        for i, o in enumerate(options)
    ]
    suite, params_type = _SUITES[kind]
    values = ",\n        ".join([
        "%s{%s}" % (params_type, ", ".join(fields))
        for fields in param_fields
    ])
    content = """// Written by {kind}_conformance_test (pipeline/testing/conformance.bzl).
#include "pipeline/testing/{kind}_conformance.h"

namespace pipeline {{
namespace testing {{
namespace {{

INSTANTIATE_TEST_SUITE_P(
    {instance}, {suite},
    ::testing::Values(
        {values}),
    {suite}Name);

}}  // namespace
}}  // namespace testing
}}  // namespace pipeline
""".format(kind = kind, instance = registered, suite = suite, values = values)
    source = name + "_instantiation.cc"
    _write_source(
        name = name + "_instantiation",
        content = content,
        out = source,
        testonly = True,
    )
    all_deps = [_absolute(plugin), "//pipeline/testing:%s_conformance" % kind]
    for dep in deps:
        if _absolute(dep) not in all_deps:
            all_deps.append(_absolute(dep))
    native.cc_test(
        name = name,
        srcs = [source],
        deps = all_deps,
        **kwargs
    )

def transform_conformance_test(name, plugin, options = "", plugin_name = None, deps = [], **kwargs):
    """The transform conformance suite (transform_conformance.h) for one plugin.

    Args:
      name: the test.
      plugin: the transform's pipeline_plugin target.
      options: its options message body in text format, or a list of them.
      plugin_name: its registered name, when not the target's name.
      deps: anything else the test links.
      **kwargs: passed to cc_test (size, tags, ...).
    """
    _conformance_test(name, "transform", plugin, options, plugin_name, deps, **kwargs)

def dataset_conformance_test(
        name,
        plugin,
        options = "",
        fixture = "",
        split = "train",
        plugin_name = None,
        deps = [],
        **kwargs):
    """The dataset conformance suite (dataset_conformance.h) for one plugin.

    Args:
      name: the test.
      plugin: the dataset's pipeline_plugin target.
      options: its options message body in text format, or a list of them;
        $FIXTURE_ROOT in it becomes the folder `fixture` wrote.
      fixture: test data the suite writes into a temporary folder first
        ("" for none; "image_tree": class folders of small PNG and JPEG files;
        "webdataset_shards": those files as three webdataset shards).
      split: DatasetContext.split.
      plugin_name: its registered name, when not the target's name.
      deps: anything else the test links.
      **kwargs: passed to cc_test.
    """
    _conformance_test(
        name,
        "dataset",
        plugin,
        options,
        plugin_name,
        deps,
        extra_fields = [_cc_string(fixture), _cc_string(split)],
        **kwargs
    )

def strategy_conformance_test(
        name,
        plugin,
        options = "",
        processes = 1,
        plugin_name = None,
        reference = "//plugins/strategies/single",
        deps = [],
        **kwargs):
    """The strategy conformance suite (strategy_conformance.h) for one plugin.

    Args:
      name: the test.
      plugin: the strategy's pipeline_plugin target.
      options: its options message body in text format, or a list of them.
      processes: how many processes the strategy runs as; more than 1 are
        simulated by threads of the test process, each with its own RANK,
        WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT.
      plugin_name: its registered name, when not the target's name.
      reference: the strategy the suite compares with, registered as "single".
      deps: anything else the test links.
      **kwargs: passed to cc_test.
    """
    if _absolute(reference) != _absolute(plugin):
        deps = deps + [reference]
    _conformance_test(
        name,
        "strategy",
        plugin,
        options,
        plugin_name,
        deps,
        extra_fields = [str(processes)],
        **kwargs
    )

def schedule_conformance_test(
        name,
        plugin,
        options = "",
        shape = "",
        plugin_name = None,
        deps = [],
        **kwargs):
    """The schedule conformance suite (schedule_conformance.h) for one plugin.

    Args:
      name: the test.
      plugin: the schedule's pipeline_plugin target.
      options: its options message body in text format, or a list of them.
      shape: what every one of those options promises of the factors' course
        through a run: "non_increasing", "rises_then_falls" or "" (nothing).
      plugin_name: its registered name, when not the target's name.
      deps: anything else the test links.
      **kwargs: passed to cc_test.
    """
    if shape not in _SCHEDULE_SHAPES:
        fail("shape = \"%s\"; must be one of %s" % (shape, _SCHEDULE_SHAPES))
    _conformance_test(
        name,
        "schedule",
        plugin,
        options,
        plugin_name,
        deps,
        extra_fields = [_cc_string(shape)],
        **kwargs
    )

def sampler_conformance_test(
        name,
        plugin,
        options = "",
        shards = False,
        plugin_name = None,
        deps = [],
        **kwargs):
    """The sampler conformance suite (sampler_conformance.h) for one plugin.

    Args:
      name: the test.
      plugin: the sampler's pipeline_plugin target.
      options: its options message body in text format, or a list of them.
      shards: True when the ranks of a world share an epoch between them (as
        torch's DistributedSampler); False when every rank gets all of it.
      plugin_name: its registered name, when not the target's name.
      deps: anything else the test links.
      **kwargs: passed to cc_test.
    """
    _conformance_test(
        name,
        "sampler",
        plugin,
        options,
        plugin_name,
        deps,
        extra_fields = ["true" if shards else "false"],
        **kwargs
    )

def optimizer_conformance_test(name, plugin, options = "", plugin_name = None, deps = [], **kwargs):
    """The optimizer conformance suite (optimizer_conformance.h) for one plugin.

    Args:
      name: the test.
      plugin: the optimizer's pipeline_plugin target.
      options: its options message body in text format, or a list of them.
      plugin_name: its registered name, when not the target's name.
      deps: anything else the test links.
      **kwargs: passed to cc_test.
    """
    _conformance_test(name, "optimizer", plugin, options, plugin_name, deps, **kwargs)

def loss_conformance_test(
        name,
        plugin,
        options = "",
        shift_invariant = True,
        plugin_name = None,
        deps = [],
        **kwargs):
    """The loss conformance suite (loss_conformance.h) for one plugin.

    Args:
      name: the test.
      plugin: the loss's pipeline_plugin target.
      options: its options message body in text format, or a list of them.
      shift_invariant: whether adding a constant to every logit of a row
        leaves the loss unchanged (true of losses on the softmax of the
        logits); the suite checks it where declared.
      plugin_name: its registered name, when not the target's name.
      deps: anything else the test links.
      **kwargs: passed to cc_test.
    """
    _conformance_test(
        name,
        "loss",
        plugin,
        options,
        plugin_name,
        deps,
        extra_fields = ["true" if shift_invariant else "false"],
        **kwargs
    )

def metric_conformance_test(name, plugin, options = "", plugin_name = None, deps = [], **kwargs):
    """The metric conformance suite (metric_conformance.h) for one plugin.

    Args:
      name: the test.
      plugin: the metric's pipeline_plugin target.
      options: its options message body in text format, or a list of them.
      plugin_name: its registered name, when not the target's name.
      deps: anything else the test links.
      **kwargs: passed to cc_test.
    """
    _conformance_test(name, "metric", plugin, options, plugin_name, deps, **kwargs)

def batch_transform_conformance_test(name, plugin, options = "", plugin_name = None, deps = [], **kwargs):
    """The batch transform conformance suite (batch_transform_conformance.h) for one plugin.

    Args:
      name: the test.
      plugin: the batch transform's pipeline_plugin target.
      options: its options message body in text format, or a list of them.
      plugin_name: its registered name, when not the target's name.
      deps: anything else the test links.
      **kwargs: passed to cc_test.
    """
    _conformance_test(name, "batch_transform", plugin, options, plugin_name, deps, **kwargs)

def _torchvision_fields(torchvision, state_dict_only):
    """The torchvision fields of ModelConformanceParams, and the fixtures they read."""
    if not torchvision:
        return ["\"\"", "\"\"", "false", "false"], []
    fixtures = native.glob(["testdata/torchvision_%s_state_dict.txt" % torchvision])
    parity = [] if state_dict_only else native.glob(
        ["testdata/torchvision_%s_parity_logits.txt" % torchvision],
    )
    fields = [
        _cc_string(torchvision),
        _cc_string(native.package_name() + "/testdata"),
        "true" if parity else "false",
        "true" if state_dict_only else "false",
    ]
    return fields, fixtures + parity

def model_conformance_test(
        name,
        plugin,
        options = "",
        image_size = 32,
        torchvision = None,
        torchvision_state_dict_only = {},
        plugin_name = None,
        deps = [],
        data = [],
        **kwargs):
    """The model conformance suite (model_conformance.h) for one plugin.

    Args:
      name: the test.
      plugin: the model's pipeline_plugin target.
      options: its options message body in text format, or a list of them.
      image_size: height and width of the test images; the smallest the
        model takes keeps the suite quick.
      torchvision: the torchvision.models constructor each options entry
        builds ("" for none), a string or a list like `options`; its
        fixtures are testdata/torchvision_<name>_state_dict.txt (required)
        and testdata/torchvision_<name>_parity_logits.txt (checked where
        present) in the plugin's package.
      torchvision_state_dict_only: {options: constructor} for variants too
        large to run here: each is an instance that checks only the
        state_dict fixture and parameter count.
      plugin_name: its registered name, when not the target's name.
      deps: anything else the test links.
      data: anything else the test reads.
      **kwargs: passed to cc_test.
    """
    if type(image_size) != "int" or image_size < 1:
        fail("image_size = %s; must be a positive int" % image_size)
    all_options = _as_list(options)
    names = [""] * len(all_options) if torchvision == None else _as_list(torchvision)
    if len(names) != len(all_options):
        fail("torchvision names %d constructors for %d options" % (len(names), len(all_options)))
    states = [False] * len(names)
    for o, n in torchvision_state_dict_only.items():
        if not n:
            fail("torchvision_state_dict_only[\"%s\"] names no constructor" % o)
        all_options = all_options + [o]
        names = names + [n]
        states = states + [True]
    per_options_fields = []
    fixtures = []
    for n, state_dict_only in zip(names, states):
        fields, files = _torchvision_fields(n, state_dict_only)
        per_options_fields.append(fields)
        fixtures += [f for f in files if f not in fixtures]
    _conformance_test(
        name,
        "model",
        plugin,
        all_options,
        plugin_name,
        deps,
        extra_fields = [str(image_size)],
        per_options_fields = per_options_fields,
        data = data + fixtures,
        **kwargs
    )
