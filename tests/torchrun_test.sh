#!/bin/bash
# The real torchrun (Debian's python3-torch, through tools/torchrun) starts
# two ddp ranks of `train` on this host; they train as the runner's own
# launcher's two ranks do: the same losses to the last printed digit.
set -uo pipefail
if ! /usr/bin/python3 -c 'import torch.distributed.run' 2>/dev/null; then
  echo "skipped: python3-torch (torchrun) is not installed; tools/setup.sh installs it"
  exit 0
fi
free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
overrides=(--config=configs/ddp.textproto '--set=model={name: "small_cnn"}'
           --set=trainer.max_steps=4 --set=trainer.threads=1)
summary() {  # the summary event's losses, from a run's stdout
  grep -o '"event":"summary".*' | grep -o '"\(train\|val\)_loss":[^,]*'
}
torchrun_out=$("$TEST_SRCDIR/$TEST_WORKSPACE/tools/torchrun" --no_python --nproc_per_node=2 \
  --master_port="$(free_port)" tools/train "${overrides[@]}" \
  --set=output_dir="$TEST_TMPDIR/torchrun" 2>"$TEST_TMPDIR/torchrun.err")
status=$?
if [[ $status -ne 0 ]]; then
  echo "FAIL: torchrun exited $status"; tail -30 "$TEST_TMPDIR/torchrun.err"; exit 1
fi
own_out=$(tools/train "${overrides[@]}" --master_port="$(free_port)" \
  --set=output_dir="$TEST_TMPDIR/own" 2>"$TEST_TMPDIR/own.err")
status=$?
if [[ $status -ne 0 ]]; then
  echo "FAIL: train's own launcher exited $status"; tail -30 "$TEST_TMPDIR/own.err"; exit 1
fi
under_torchrun=$(summary <<<"$torchrun_out")
under_own=$(summary <<<"$own_out")
if [[ -z $under_torchrun || $under_torchrun != "$under_own" ]]; then
  echo "FAIL: under torchrun: [$under_torchrun]; under train's launcher: [$under_own]"
  exit 1
fi
echo "PASS: $under_torchrun"
