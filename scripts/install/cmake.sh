#!/usr/bin/env bash
# CMake: runs the Zephyr module's CMake logic in script mode (cmake -P), e.g. its board-to-Rust-
# target mapping test, where no Zephyr tree is needed.
set -euo pipefail
if ! command -v cmake >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake >/dev/null
fi
cmake --version | head -n 1
