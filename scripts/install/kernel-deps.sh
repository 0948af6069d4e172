#!/usr/bin/env bash
# Everything the virtual board (issue 5) needs to build Linux 6.12 with Rust and boot it in QEMU,
# from a fresh Debian 12: the kernel source, Debian's Rust 1.96 (via rust-debian.sh), bindgen,
# the LLVM toolchain, the kernel's build tools, busybox and musl for the initramfs, and QEMU 10
# from bookworm-backports (bookworm's QEMU 7.2 is too old). Idempotent: a second run only checks.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
here="$(cd "$(dirname "$0")" && pwd)"

# bookworm-backports carries linux-source-6.12 and qemu-system-x86 10.
if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  cat >/etc/apt/sources.list.d/qfabric-backports.sources <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  rm -f /var/cache/qfabric/.apt-updated
fi

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

main_pkgs=(clang lld llvm libclang-dev flex bison bc make gcc libc6-dev libelf-dev libssl-dev
  cpio xz-utils busybox-static musl-tools python3 kmod)
bpo_pkgs=(linux-source-6.12 qemu-system-x86)
need_main=(); need_bpo=()
for p in "${main_pkgs[@]}"; do installed "$p" || need_main+=("$p"); done
for p in "${bpo_pkgs[@]}"; do installed "$p" || need_bpo+=("$p"); done
# bookworm's own QEMU 7.2 may already be there: the board needs 10 (backports).
if installed qemu-system-x86 && ! qemu-system-x86_64 --version | grep -q 'version \(1[0-9]\|[2-9][0-9]\)\.'; then
  need_bpo+=(qemu-system-x86)
fi
if [ $((${#need_main[@]} + ${#need_bpo[@]})) -gt 0 ]; then
  apt_get update -qq
  export DEBIAN_FRONTEND=noninteractive
  [ ${#need_main[@]} -eq 0 ] ||
    apt_get install -y -qq --no-install-recommends "${need_main[@]}" >/dev/null
  [ ${#need_bpo[@]} -eq 0 ] ||
    apt_get install -y -qq --no-install-recommends -t bookworm-backports "${need_bpo[@]}" >/dev/null
fi

"$here/rust-debian.sh" >/dev/null

# bindgen: the kernel runs it on its C headers (shared with the Zephyr module's build).
"$here/bindgen.sh" >/dev/null

qemu-system-x86_64 --version | head -1
/opt/qfabric/tools/bin/bindgen --version
