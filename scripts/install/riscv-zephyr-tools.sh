#!/usr/bin/env bash
# Tools to build and run qfabric's Zephyr Twister suites and overhead count on qemu_riscv32 (a
# USE_SWITCH architecture) without the Zephyr SDK: Debian's bare-metal RISC-V GCC and binutils
# (its multilibs include rv32imac/ilp32; Zephyr's minimal libc is used, so no C library package
# is needed; objdump decodes the overhead trace) and qemu-system-riscv32. QEMU comes from
# bookworm-backports when that suite is configured (the same 10.x as qemu-system-arm there),
# else from the release (7.2 in bookworm: it runs the suites' virt machine, but the overhead
# count needs 8.1 or later for one-insn-per-tb). Use with ZEPHYR_TOOLCHAIN_VARIANT=cross-compile
# CROSS_COMPILE=/usr/bin/riscv64-unknown-elf-.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
need=()
command -v riscv64-unknown-elf-gcc >/dev/null || need+=(gcc-riscv64-unknown-elf)
command -v qemu-system-riscv32 >/dev/null || need+=(qemu-system-misc)
[ ${#need[@]} -eq 0 ] && exit 0
apt_get update -qq
if apt-cache policy qemu-system-misc | grep -q bookworm-backports; then
  apt_get install -y -qq -t bookworm-backports "${need[@]}" >/dev/null
else
  apt_get install -y -qq "${need[@]}" >/dev/null
fi
