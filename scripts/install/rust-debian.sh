#!/usr/bin/env bash
# Debian's own Rust 1.96 (rustc-web, cargo-web, rust-web-src from bookworm-security).
# It is the toolchain for the two things rustup's cannot do here: no_std builds for Cortex-M with
# `-Z build-std=core` (needs std sources matching the compiler) and the Linux kernel's Rust.
# It installs as /usr/bin/rustc and /usr/bin/cargo: callers use those paths explicitly, because
# rustup's ~/.cargo/bin comes first on PATH.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
need=()
for pkg in rustc-web cargo-web rust-web-src; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  apt_get update -qq
  apt_get install -y -qq "${need[@]}" >/dev/null
fi
/usr/bin/rustc --version
