#!/usr/bin/env bash
# bindgen 0.69.5 (the CLI), the libclang it loads and clang's builtin headers (stddef.h, ...),
# from a fresh Debian 12 as root; idempotent. libclang-dev brings libclang 14 and its headers
# (libclang-common-14-dev); clang (14) is the binary bindgen asks for its include paths, without
# which libclang loaded from /usr/lib/x86_64-linux-gnu misses the headers of a cross --target
# (zephyr-module/build.rs also passes their directory itself, as -isystem).
# Two users: the Linux kernel's Rust (kernel-deps.sh) and the Zephyr module's build.rs, which
# generates the Rust side of its C headers at build time. Built from crates.io with Debian's
# cargo into a dedicated root, so it is independent of rustup. 0.69.5 is within what Linux 6.12
# accepts (scripts/min-tool-version.sh asks for >= 0.65.1) and predates the 0.71
# `--rust-target` change. Prints the binary's path: callers pass it as QFABRIC_BINDGEN.
# `bindgen.sh VERSION` installs another version beside it, into /opt/qfabric/tools/bindgen-VERSION
# (Linux 7.3's kernel-deps.sh --version 7.3 asks for 0.72.1).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
here="$(cd "$(dirname "$0")" && pwd)"
BINDGEN_VERSION=${1:-0.69.5}
TOOLS=/opt/qfabric/tools
[ "$BINDGEN_VERSION" = 0.69.5 ] || TOOLS="$TOOLS/bindgen-$BINDGEN_VERSION"

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
need=()
for p in libclang-dev clang; do installed "$p" || need+=("$p"); done
if [ ${#need[@]} -gt 0 ]; then
  apt_get update -qq >&2
  apt_get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

"$here/rust-debian.sh" >/dev/null

if ! "$TOOLS/bin/bindgen" --version 2>/dev/null | grep -q "bindgen $BINDGEN_VERSION"; then
  env -u RUSTUP_TOOLCHAIN PATH="/usr/bin:/bin" CARGO_HOME=/opt/qfabric/cargo-home \
    nice -n 10 /usr/bin/cargo install --locked --quiet --root "$TOOLS" \
    "bindgen-cli@$BINDGEN_VERSION" >&2
fi
"$TOOLS/bin/bindgen" --version >&2
echo "$TOOLS/bin/bindgen"
