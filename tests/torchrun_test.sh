#!/bin/bash
# The real torchrun (Debian's python3-torch, through tools/torchrun) starts
# two ddp ranks of `train` on this host; they train as the runner's own
# launcher's two ranks do: the same losses to the last printed digit. Then
# with --max_restarts=1 a worker is killed mid-run: torchrun restarts the
# group, --resume=auto continues from the last step checkpoint, and the run
# ends as an uninterrupted one does.
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
echo "PASS: the same losses under torchrun: $under_torchrun"

# One thread a rank and deterministic algorithms: a resumed run is bitwise
# an uninterrupted one.
exact=(--config=configs/ddp.textproto '--set=model={name: "small_cnn"}' --set=trainer.max_steps=100
       --set=trainer.threads=1 --set=trainer.deterministic=true --set=checkpoint.every_steps=5)
restarted="$TEST_TMPDIR/restarted"
"$TEST_SRCDIR/$TEST_WORKSPACE/tools/torchrun" --no_python --max_restarts=1 --nproc_per_node=2 \
  --master_port="$(free_port)" tools/train "${exact[@]}" --resume=auto \
  --set=output_dir="$restarted" >"$TEST_TMPDIR/restarted.out" 2>"$TEST_TMPDIR/restarted.err" &
agent=$!
until [[ -e $restarted/checkpoint_step_10.pt ]] || ! kill -0 "$agent" 2>/dev/null; do sleep 0.1; done
worker=$(pgrep -P "$agent" | tail -1)
[[ -n $worker ]] && kill -9 "$worker"
wait "$agent"
status=$?
if [[ $status -ne 0 ]]; then
  echo "FAIL: the restarted torchrun job exited $status"; tail -30 "$TEST_TMPDIR/restarted.err"; exit 1
fi
if ! grep -q "resume: continuing from $restarted/checkpoint_step_" "$TEST_TMPDIR/restarted.err"; then
  echo "FAIL: no restart resumed from a step checkpoint (killed worker: ${worker:-none})"
  tail -30 "$TEST_TMPDIR/restarted.err"; exit 1
fi
through_out=$(tools/train "${exact[@]}" --master_port="$(free_port)" \
  --set=output_dir="$TEST_TMPDIR/through" 2>"$TEST_TMPDIR/through.err")
after_restart=$(summary <"$TEST_TMPDIR/restarted.out")
uninterrupted=$(summary <<<"$through_out")
if [[ -z $after_restart || $after_restart != "$uninterrupted" ]]; then
  echo "FAIL: restarted: [$after_restart]; uninterrupted: [$uninterrupted]"
  exit 1
fi
echo "PASS: a worker killed, the group restarted and resumed: $after_restart"
