savedcmd_/work/wt/kernel/linux-driver/qfabric_rproc.o := RUST_MODFILE=/work/wt/kernel/linux-driver/qfabric_rproc /usr/bin/rustc --edition=2021 -Zbinary_dep_depinfo=y -Astable_features -Aunused_features -Dnon_ascii_idents -Dunsafe_op_in_unsafe_fn -Wmissing_docs -Wrust_2018_idioms -Wunreachable_pub -Wclippy::all -Aclippy::collapsible_if -Aclippy::collapsible_match -Wclippy::ignored_unit_patterns -Wclippy::mut_mut -Wclippy::needless_bitwise_bool -Aclippy::needless_lifetimes -Wclippy::no_mangle_with_rust_abi -Wclippy::undocumented_unsafe_blocks -Aclippy::uninlined_format_args -Wclippy::unnecessary_safety_comment -Wclippy::unnecessary_safety_doc -Wrustdoc::missing_crate_level_docs -Wrustdoc::unescaped_backticks -Cpanic=abort -Cembed-bitcode=n -Clto=n -Cforce-unwind-tables=n -Ccodegen-units=1 -Csymbol-mangling-version=v0 -Crelocation-model=static -Zfunction-sections=n -Wclippy::float_arithmetic --target=./scripts/target.json -Ctarget-feature=-sse,-sse2,-sse3,-ssse3,-sse4.1,-sse4.2,-avx,-avx2 -Ztune-cpu=generic -Cno-redzone=y -Ccode-model=kernel -Copt-level=s -Cdebug-assertions=n -Coverflow-checks=y  --cfg MODULE  @./include/generated/rustc_cfg -Zallow-features=arbitrary_self_types,lint_reasons,used_with_arg -Zcrate-attr=no_std -Zcrate-attr='feature(arbitrary_self_types,lint_reasons,used_with_arg)' -Zunstable-options --extern kernel --crate-type rlib -L ./rust/ --crate-name qfabric_rproc --sysroot=/dev/null --out-dir /work/wt/kernel/linux-driver/ --emit=dep-info=/work/wt/kernel/linux-driver/.qfabric_rproc.o.d --emit=obj=/work/wt/kernel/linux-driver/qfabric_rproc.o /work/wt/kernel/linux-driver/qfabric_rproc.rs  ; ./tools/objtool/objtool --hacks=jump_label --hacks=noinstr --static-call --uaccess   --module /work/wt/kernel/linux-driver/qfabric_rproc.o

source_/work/wt/kernel/linux-driver/qfabric_rproc.o := /work/wt/kernel/linux-driver/qfabric_rproc.rs

deps_/work/wt/kernel/linux-driver/qfabric_rproc.o := \
  /work/wt/kernel/linux-driver/qfabric/mod.rs \
  /work/wt/kernel/linux-driver/qfabric/board.rs \
  /work/wt/kernel/linux-driver/qfabric/irq.rs \
  /work/wt/kernel/linux-driver/qfabric/kthread.rs \
  /work/wt/kernel/linux-driver/qfabric/pci.rs \
  /work/wt/kernel/linux-driver/qfabric/rproc.rs \
  /work/wt/kernel/linux-driver/qfabric/shm.rs \
  ./rust/libcore.rmeta \
  ./rust/libkernel.rmeta \
  ./rust/libffi.rmeta \
  ./rust/libcompiler_builtins.rmeta \
  ./rust/libmacros.so \
  ./rust/libbindings.rmeta \
  ./rust/libuapi.rmeta \
  ./rust/libbuild_error.rmeta \

/work/wt/kernel/linux-driver/qfabric_rproc.o: $(deps_/work/wt/kernel/linux-driver/qfabric_rproc.o)

$(deps_/work/wt/kernel/linux-driver/qfabric_rproc.o):

/work/wt/kernel/linux-driver/qfabric_rproc.o: $(wildcard ./tools/objtool/objtool)
