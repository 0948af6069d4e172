# Sourced by build-kernel and prepare-kernel (bash): their common options, what each kernel
# version is built from, and the configured, patched tree both start from.
#
# --version 6.12 (the default): Debian's linux-source-6.12 with kernel-patches/linux/*.patch.
# --version 7.3: Debian's linux-source-7.3 (trixie-backports, which kernel-deps.sh --version 7.3
#   adds) with kernel-patches/linux/7.3/*.patch.
# --arch x86_64 (the default), arm64 or arm (32-bit ARMv7; Rust supports it from 7.x, not in
#   6.12, whose Documentation/rust/arch-support.rst lists no 32-bit Arm): LLVM cross-builds for
#   all of them. The architecture's own config lines live in kernel.ARCH.config.
# --base tinyconfig (the default) or defconfig (the architecture's defconfig, a vendor-style
#   configuration: the modules must not depend on tinyconfig's choices).
# The compilers of each version are kernel-toolchain's.
#
# Callers set `tool` (their name, for messages) and `here` (linux-driver/) before sourcing.
repo="$(cd "$here/.." && pwd)"
arch=x86_64 base=tinyconfig install=1 kversion=6.12
usage="usage: $tool [--no-install] [--version 6.12|7.3] [--arch x86_64|arm64|arm] [--base tinyconfig|defconfig]"
while [ $# -gt 0 ]; do
  case "$1" in
    --no-install) install=0 ;;
    --arch) arch="${2:?--arch needs x86_64, arm64 or arm}"; shift ;;
    --arch=*) arch="${1#--arch=}" ;;
    --base) base="${2:?--base needs tinyconfig or defconfig}"; shift ;;
    --base=*) base="${1#--base=}" ;;
    --version) kversion="${2:?--version needs 6.12 or 7.3}"; shift ;;
    --version=*) kversion="${1#--version=}" ;;
    *) echo "$tool: unknown argument '$1' ($usage)" >&2; exit 2 ;;
  esac
  shift
done
case "$arch" in
  x86_64) image=arch/x86/boot/bzImage; image_target=bzImage ;;
  arm64) image=arch/arm64/boot/Image; image_target=Image ;;
  arm) image=arch/arm/boot/zImage; image_target=zImage ;;
  *) echo "$tool: --arch '$arch' is not one of x86_64, arm64, arm" >&2; exit 2 ;;
esac
case "$base" in
  tinyconfig | defconfig) ;;
  *) echo "$tool: --base '$base' is not one of tinyconfig, defconfig" >&2; exit 2 ;;
esac
shopt -s nullglob
case "$kversion" in
  6.12) patches=("$repo"/kernel-patches/linux/*.patch) ;;
  7.3) patches=("$repo"/kernel-patches/linux/7.3/*.patch) ;;
  *) echo "$tool: --version '$kversion' is not one of 6.12, 7.3" >&2; exit 2 ;;
esac
shopt -u nullglob
if [ "$arch" = arm ] && [ "$kversion" = 6.12 ]; then
  echo "$tool: Linux 6.12 has no Rust on 32-bit Arm (Documentation/rust/arch-support.rst); use --version 7.3" >&2
  exit 2
fi
[ "$install" = 0 ] || "$repo/scripts/install/kernel-deps.sh" --version "$kversion" >&2

fragments=("$here/kernel.config" "$here/kernel.$arch.config")
[ -f "${fragments[1]}" ] || { echo "$tool: no ${fragments[1]} for --arch $arch" >&2; exit 2; }
source_tar="/usr/src/linux-source-$kversion.tar.xz"
debversion="$(dpkg-query -W -f='${Version}' "linux-source-$kversion")"
# What the tree is made of: a change to any of these is another cache entry.
key="$(cat "${fragments[@]}" "${patches[@]}" "$0" "$here/kernel-tree.sh" "$here/kernel-toolchain" |
  sha256sum | cut -c1-16)"
cache_root="${QF_KERNEL_CACHE:-/var/cache/qfabric/kernel}"
mkdir -p "$cache_root"

# The kernel's Rust must be Debian's (matching rust-src for `core`), never rustup's.
export PATH="/opt/qfabric/tools/bin:/usr/sbin:/usr/bin:/sbin:/bin"
unset RUSTUP_TOOLCHAIN RUSTC CARGO
mapfile -t toolchain < <("$here/kernel-toolchain" "$kversion")

# Extracts the source into $kdir, applies the patches, configures BASE + the fragments and checks
# that every fragment line survived; `make ARCH=... <toolchain>` is then ready for any target.
configure_tree() {
  local out="$1" kdir="$2" p line sym missing=0
  make_args=(-C "$kdir" ARCH="$arch" "${toolchain[@]}")
  rm -rf "$out"
  mkdir -p "$out"
  echo "kernel: extracting $source_tar" >&2
  tar -xf "$source_tar" -C "$out"
  mv "$out/linux-source-$kversion" "$kdir"
  for p in "${patches[@]}"; do
    echo "kernel: applying $(basename "$p")" >&2
    patch -d "$kdir" -p1 --forward --quiet <"$p"
  done

  make "${make_args[@]}" -s "$base" >&2
  "$kdir/scripts/kconfig/merge_config.sh" -m -O "$kdir" "$kdir/.config" "${fragments[@]}" >&2
  make "${make_args[@]}" -s olddefconfig >&2

  # Every wanted symbol must have survived olddefconfig (a missing dependency silently drops one).
  while IFS= read -r line; do
    case "$line" in
      CONFIG_*=*)
        grep -qxF "$line" "$kdir/.config" || { echo "kernel: config lost: $line (have: $(grep -E "^(# )?${line%%=*}[= ]" "$kdir/.config" || echo unset))" >&2; missing=1; } ;;
      "# CONFIG_"*" is not set")
        sym="${line#\# }"; sym="${sym%% *}"
        if grep -q "^$sym=" "$kdir/.config"; then echo "kernel: config must be off: $sym" >&2; missing=1; fi ;;
    esac
  done < <(cat "${fragments[@]}")
  [ "$missing" -eq 0 ] || { echo "kernel: config fragment not satisfied, see above" >&2; exit 1; }
  make "${make_args[@]}" rustavailable >&2
}
