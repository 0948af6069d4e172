#!/usr/bin/env bash
# Tools to link and inspect Cortex-M images built by Debian's Rust: ld.lld (the thumbv8m
# targets' linker; Debian's rustc ships no rust-lld) and arm-none-eabi-size/-nm.
set -euo pipefail
need=()
command -v ld.lld >/dev/null || need+=(lld)
command -v arm-none-eabi-size >/dev/null || need+=(binutils-arm-none-eabi)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
