#!/usr/bin/env bash
# clang: compiles the generated C header for bare Cortex-M (it cross-compiles with its own
# freestanding headers, no arm-none-eabi libc needed).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
if ! command -v clang >/dev/null; then
  apt_get update -qq
  apt_get install -y -qq clang >/dev/null
fi
clang --version | head -n 1
