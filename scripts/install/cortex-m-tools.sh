#!/usr/bin/env bash
# Tools to link and inspect Cortex-M images built by Debian's Rust: ld.lld (the thumbv8m
# targets' linker; Debian's rustc ships no rust-lld) and arm-none-eabi-size/-nm.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
need=()
command -v ld.lld >/dev/null || need+=(lld)
command -v arm-none-eabi-size >/dev/null || need+=(binutils-arm-none-eabi)
if [ ${#need[@]} -gt 0 ]; then
  apt_get update -qq
  apt_get install -y -qq "${need[@]}" >/dev/null
fi
