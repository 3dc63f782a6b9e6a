#!/bin/bash
# Each bad plugin library ends train with exit status 2 and one error line
# naming the file and what is wrong.
set -u
here=tests/plugin_library
# This build's plugin ABI version, and the one wrong_abi.cc stamps (the
# last hex digit's low bit flipped).
abi=$(tools/train --version | sed -n 's/.*plugin ABI \([0-9a-f]*\).*/\1/p')
last=$((16#${abi: -1} ^ 1))
wrong_abi="${abi:0:14}$(printf %x "$last")"
out="$TEST_TMPDIR"
failures=0

# expect <expected substring> <train arguments...>
expect() {
  local expected="$1"
  shift
  tools/train "$@" > "$out/stdout.txt" 2> "$out/stderr.txt"
  local status=$?
  if [[ $status -ne 2 ]]; then
    echo "FAIL ($*): exit status $status, expected 2"; failures=$((failures + 1))
  elif ! grep -qF -- "$expected" "$out/stderr.txt"; then
    echo "FAIL ($*): expected \"$expected\" in:"; cat "$out/stderr.txt"; failures=$((failures + 1))
  else
    echo "ok: $(head -1 "$out/stderr.txt")"
  fi
}

expect "error: plugin library $here/libnone.so: no such file" \
  --plugin_library=$here/libnone.so --list_plugins
# Not a shared library at all: dlerror's text.
text=examples/tiny_mlp_model/tiny_mlp.textproto
expect "error: plugin library $text: cannot be loaded: $text: invalid ELF header" \
  --plugin_library=$text --list_plugins
expect "undefined symbol: _ZN8pipeline24FunctionTrainDoesNotHaveEv" \
  --plugin_library=$here/libmissing_symbol.so --list_plugins
expect "error: plugin library $here/libnot_a_plugin.so: is not a pipeline plugin library: it does not export pipeline_plugin_abi_version()" \
  --plugin_library=$here/libnot_a_plugin.so --list_plugins
expect "error: plugin library $here/libwrong_abi.so: was built for plugin ABI version $wrong_abi, but this binary has version $abi; rebuild the library against this source tree" \
  --plugin_library=$here/libwrong_abi.so --list_plugins
expect "error: plugin library $here/libduplicate_name.so: model \"small_cnn\" is registered twice" \
  --plugin_library=$here/libduplicate_name.so --list_plugins
expect "error: plugin library $here/libregisters_nothing.so: registers no plugin" \
  --plugin_library=$here/libregisters_nothing.so --list_plugins
# From a config: the config file is named too.
cat > "$out/config.textproto" <<EOT
import: "$PWD/examples/tiny_mlp_model/tiny_mlp.textproto"
plugin_libraries: "$here/libwrong_abi.so"
EOT
expect "error: $out/config.textproto: plugin_libraries: plugin library $here/libwrong_abi.so: was built for plugin ABI version $wrong_abi" \
  --config="$out/config.textproto"
# Without any library, tiny_mlp's options are an unknown type: the usual
# config error, not a crash.
expect "tiny_mlp.textproto:" --config=examples/tiny_mlp_model/tiny_mlp.textproto

[[ $failures -eq 0 ]] && echo PASS
exit $failures
