#!/usr/bin/env bash
# What the arm64 virtual board (tests/qemu/run with QF_ARCH=arm64) needs on top of kernel-deps.sh,
# from a fresh Debian 12 (amd64) as root; idempotent, a second run only checks.
# - The kernel: nothing more. Debian's clang/lld/llvm are multi-target and Debian's rustc 1.96
#   knows aarch64-unknown-none-softfloat; the kernel builds its own `core` from rust-web-src.
# - QEMU: qemu-system-arm 10 from bookworm-backports (it carries qemu-system-aarch64).
# - The guest program (static, glibc): the aarch64 standard library matching Debian's rustc
#   exactly, libstd-rust-web-dev:arm64 (Multi-Arch: same, so it installs beside the amd64 one into
#   /usr/lib/rustlib/aarch64-unknown-linux-gnu), which needs dpkg's arm64 architecture; and
#   gcc-aarch64-linux-gnu as the linker, with libc6-dev-arm64-cross's static glibc. rustup cannot
#   be used: it cannot fetch other targets' std here.
# - busybox: busybox-static:arm64 cannot be installed beside the amd64 one (both own
#   /bin/busybox), so its .deb is downloaded and unpacked into /opt/qfabric/arm64/busybox.
# Prints the aarch64 busybox's path as its last line.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
here="$(cd "$(dirname "$0")" && pwd)"
ROOT=/opt/qfabric/arm64

"$here/kernel-deps.sh" >&2

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

updated=0
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  dpkg --add-architecture arm64
  apt_get update -qq
  updated=1
fi
update_once() { [ "$updated" = 1 ] || { apt_get update -qq; updated=1; }; }
export DEBIAN_FRONTEND=noninteractive

# The aarch64 std must be the build of the very rustc that compiles against it.
rustc_version="$(dpkg-query -W -f='${Version}' rustc-web)"
need_main=()
for p in gcc-aarch64-linux-gnu libc6-dev-arm64-cross; do installed "$p" || need_main+=("$p"); done
[ "$(dpkg-query -W -f='${Version}' libstd-rust-web-dev:arm64 2>/dev/null)" = "$rustc_version" ] ||
  need_main+=("libstd-rust-web-dev:arm64=$rustc_version")
if [ ${#need_main[@]} -gt 0 ]; then
  update_once
  apt_get install -y -qq --no-install-recommends "${need_main[@]}" >/dev/null
fi
if ! installed qemu-system-arm || ! qemu-system-aarch64 --version | grep -q 'version \(1[0-9]\|[2-9][0-9]\)\.'; then
  update_once
  apt_get install -y -qq --no-install-recommends -t bookworm-backports qemu-system-arm >/dev/null
fi

if [ ! -x "$ROOT/busybox/bin/busybox" ]; then
  update_once
  tmp="$(mktemp -d)"
  # apt downloads as _apt when it may write there.
  chown _apt "$tmp" 2>/dev/null || true
  (cd "$tmp" && apt_get download -qq busybox-static:arm64)
  rm -rf "$ROOT/busybox"
  mkdir -p "$ROOT"
  dpkg-deb -x "$tmp"/busybox-static_*_arm64.deb "$ROOT/busybox"
  rm -rf "$tmp"
fi
file -L "$ROOT/busybox/bin/busybox" | grep -q 'ARM aarch64.*statically linked' ||
  { echo "arm64-deps: $ROOT/busybox/bin/busybox is not a static aarch64 binary" >&2; exit 1; }

qemu-system-aarch64 --version | head -1 >&2
aarch64-linux-gnu-gcc --version | head -1 >&2
ls /usr/lib/rustlib/aarch64-unknown-linux-gnu/lib/libstd-*.rlib >&2
echo "$ROOT/busybox/bin/busybox"
