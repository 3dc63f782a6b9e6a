#!/bin/bash
# The core (pipeline/) and the tools (tools/) never include a plugin's
# header: plugins depend on the core, the tools link the plugins through
# plugins/all_plugins.bzl and reach them by name through the registry, and
# adding a plugin touches only its folder and that list. A library the core
# or a tool needs (image codecs, idx files, pixel operations) lives in the
# core (pipeline/image/), not in a plugin's folder.
#
# It fails on any `#include "plugins/...` (or <plugins/...>) in a C++ file,
# and any `import "plugins/...` in a .proto, anywhere under pipeline/ or
# tools/ -- tests included. No file is exempt: the bench (tools/bench/),
# which runs plugins, does so by name through configs and needs none of
# their headers.
# An exemption would go in ALLOWED below, with the reason beside it.
#
# Why it reads the source tree itself rather than a filegroup in `data`:
# Bazel's globs stop at package boundaries, and pipeline/ is a dozen
# packages; a glob in each of their BUILD files would have to be kept in
# step by hand, and a package without one would be silently unchecked. So
# the test follows the runfiles symlink of its own script back to the tree,
# and tests/BUILD tags it "external" so that Bazel never caches its result:
# every `bazel test` reads the files as they are now.
set -euo pipefail

ALLOWED=(
  # "tools/example.cc"  # why it must include a plugin header
)

# Lines including a plugin, as path:line:text, under pipeline/ and tools/ of
# the tree at $1.
plugin_includes() {
  (cd "$1" && grep -rnE \
      '^[[:space:]]*(#[[:space:]]*include[[:space:]]*[<"]|import[[:space:]]+((public|weak)[[:space:]]+)?")plugins/' \
      --include='*.h' --include='*.hh' --include='*.hpp' --include='*.inc' \
      --include='*.c' --include='*.cc' --include='*.cpp' --include='*.proto' \
      pipeline tools || true)
}

is_allowed() {
  local file=$1 allowed
  for allowed in ${ALLOWED[@]+"${ALLOWED[@]}"}; do
    [[ "$file" == "$allowed" ]] && return 0
  done
  return 1
}

# Violations of the tree at $1, one per line.
violations() {
  local line
  while IFS= read -r line; do
    [[ -z "$line" ]] && continue
    is_allowed "${line%%:*}" || echo "$line"
  done < <(plugin_includes "$1")
}

# 1. The check can fail: a planted include is found, in a .h and a .proto,
#    and an include of the core is not.
scratch=$(mktemp -d "${TEST_TMPDIR:-/tmp}/includes.XXXXXX")
mkdir -p "$scratch/pipeline/core" "$scratch/tools"
printf '#include "pipeline/interfaces/dataset.h"\n' > "$scratch/pipeline/core/fine.cc"
printf '#include <vector>\n  #include "plugins/datasets/image_folder/image_folder.pb.h"\n' \
  > "$scratch/pipeline/core/bad.h"
printf 'syntax = "proto2";\nimport "plugins/models/resnet/resnet.proto";\n' \
  > "$scratch/tools/bad.proto"
planted=$(violations "$scratch")
if [[ $(grep -c . <<< "$planted") -ne 2 || "$planted" != *"pipeline/core/bad.h:2:"* ||
      "$planted" != *"tools/bad.proto:2:"* ]]; then
  echo "FAIL: the check does not find planted plugin includes; it found:"
  echo "$planted"
  exit 1
fi

# 2. The real tree.
script=$(readlink -f "$0")
root=$(dirname "$(dirname "$script")")
if [[ ! -f "$root/pipeline/registry/registry.h" || ! -f "$root/tools/train.cc" ]]; then
  echo "FAIL: $root (from $script) is not the source tree"
  exit 1
fi
checked=$(cd "$root" && find pipeline tools -type f \( -name '*.h' -o -name '*.cc' \) | wc -l)
if (( checked < 50 )); then
  echo "FAIL: only $checked C++ files under $root/pipeline and $root/tools"
  exit 1
fi

found=$(violations "$root")
if [[ -n "$found" ]]; then
  echo "FAIL: the core and the tools must not include plugin headers (move what they need"
  echo "into the core, e.g. pipeline/image/, or reach the plugin through the registry):"
  echo "$found"
  exit 1
fi
echo "ok: none of the $checked C++ files under pipeline/ and tools/ includes a plugin header"
