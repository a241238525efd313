#!/usr/bin/env bash
# Installs the Debian 12 packages mixgraph builds and tests with (as root, or
# through sudo). Skips apt entirely when everything is already there.
set -euo pipefail
packages=(cmake ninja-build g++ pkg-config libdnnl-dev libhdf5-dev
          libyaml-cpp-dev zlib1g-dev googletest libgtest-dev libcli11-dev
          libonnx-dev libprotobuf-dev protobuf-compiler libzip-dev
          libeigen3-dev libkissfft-dev "$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
