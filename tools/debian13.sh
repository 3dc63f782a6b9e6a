#!/usr/bin/env bash
# Runs a command in a Debian 13 (trixie) root: LibTorch 2.6 (CPU and CUDA 12,
# with NCCL), gcc 14, Abseil 2024, the same Bazel 4.2.3.
#
#   tools/debian13.sh bazel test //...                 # LibTorch 2.6, CPU build
#   tools/debian13.sh bazel test --config=cuda //...   # the CUDA + NCCL build
#   tools/debian13.sh                                  # a shell in the root
#
# The root lives outside the checkout, in $PIPELINE_CACHE (default
# ~/.cache/pipeline_runner), with its own Bazel output base and disk cache, so
# a second run (or a fresh clone on the same machine) reuses both. The first
# run makes it: debootstrap (about 1 minute), then about 3 GB of packages.
# The checkout is bind-mounted at its own path; every mount is undone on exit,
# also when the command fails or is interrupted.
#
# Needs root (debootstrap, chroot, mount) and Debian's archive
# ($DEBIAN13_MIRROR, default http://deb.debian.org/debian).
set -euo pipefail

CACHE=${PIPELINE_CACHE:-$HOME/.cache/pipeline_runner}
ROOT=${DEBIAN13_ROOT:-$CACHE/debian13-root}
MIRROR=${DEBIAN13_MIRROR:-http://deb.debian.org/debian}
REPO=$(cd "$(dirname "$0")/.." && pwd)

# What the build, the tests and the runs need, as tools/setup.sh installs on
# Debian 12 (one name differs: libgoogle-perftools4t64).
CPU_PACKAGES=(
  bazel-bootstrap default-jdk-headless g++ git ca-certificates python3 procps
  iproute2 nftables
  libabsl-dev libgflags-dev libgoogle-glog-dev
  libgtest-dev libgmock-dev libprotobuf-dev protobuf-compiler
  libturbojpeg0-dev libjpeg62-turbo-dev libpng-dev zlib1g-dev
  libopenblas0-pthread libgoogle-perftools4t64 libjemalloc2
  dataset-fashion-mnist mate-backgrounds
)
# The CUDA LibTorch (and Gloo) ship the CPU ones' headers and libraries at the
# same paths (they replace libtorch-dev and libgloo-dev), so one root serves
# both builds: without --config=cuda nothing links libtorch_cuda.
CUDA_PACKAGES=(
  libtorch-cuda-dev libgloo-cuda-dev libnccl-dev nvidia-cuda-dev libcuda1
)
# PyTorch 2.6 itself, for the bench's torch2 rows (tools/bench_torch2.py):
# the CUDA build's Python module (it runs its CPU kernels without a GPU) and
# torchvision; torch.compile's inductor compiles C++ against Python.h with
# g++ and needs setuptools. Hugging Face's safetensors (0.5.2), which writes
# the safetensors fixture (tools/fixtures/safetensors_weights.py) and checks
# what export_weights writes; Debian 12 has no package of it.
PYTHON_PACKAGES=(
  python3-torch-cuda python3-torchvision python3-setuptools python3-dev
  python3-safetensors
)
# Bump when the package sets change: the next run installs what is missing.
SETUP_VERSION=6

die() { echo "debian13.sh: $*" >&2; exit 2; }

check_host() {
  [[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, chroot and bind mounts); run it as root or with sudo"
  if ! command -v debootstrap >/dev/null; then
    echo "debian13.sh: installing debootstrap" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null ||
      die "could not install debootstrap with apt-get (is Debian's archive reachable?)"
  fi
}

# One HTTP request for trixie's Release file, with bash alone: a minimal
# Debian has neither curl nor wget.
check_archive() {
  local hostport=${MIRROR#*://} path
  path=/${hostport#*/}
  hostport=${hostport%%/*}
  local host=${hostport%%:*} port=80
  [[ $hostport == *:* ]] && port=${hostport##*:}
  if ! timeout 20 bash -c "exec 3<>/dev/tcp/$host/$port &&
       printf 'HEAD ${path%/}/dists/trixie/Release HTTP/1.1\r\nHost: $host\r\nConnection: close\r\n\r\n' >&3 &&
       head -1 <&3 | grep -qE ' [23][0-9][0-9] '" 2>/dev/null; then
    die "Debian's archive is unreachable: no answer for trixie from $MIRROR" \
        "(set DEBIAN13_MIRROR to a reachable mirror of http://deb.debian.org/debian)"
  fi
}

CHILD=""
descendants() {
  local child
  for child in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
    echo "$child"
    descendants "$child"
  done
}
stop_child() {
  [[ -n $CHILD ]] || return 0
  # SIGINT to the whole tree under it: Bazel's client, inside, cancels the
  # build or test on it. (/proc, not pkill: procps may be missing.)
  kill -INT $(descendants "$CHILD") "$CHILD" 2>/dev/null || true
  wait "$CHILD" 2>/dev/null || true
}

unmount_all() {
  local status=$?
  # The root's Bazel server would keep the mounts busy.
  if [[ -x $ROOT/usr/bin/bazel && -d $ROOT$REPO/pipeline ]]; then
    chroot "$ROOT" /bin/bash -c "cd '$REPO' && bazel shutdown" >/dev/null 2>&1 || true
  fi
  unmount_everything_in_root
  exit "$status"
}

# Every mount under the root, deepest first: the binds below with what they
# brought along, and what the command mounted inside the root itself (the
# tests' `ip netns add` leaves $ROOT/run/netns and a file per namespace).
unmount_everything_in_root() {
  local root target
  root=$(realpath "$ROOT")
  while read -r target; do
    umount "$target" 2>/dev/null || umount -l "$target" 2>/dev/null || true
  done < <(awk -v root="$root/" 'index($5, root) == 1 { print $5 }' /proc/self/mountinfo | sort -r)
}

bind() {  # bind SOURCE TARGET_IN_ROOT
  mkdir -p "$ROOT$2"
  mountpoint -q "$ROOT$2" && return 0
  mount --rbind "$1" "$ROOT$2"
  mount --make-rslave "$ROOT$2"
}

mount_root() {
  trap unmount_all EXIT
  trap 'stop_child; exit 130' INT TERM
  bind /proc /proc
  bind /sys /sys
  bind /dev /dev
  bind "$REPO" "$REPO"
}

in_root() {
  chroot "$ROOT" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    DEBIAN_FRONTEND=noninteractive "$@"
}

make_root() {
  [[ -f $ROOT/.debootstrap-done ]] && return 0
  check_archive
  echo "debian13.sh: creating the Debian 13 root in $ROOT (debootstrap, about 1 minute)" >&2
  rm -rf "$ROOT"
  mkdir -p "$ROOT"
  debootstrap --variant=minbase --components=main,contrib,non-free \
    trixie "$ROOT" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 ||
    die "debootstrap failed (log: $CACHE/debootstrap.log; last lines below)$(echo; tail -5 "$CACHE/debootstrap.log")"
  touch "$ROOT/.debootstrap-done"
}

configure_root() {
  # A minbase root has no /etc/hosts; c10d resolves "localhost".
  printf '127.0.0.1 localhost\n::1 localhost ip6-localhost\n' >"$ROOT/etc/hosts"
  cp /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true
  cat >"$ROOT/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: trixie
Components: main contrib non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  rm -f "$ROOT/etc/apt/sources.list"
  # Packages are not kept once installed (the CUDA set alone is 2.5 GB).
  echo 'APT::Keep-Downloaded-Packages "false";' >"$ROOT/etc/apt/apt.conf.d/01-no-keep"
}

install_packages() {
  [[ $(cat "$ROOT/.setup-version" 2>/dev/null) == "$SETUP_VERSION" ]] && return 0
  check_archive
  echo "debian13.sh: installing the CPU, CUDA and Python package sets (about 3.5 GB of downloads)" >&2
  # nvidia-cudnn is an installer that downloads cuDNN from NVIDIA in its
  # postinst; declining makes it a no-op (cuDNN is stood in below).
  echo 'nvidia-cudnn nvidia-cudnn/question select I Decline' | in_root debconf-set-selections
  in_root apt-get update -qq || die "apt-get update failed in $ROOT (is $MIRROR reachable?)"
  in_root apt-get install -y -qq --no-install-recommends "${CPU_PACKAGES[@]}" "${CUDA_PACKAGES[@]}" \
    "${PYTHON_PACKAGES[@]}" \
    >"$CACHE/debian13-apt.log" 2>&1 ||
    die "apt-get install failed in $ROOT (log: $CACHE/debian13-apt.log)$(echo; tail -5 "$CACHE/debian13-apt.log")"
  make_cudnn_standin
  in_root dpkg --configure -a
  echo "$SETUP_VERSION" >"$ROOT/.setup-version"
}

# libtorch_cuda.so needs libcudnn.so.9 to link and load, and no Debian package
# ships it. The stand-in defines every cudnn* function libtorch_cuda imports,
# under the symbol version it imports them with (libcudnn.so.9), each
# returning CUDNN_STATUS_NOT_INITIALIZED (1); it is never reached without a
# GPU. On a GPU machine the real cuDNN replaces it (docs/cuda.md).
make_cudnn_standin() {
  local lib=/usr/lib/x86_64-linux-gnu
  if [[ -e $ROOT$lib/libcudnn.so.9 ]] && ! grep -q pipeline_cudnn_standin "$ROOT$lib/libcudnn.so.9"; then
    return 0  # a real cuDNN
  fi
  local torch_cuda importers=() library
  torch_cuda=$(ls "$ROOT$lib"/libtorch_cuda.so* 2>/dev/null | head -1)
  [[ -n $torch_cuda ]] || die "libtorch_cuda.so is missing after installing libtorch-cuda-dev"
  # Python's torch module (libtorch_python) imports cuDNN functions of its own.
  for library in "$torch_cuda" $(ls "$ROOT$lib"/libtorch_python.so* 2>/dev/null | head -1); do
    importers+=("${library#$ROOT}")
  done
  in_root /bin/bash -c "
    set -e
    for l in ${importers[*]}; do nm -D --undefined-only \$l; done |
      awk '{print \$2}' | sed 's/@.*//' | grep '^cudnn' | sort -u >/tmp/cudnn_symbols
    { echo 'const char pipeline_cudnn_standin[] = \"pipeline_cudnn_standin\";'
      while read -r f; do echo \"int \$f(void) { return 1; }\"; done </tmp/cudnn_symbols; } >/tmp/cudnn_standin.c
    echo 'libcudnn.so.9 { global: *; };' >/tmp/cudnn_standin.map
    gcc -shared -fPIC -Wl,-soname,libcudnn.so.9 -Wl,--version-script=/tmp/cudnn_standin.map \
      -o $lib/libcudnn.so.9 /tmp/cudnn_standin.c
    ln -sf libcudnn.so.9 $lib/libcudnn.so
    ldconfig"
}

main() {
  check_host
  mkdir -p "$CACHE"
  # One at a time: the mounts and the root's Bazel server are shared.
  exec 9>"$CACHE/debian13.lock"
  if ! flock -n 9; then
    echo "debian13.sh: waiting for another debian13.sh to finish" >&2
    flock 9
  fi
  make_root
  configure_root
  mount_root
  install_packages
  local cmd=("$@")
  if ((${#cmd[@]} == 0)); then cmd=(/bin/bash); fi
  local quoted
  printf -v quoted '%q ' "${cmd[@]}"
  if (($# == 0)); then
    in_root /bin/bash -c "cd '$REPO' && $quoted"  # interactive: keeps the terminal
    return
  fi
  # In the background, so that an interrupt reaches the traps at once (bash
  # runs them only after a foreground child ends): the command is stopped,
  # the root's Bazel server shut down and the mounts undone.
  in_root /bin/bash -c "cd '$REPO' && $quoted" &
  CHILD=$!
  wait "$CHILD"
}

main "$@"
