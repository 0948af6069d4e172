#!/usr/bin/env bash
# CMake: runs the Zephyr module's CMake logic in script mode (cmake -P), e.g. its board-to-Rust-
# target mapping test, where no Zephyr tree is needed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
if ! command -v cmake >/dev/null; then
  apt_get update -qq
  apt_get install -y -qq cmake >/dev/null
fi
cmake --version | head -n 1
