# Builds the qfabric Rust static library with cargo for the board's target and links it into the
# qfabric kernel library. The target triple comes from zephyr-lang-rust's mapping when that module
# is in the build (one mapping for both), else from the same rules below.
#
# Toolchain: QFABRIC_CARGO / QFABRIC_RUSTC (cache variables or environment) choose cargo and rustc;
# when the target's prebuilt `core` is missing from rustc's sysroot the library is built with
# `-Z build-std=core` (RUSTC_BOOTSTRAP=1), which needs the matching rust-src.
#
# Bindings: the crate's build.rs runs bindgen (QFABRIC_BINDGEN, a cache variable or environment;
# default bindgen on PATH or /opt/qfabric/tools/bin) over the module's C headers, with the
# image's include directories, compile definitions and Kconfig macros from a response file
# written here (qfabric-bindgen.args), so it reads them as the image's C compiler does.

# The RV32 target of the core's ISA as the kernel is compiled for it (target_riscv.cmake's
# -march/-mabi), choosing the largest extension set Rust has a bare-metal target for. It
# matters: without M every multiplication is a library call, without C the code is ~30% larger
# (ESP32-C3, the task-based CBS paper's board, is RV32IMC). The ABI must be the kernel's:
# Rust's only hard-float RV32 target is riscv32imafc (ilp32f).
function(qfabric_rv32_target out)
  if(CONFIG_FPU AND CONFIG_FLOAT_HARD)
    if(CONFIG_RISCV_ISA_RV32I AND CONFIG_RISCV_ISA_EXT_M AND CONFIG_RISCV_ISA_EXT_A
       AND CONFIG_RISCV_ISA_EXT_C AND NOT CONFIG_CPU_HAS_FPU_DOUBLE_PRECISION)
      set(${out} riscv32imafc-unknown-none-elf PARENT_SCOPE)
      return()
    endif()
    message(FATAL_ERROR "qfabric: no Rust target has this RISC-V core's hard-float ABI; set "
      "CONFIG_QFABRIC_RUST_TARGET, or CONFIG_FLOAT_SOFT")
  endif()
  if(CONFIG_RISCV_ISA_RV32E)
    set(t riscv32e)
  else()
    set(t riscv32i)
  endif()
  if(CONFIG_RISCV_ISA_EXT_M)
    string(APPEND t m)
    # riscv32ima and riscv32imac exist, riscv32emac does not.
    if(CONFIG_RISCV_ISA_EXT_A AND CONFIG_RISCV_ISA_RV32I)
      string(APPEND t a)
    endif()
    if(CONFIG_RISCV_ISA_EXT_C)
      string(APPEND t c)
    endif()
  endif()
  set(${out} ${t}-unknown-none-elf PARENT_SCOPE)
endfunction()

function(qfabric_rust_target out)
  if(NOT "${CONFIG_QFABRIC_RUST_TARGET}" STREQUAL "")
    set(${out} "${CONFIG_QFABRIC_RUST_TARGET}" PARENT_SCOPE)
    return()
  endif()
  if(CONFIG_RISCV AND NOT CONFIG_64BIT)
    # Ours even beside zephyr-lang-rust, which maps every RV32 core to riscv32i ("TODO: pick
    # the best"): objects of one ABI link together whatever their extensions, as the kernel's
    # own C objects (compiled with all of them) already do with the application's.
    qfabric_rv32_target(t)
    set(${out} ${t} PARENT_SCOPE)
    return()
  endif()
  if(COMMAND _rust_map_target)
    _rust_map_target()
    set(${out} "${RUST_TARGET}" PARENT_SCOPE)
    return()
  endif()
  if(CONFIG_CPU_CORTEX_M33 OR CONFIG_CPU_CORTEX_M55)
    if(CONFIG_FP_HARDABI)
      set(t thumbv8m.main-none-eabihf)
    else()
      set(t thumbv8m.main-none-eabi)
    endif()
  elseif(CONFIG_CPU_CORTEX_M4 OR CONFIG_CPU_CORTEX_M7)
    if(CONFIG_FP_HARDABI)
      set(t thumbv7em-none-eabihf)
    else()
      set(t thumbv7em-none-eabi)
    endif()
  elseif(CONFIG_CPU_CORTEX_M3)
    set(t thumbv7m-none-eabi)
  elseif(CONFIG_CPU_CORTEX_M0 OR CONFIG_CPU_CORTEX_M0PLUS OR CONFIG_CPU_CORTEX_M1)
    set(t thumbv6m-none-eabi)
  elseif(CONFIG_ARCH_POSIX AND CONFIG_64BIT AND CMAKE_HOST_SYSTEM_PROCESSOR MATCHES "x86_64")
    set(t x86_64-unknown-none)
  else()
    message(FATAL_ERROR "qfabric: no Rust target for this board; set CONFIG_QFABRIC_RUST_TARGET")
  endif()
  set(${out} ${t} PARENT_SCOPE)
