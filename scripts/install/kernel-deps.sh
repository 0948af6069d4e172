#!/usr/bin/env bash
# Everything the virtual board needs to build Linux with Rust and boot it in QEMU, from a fresh
# Debian 12: the kernel source, Debian's Rust 1.96 (via rust-debian.sh), bindgen, the LLVM
# toolchain, the kernel's build tools, busybox and musl for the initramfs, and QEMU 10 from
# bookworm-backports (bookworm's QEMU 7.2 is too old). Idempotent: a second run only checks.
#
# --version 6.12 (the default): linux-source-6.12 from bookworm-backports, clang/lld 14 and
#   bindgen 0.69.5.
# --version 7.3: linux-source-7.3 from trixie-backports, on the Debian mirror apt already uses.
#   That suite is added with an apt pin that takes linux-source-7.3 from it and nothing else
#   (priority -1 for every other package, so no upgrade ever comes from there); the package is
#   only the source tarball. 7.3 asks for LLVM >= 17.0.1 and bindgen >= 0.71.1 (>= 0.72.1 with
#   libclang 22): Debian 12's LLVM 22 and bindgen 0.72.1 beside 0.69.5 (linux-driver/
#   kernel-toolchain says which version uses what). clang, lld and libclang 22 are unpacked
#   into /opt/qfabric/llvm-22, not installed: bindgen loads the newest libclang it finds on the
#   system, so an installed libclang 22 would become 0.69.5's too, which then fails on 6.12's
#   clang 14 flags ("unknown argument: '-enable-trivial-auto-var-init-zero-knowing-it-will-be-
#   removed-from-clang'"), in the kernel's and in the Zephyr module's build alike.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
here="$(cd "$(dirname "$0")" && pwd)"
kversion=6.12
while [ $# -gt 0 ]; do
  case "$1" in
    --version) kversion="${2:?--version needs 6.12 or 7.3}"; shift ;;
    --version=*) kversion="${1#--version=}" ;;
    *) echo "kernel-deps: unknown argument '$1' (usage: kernel-deps.sh [--version 6.12|7.3])" >&2; exit 2 ;;
  esac
  shift
done

updated=0
# Writes $1 with the content on stdin unless it is already that; a change needs an apt update.
apt_config() {
  local new
  new="$(cat)"
  if [ ! -f "$1" ] || [ "$(cat "$1")" != "$new" ]; then
    printf '%s\n' "$new" >"$1"
    updated=-1
  fi
}

# bookworm-backports carries linux-source-6.12 and qemu-system-x86 10.
if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  apt_config /etc/apt/sources.list.d/qfabric-backports.sources <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi

main_pkgs=(clang lld llvm libclang-dev flex bison bc make gcc libc6-dev libelf-dev libssl-dev
  cpio xz-utils busybox-static musl-tools python3 kmod)
bpo_pkgs=(qemu-system-x86)
trixie_bpo_pkgs=()
bindgen_version=0.69.5
case "$kversion" in
  6.12) bpo_pkgs+=(linux-source-6.12) ;;
  7.3)
    main_pkgs+=(llvm-22)
    trixie_bpo_pkgs+=(linux-source-7.3)
    bindgen_version=0.72.1
    # The Debian mirror apt already uses for bookworm.
    mirror="$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)"
    [ -n "$mirror" ] ||
      mirror="$(awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' /etc/apt/sources.list 2>/dev/null)"
    [ -n "$mirror" ] || { echo "kernel-deps: no Debian mirror in /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list" >&2; exit 1; }
    apt_config /etc/apt/sources.list.d/qfabric-trixie-backports.sources <<SRC
Types: deb
URIs: $mirror
Suites: trixie-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    apt_config /etc/apt/preferences.d/qfabric-trixie-backports <<'PIN'
# Only linux-source-7.3 (the source tarball) comes from trixie-backports; nothing else is ever
# installed or upgraded from there.
Package: *
Pin: release n=trixie-backports
Pin-Priority: -1

Package: linux-source-7.3
Pin: release n=trixie-backports
Pin-Priority: 500
PIN
    ;;
  *) echo "kernel-deps: --version '$kversion' is not one of 6.12, 7.3" >&2; exit 2 ;;
esac

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
update_once() { [ "$updated" = 1 ] || { apt_get update -qq; updated=1; }; }

need_main=(); need_bpo=(); need_trixie=()
for p in "${main_pkgs[@]}"; do installed "$p" || need_main+=("$p"); done
for p in "${bpo_pkgs[@]}"; do installed "$p" || need_bpo+=("$p"); done
for p in "${trixie_bpo_pkgs[@]}"; do installed "$p" || need_trixie+=("$p"); done
# bookworm's own QEMU 7.2 may already be there: the board needs 10 (backports).
if installed qemu-system-x86 && ! qemu-system-x86_64 --version | grep -q 'version \(1[0-9]\|[2-9][0-9]\)\.'; then
  need_bpo+=(qemu-system-x86)
fi
# A changed source or pin needs the lists read again even when nothing is to be installed (the
# pin must be in force before anything else is installed or upgraded).
[ "$updated" = 0 ] || update_once
if [ $((${#need_main[@]} + ${#need_bpo[@]} + ${#need_trixie[@]})) -gt 0 ]; then
  update_once
  export DEBIAN_FRONTEND=noninteractive
  [ ${#need_main[@]} -eq 0 ] ||
    apt_get install -y -qq --no-install-recommends "${need_main[@]}" >/dev/null
  [ ${#need_bpo[@]} -eq 0 ] ||
    apt_get install -y -qq --no-install-recommends -t bookworm-backports "${need_bpo[@]}" >/dev/null
  [ ${#need_trixie[@]} -eq 0 ] ||
    apt_get install -y -qq --no-install-recommends "${need_trixie[@]}" >/dev/null
fi

"$here/rust-debian.sh" >/dev/null

# 7.3: clang, lld and libclang 22 unpacked from their packages into /opt/qfabric/llvm-22 (see
# the top), with bin/ holding them and the installed llvm-22's tools (llvm-ar, llvm-nm, ...).
llvm22=/opt/qfabric/llvm-22
llvm22_debs=(clang-22 lld-22 libclang1-22 libclang-common-22-dev)
if [ "$kversion" = 7.3 ]; then
  want="$(apt-cache policy clang-22 | sed -n 's/^ *Candidate: //p')"
  if [ "$(cat "$llvm22/.version" 2>/dev/null)" != "$want" ] || [ ! -x "$llvm22/bin/clang" ]; then
    update_once
    tmp="$(mktemp -d)"
    chown _apt "$tmp" 2>/dev/null || true
    (cd "$tmp" && apt_get download -qq "${llvm22_debs[@]}")
    rm -rf "$llvm22"
    mkdir -p "$llvm22/bin"
    for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$llvm22"; done
    rm -rf "$tmp"
    for tool in /usr/lib/llvm-22/bin/* "$llvm22"/usr/lib/llvm-22/bin/*; do
      ln -sfn "$tool" "$llvm22/bin/$(basename "$tool")"
    done
    echo "$want" >"$llvm22/.version"
  fi
  "$llvm22/bin/clang" --version | head -n 1
fi

# bindgen: the kernel runs it on its C headers (0.69.5 is shared with the Zephyr module's build).
bindgen="$("$here/bindgen.sh" "$bindgen_version")"

qemu-system-x86_64 --version | head -1
for p in "${bpo_pkgs[@]}" "${trixie_bpo_pkgs[@]}"; do
  case "$p" in linux-source-*) echo "$p $(dpkg-query -W -f='${Version}' "$p")" ;; esac
done
"$bindgen" --version
