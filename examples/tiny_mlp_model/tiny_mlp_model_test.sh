#!/bin/bash
# Trains the tiny_mlp model from its plugin library with the train binary,
# which was built without it.
set -u
train=tools/train
library=examples/tiny_mlp_model/libtiny_mlp_model.so
config=examples/tiny_mlp_model/tiny_mlp.textproto
out="$TEST_TMPDIR"
fail() { echo "FAIL: $*"; exit 1; }

# The library holds the plugin only: the registry and the config protos are
# train's (a copy of either would be a second, empty registry or a second
# registration of pipeline.proto).
defined=$(nm -DC --defined-only "$library")
undefined=$(nm -DC --undefined-only "$library")
grep -q "pipeline::RegistryIndex::Global()" <<<"$undefined" || fail "RegistryIndex::Global not taken from train"
grep -q "RegistryIndex" <<<"$defined" && fail "the library defines its own RegistryIndex"
grep -q "descriptor_table_pipeline_2fconfig_2fpipeline_2eproto" <<<"$defined" &&
  fail "the library carries its own copy of pipeline.proto"
grep -q "pipeline_plugin_abi_version" <<<"$defined" || fail "no ABI stamp"

# Without the library train has no tiny_mlp; with it, tiny_mlp is listed next
# to the built-in models, in the same registry.
"$train" --list_plugins > "$out/without.txt" || fail "--list_plugins failed"
grep -q "tiny_mlp" "$out/without.txt" && fail "train already has tiny_mlp"
"$train" --plugin_library="$library" --list_plugins > "$out/with.txt" || fail "--list_plugins with the library failed"
grep -q "^  tiny_mlp — " "$out/with.txt" || fail "tiny_mlp not listed: $(cat "$out/with.txt")"
grep -q "^  small_cnn — " "$out/with.txt" || fail "built-in models missing"
grep -q "example.TinyMlpOptions" "$out/with.txt" || fail "options type not listed"
grep -q "hidden_units: 64" "$out/with.txt" || fail "option defaults not listed"

# Train a few epochs from the command-line flag.
"$train" --plugin_library="$library" --config="$config" --set=output_dir="$out/run" \
  > "$out/events.jsonl" 2> "$out/log.txt" || { cat "$out/log.txt"; fail "training failed"; }
cat "$out/log.txt" "$out/events.jsonl"
grep -q "model tiny_mlp" "$out/log.txt" || fail "not trained with tiny_mlp"
grep -Eq "epoch 4/4 done in .*: loss [0-9.]+ acc [0-9.]+%" "$out/log.txt" || fail "no loss printed"
summary=$(grep '"event":"summary"' "$out/events.jsonl") || fail "no summary line"
# A JSON number field of a line: field <name> <line>.
field() { sed -E "s/.*\"$1\":([-0-9.e+]+).*/\1/" <<<"$2"; }
first_loss=$(field train_loss "$(grep '"epoch":1,' "$out/events.jsonl")")
last_loss=$(field train_loss "$(grep '"epoch":4,' "$out/events.jsonl")")
val_acc=$(field val_acc "$summary")
echo "learned: train_loss $first_loss -> $last_loss, val_acc $val_acc"
[[ $(grep -c '"event":"epoch"' "$out/events.jsonl") -eq 4 ]] || fail "not 4 epochs"
# 4 balanced classes: chance is 25%; the class shows in the brightness.
awk -v a="$first_loss" -v b="$last_loss" -v acc="$val_acc" \
  'BEGIN { exit !(b < a && acc > 0.5) }' || fail "did not learn"
ls "$out/run"/events.out.tfevents.* > /dev/null || fail "no TensorBoard event file"
grep -q "<svg" "$out/run/curves.svg" || fail "no curves.svg"

# The same from the config's plugin_libraries, with a path relative to the
# folder train starts in; the resolved config records it.
cat > "$out/from_config.textproto" <<EOT
import: "$PWD/$config"
plugin_libraries: "$library"
trainer { max_steps: 3 }
output_dir: "$out/run_from_config"
EOT
"$train" --config="$out/from_config.textproto" > "$out/events2.jsonl" 2> "$out/log2.txt" ||
  { cat "$out/log2.txt"; fail "training with plugin_libraries in the config failed"; }
grep -q '"event":"summary"' "$out/events2.jsonl" || fail "no summary from the config run"
grep -q "plugin_libraries: \"$library\"" "$out/run_from_config/config.textproto" ||
  fail "resolved config does not record the library"
# Or added with --set, like any other field (for a config that names the
# plugin without options of the library's types, which parse only once it
# is loaded).
sed '/TinyMlpOptions/d' "$config" > "$out/no_options.textproto"
"$train" --config="$out/no_options.textproto" --set=plugin_libraries="$library" \
  --set=trainer.max_steps=2 \
  --set=output_dir="$out/run_from_set" > "$out/events3.jsonl" 2> "$out/log3.txt" ||
  { cat "$out/log3.txt"; fail "training with --set=plugin_libraries failed"; }
# Where the time of the first steps goes (train --profile_steps).
"$train" --plugin_library="$library" --config="$config" --profile_steps=5 \
  --set=trainer.max_steps=6 --set=output_dir="$out/run_profile" > /dev/null 2> "$out/log4.txt" ||
  { cat "$out/log4.txt"; fail "training with --profile_steps failed"; }
grep "^profile" "$out/log4.txt"
grep -Eq "^profile rank 0, steps 1-5 \(32 images each\): data wait [0-9.]+ ms/step \([0-9.]+%\), forward\+backward [0-9.]+ ms/step \([0-9.]+%\), optimizer step [0-9.]+ ms/step \([0-9.]+%\); [0-9]+ images/s$" \
  "$out/log4.txt" || fail "no profile line"
echo PASS