endfunction()

# The patched kernel declares the qfabric control-block pointer in struct _thread_base; without it
# the build would fail deep inside the kernel, so say what to do instead.
function(qfabric_require_patched_kernel)
  file(STRINGS ${ZEPHYR_BASE}/include/zephyr/kernel/thread.h marker REGEX "qf_control")
  if(NOT marker)
    message(FATAL_ERROR
      "qfabric: CONFIG_QFABRIC_HOOKS_KERNEL_PATCH needs the qfabric kernel patches in "
      "${ZEPHYR_BASE}. Apply them with\n"
      "  west patch -sm qfabric -b kernel-patches/zephyr -l kernel-patches/zephyr/patches.yml apply\n"
      "or choose CONFIG_QFABRIC_HOOKS_TRACING_USER (no patch).")
  endif()
  # The series before sched_hooks.h included kernel_hooks.h in sched.c: the image would fail
  # to link (z_qf_deadline_set_reschedule) with no hint why.
  file(STRINGS ${ZEPHYR_BASE}/kernel/sched.c current REGEX "qfabric/sched_hooks.h")
  if(NOT current)
    message(FATAL_ERROR
      "qfabric: ${ZEPHYR_BASE} carries an older version of the qfabric kernel patches. "
      "Revert it and apply the current one:\n"
      "  west patch -sm qfabric -b kernel-patches/zephyr -l kernel-patches/zephyr/patches.yml clean\n"
      "  west patch -sm qfabric -b kernel-patches/zephyr -l kernel-patches/zephyr/patches.yml apply")
  endif()
endfunction()

