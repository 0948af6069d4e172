#!/usr/bin/env bash
# kconfiglib (Debian's python3-kconfiglib, the library Zephyr's own Kconfig scripts are built on):
# the Zephyr module tier evaluates qfabric's Kconfig with it, without a Zephyr tree. Prints the
# interpreter that has it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
if ! /usr/bin/python3 -c 'import kconfiglib' 2>/dev/null; then
  apt_get update -qq
  apt_get install -y -qq python3-kconfiglib >/dev/null
fi
echo /usr/bin/python3
