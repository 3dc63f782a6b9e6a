#!/bin/bash
# The committed docs/config_reference.md is what the .proto files say now.
tools/config_reference > "$TEST_TMPDIR/config_reference.md" || exit 1
if ! diff -u docs/config_reference.md "$TEST_TMPDIR/config_reference.md"; then
  echo "docs/config_reference.md is out of date; regenerate it with"
  echo "  bazel run //tools:config_reference -- --output=docs/config_reference.md"
  exit 1
fi
echo PASS