function(qfabric_rust_staticlib)
  cmake_parse_arguments(ARG "" "CRATE_DIR;LIBRARY" "" ${ARGN})
  qfabric_rust_target(target)

  if(DEFINED ENV{QFABRIC_CARGO})
    set(QFABRIC_CARGO $ENV{QFABRIC_CARGO} CACHE FILEPATH "cargo for the qfabric staticlib")
  endif()
  if(DEFINED ENV{QFABRIC_RUSTC})
    set(QFABRIC_RUSTC $ENV{QFABRIC_RUSTC} CACHE FILEPATH "rustc for the qfabric staticlib")
  endif()
  find_program(QFABRIC_CARGO cargo REQUIRED)
  find_program(QFABRIC_RUSTC rustc REQUIRED)
  if(DEFINED ENV{QFABRIC_BINDGEN})
    set(QFABRIC_BINDGEN $ENV{QFABRIC_BINDGEN} CACHE FILEPATH "bindgen for the qfabric staticlib")
  endif()
  find_program(QFABRIC_BINDGEN bindgen PATHS /opt/qfabric/tools/bin)
  if(NOT QFABRIC_BINDGEN)
    message(FATAL_ERROR
      "qfabric: bindgen not found; the Rust library's C bindings are generated at build time. "
      "Install it with\n  cargo install --locked bindgen-cli\n(and libclang, e.g. Debian's "
      "libclang-dev), then put it on PATH or set QFABRIC_BINDGEN to its path.")
  endif()

  # One clang argument a line; generator expressions, since the image's include directories and
  # definitions are only complete at generation time (as zephyr-lang-rust reads them).
  set(bindgen_args ${CMAKE_CURRENT_BINARY_DIR}/qfabric-bindgen.args)
  set(includes "$<TARGET_PROPERTY:zephyr_interface,INTERFACE_INCLUDE_DIRECTORIES>")
  set(defines "$<TARGET_PROPERTY:zephyr_interface,INTERFACE_COMPILE_DEFINITIONS>")
  file(GENERATE OUTPUT ${bindgen_args} CONTENT
"-imacros
${AUTOCONF_H}
$<$<BOOL:${includes}>:-I$<JOIN:${includes},\n-I>>
$<$<BOOL:${defines}>:-D$<JOIN:${defines},\n-D>>
")

  execute_process(COMMAND ${QFABRIC_RUSTC} --print sysroot
    OUTPUT_VARIABLE sysroot OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(build_std)
  set(bootstrap)
  if(NOT EXISTS "${sysroot}/lib/rustlib/${target}/lib")
    set(build_std -Z build-std=core)
    set(bootstrap RUSTC_BOOTSTRAP=1)
  endif()

  set(target_dir ${CMAKE_CURRENT_BINARY_DIR}/rust-target)
  set(lib ${target_dir}/${target}/release/libqfabric_zephyr.a)
  set(admission 0)
  if(CONFIG_QFABRIC_ADMISSION)
    set(admission 1)
  endif()
  set(cbs 0)
  if(CONFIG_QFABRIC_CBS)
    set(cbs 1)
  endif()
  set(thread_field 0)
  if(CONFIG_QFABRIC_HOOKS_KERNEL_PATCH)
    set(thread_field 1)
  endif()
  set(chains 0)
  set(features)
  if(CONFIG_QFABRIC_EXECUTOR)
    set(chains ${CONFIG_QFABRIC_EXECUTOR_MAX_CHAINS})
    set(features --features executor)
  endif()
  # Cargo.toml's release profile optimises for size (opt-level "s"); a kernel built with -Oz
  # (CONFIG_SIZE_OPTIMIZATIONS_AGGRESSIVE, e.g. a Cortex-M4 running from 64 KiB of RETRAM) gets
  # the Rust library at opt-level "z" too.
  set(opt_level)
  if(CONFIG_SIZE_OPTIMIZATIONS_AGGRESSIVE)
    set(opt_level CARGO_PROFILE_RELEASE_OPT_LEVEL=z)
  endif()
  # rustc's bare-metal RISC-V targets leave linker relaxation off, which clang and GCC turn on:
  # without it every call stays an auipc+jalr pair and every global an address pair, where the
  # linker would make them one jal and one gp-relative access like the kernel's C. (rustc warns
  # that `relax` is an unstable target feature: it is LLVM's own, the one clang uses.)
  set(rustflags)
  if(target MATCHES "^riscv")
    string(TOUPPER "${target}" triple)
    string(REPLACE "-" "_" triple "${triple}")
    set(rustflags CARGO_TARGET_${triple}_RUSTFLAGS=-Ctarget-feature=+relax)
  endif()
  set(trace_events 0)
  set(trace_switches 0)
  if(CONFIG_QFABRIC_TRACE)
    set(trace_events ${CONFIG_QFABRIC_TRACE_EVENTS})
    if(CONFIG_QFABRIC_TRACE_SWITCHES) # undefined without the CBS (no switch hooks)
      set(trace_switches ${CONFIG_QFABRIC_TRACE_SWITCHES})
    endif()
  endif()

  # Always ask cargo (it knows the Rust sources); the stamp is never created on purpose and the
  # library is a byproduct so that a rebuilt archive relinks the image.
  add_custom_command(
    OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/qfabric-cargo.always
    BYPRODUCTS ${lib}
    COMMAND ${CMAKE_COMMAND} -E env
      RUSTC=${QFABRIC_RUSTC} ${bootstrap} ${opt_level} ${rustflags}
      QFABRIC_MAX_THREADS=${CONFIG_QFABRIC_MAX_THREADS}
      QFABRIC_TRACE_EVENTS=${trace_events}
      QFABRIC_TRACE_SWITCHES=${trace_switches}
      QFABRIC_ADMISSION=${admission}
      QFABRIC_CBS=${cbs}
      QFABRIC_THREAD_FIELD=${thread_field}
      QFABRIC_EXECUTOR_MAX_CHAINS=${chains}
      QFABRIC_BINDGEN=${QFABRIC_BINDGEN}
      QFABRIC_BINDGEN_ARGS=${bindgen_args}
      ${QFABRIC_CARGO} build --release --locked ${features}
        --manifest-path ${ARG_CRATE_DIR}/Cargo.toml
        --target ${target} --target-dir ${target_dir} ${build_std}
    COMMENT "qfabric: cargo build for ${target}"
    USES_TERMINAL
  )
  add_custom_target(qfabric_rust DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/qfabric-cargo.always)
  add_dependencies(${ARG_LIBRARY} qfabric_rust)
  # After the qfabric library on the link line, and kept as one unit with the kernel library
  # (which calls into it) by the linker's group.
  target_link_libraries(${ARG_LIBRARY} PUBLIC ${lib})
  message(STATUS "qfabric: Rust target ${target}${build_std}")
endfunction()
