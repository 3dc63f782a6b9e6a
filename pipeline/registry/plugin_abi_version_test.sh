#!/bin/bash
# The plugin ABI version train reports is the hash of the files it is made
# from (given as arguments), as they are in this tree: nobody bumps it by
# hand, so no interface change can keep the old one.
set -eu
expected=$(cat "$@" | sha256sum | cut -c1-15)
reported=$(tools/train --version | sed -n 's/.*plugin ABI \([0-9a-f]*\).*/\1/p')
echo "hashed $# files: $*"
if [[ "$reported" != "$expected" ]]; then
  echo "FAIL: train --version reports plugin ABI '$reported', the inputs hash to '$expected'"
  exit 1
fi
# Every interface header is among the inputs.
for header in pipeline/interfaces/*.h; do
  [[ " $* " == *" $header "* ]] || { echo "FAIL: $header is not hashed"; exit 1; }
done
echo "ok: plugin ABI $reported"
