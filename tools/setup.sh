#!/usr/bin/env bash
# Installs every Debian package the build, the tests and the default run need.
# Idempotent: when everything is already installed it only checks and returns.
set -euo pipefail

PACKAGES=(
  # Toolchain: Bazel runs on the JDK; the C++ compiler builds everything.
  bazel-bootstrap default-jdk-headless g++ git ca-certificates
  # Libraries the runner links.
  libtorch-dev libgloo-dev libabsl-dev libgflags-dev libgoogle-glog-dev
  libgtest-dev libgmock-dev libprotobuf-dev protobuf-compiler
  libturbojpeg0-dev libjpeg62-turbo-dev libpng-dev zlib1g-dev
  # Fast CPU training: an optimised BLAS behind libblas.so.3, and a caching
  # allocator (page faults are very expensive on these machines).
  libopenblas0-pthread libgoogle-perftools4
  # The other allocator the benchmark compares.
  libjemalloc2
  # Real data for the default run and the end-to-end tests, and real
  # photographs the benchmark's JPEG corpus is cut from.
  dataset-fashion-mnist mate-backgrounds
  # The multi-host test's network: namespaces, links and tc (iproute2), and
  # packet loss where the kernel has no netem (nftables).
  iproute2 nftables
  # torchrun, which tests/torchrun_test starts the runner's ranks with.
  python3-torch
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
