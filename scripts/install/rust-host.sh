#!/usr/bin/env bash
# Host Rust toolchain pieces the host tiers need: rustfmt and clippy on rustup's toolchain
# (a Debian 12 without rustup gets Debian's rustc-web/cargo-web, which ship no rustfmt/clippy).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
export PATH="$HOME/.cargo/bin:$PATH"
if command -v rustup >/dev/null; then
  rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
  rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
elif ! command -v cargo >/dev/null; then
  # A Debian 12 without rustup: Debian's own newest Rust (bookworm-security ships 1.96 as -web).
  apt_get update -qq && apt_get install -y -qq rustc-web cargo-web >/dev/null
fi
command -v valgrind >/dev/null || { apt_get update -qq && apt_get install -y -qq valgrind >/dev/null; }
