# Builds the qfabric Rust static library with cargo for the board's target and links it into the
# qfabric kernel library. The target triple comes from zephyr-lang-rust's mapping when that module
# is in the build (one mapping for both), else from the same rules below.
#
# Toolchain: found by qfabric_find_rust() below (QFABRIC_RUSTC / QFABRIC_CARGO, cache variables
# or environment, pin it); when the target's prebuilt `core` is missing from rustc's sysroot the
# library is built with `-Z build-std=core` (RUSTC_BOOTSTRAP=1) from the matching rust-src.
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

# One line at configure time saying what the image gets: the hook mode and the features.
function(qfabric_report_features)
  if(CONFIG_QFABRIC_HOOKS_KERNEL_PATCH)
    set(hooks kernel-patch)
  else()
    set(hooks tracing-user)
  endif()
  set(features)
  foreach(pair "EDF;periodic EDF" "CBS;CBS" "ADMISSION;admission" "TRACE;trace"
               "EXECUTOR;executor" "EXECUTOR_RPMSG;rpmsg")
    list(GET pair 0 symbol)
    list(GET pair 1 name)
    if(CONFIG_QFABRIC_${symbol})
      list(APPEND features "${name} on")
    else()
      list(APPEND features "${name} off")
    endif()
  endforeach()
  list(JOIN features ", " features)
  message(STATUS "qfabric: hooks ${hooks}, ${features}, "
    "${CONFIG_QFABRIC_MAX_THREADS} control blocks")
endfunction()

# A Rust toolchain that can build the staticlib for `target`, the way Zephyr looks for its C
# toolchain: one whose sysroot has the target's prebuilt `core` (rustup target add), or the
# rust-src to build it with -Z build-std=core (Debian's rust-web-src, rustup component add
# rust-src). QFABRIC_RUSTC (cache variable or environment) names the only candidate; else rustc
# on PATH, then Debian's /usr/bin/rustc, then rustup's ~/.cargo/bin/rustc. cargo is
# QFABRIC_CARGO, else the one beside the chosen rustc, else cargo on PATH. Sets
# QFABRIC_RUSTC_FOUND, QFABRIC_CARGO_FOUND and QFABRIC_BUILD_STD (empty or -Z build-std=core)
# in the caller; stops the configuration with what to install or set when none can.
function(qfabric_find_rust target)
  if(DEFINED ENV{QFABRIC_RUSTC} AND NOT QFABRIC_RUSTC)
    set(QFABRIC_RUSTC $ENV{QFABRIC_RUSTC} CACHE FILEPATH "rustc for the qfabric staticlib")
  endif()
  if(DEFINED ENV{QFABRIC_CARGO} AND NOT QFABRIC_CARGO)
    set(QFABRIC_CARGO $ENV{QFABRIC_CARGO} CACHE FILEPATH "cargo for the qfabric staticlib")
  endif()
  if(QFABRIC_RUSTC)
    set(candidates ${QFABRIC_RUSTC})
  else()
    find_program(path_rustc rustc NO_CACHE)
    set(candidates ${path_rustc} /usr/bin/rustc $ENV{HOME}/.cargo/bin/rustc)
    list(REMOVE_DUPLICATES candidates)
  endif()
  set(tried)
  foreach(rustc ${candidates})
    if(NOT EXISTS ${rustc})
      continue()
    endif()
    execute_process(COMMAND ${rustc} --print sysroot RESULT_VARIABLE rc
      OUTPUT_VARIABLE sysroot ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
    execute_process(COMMAND ${rustc} --version
      OUTPUT_VARIABLE version ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT rc EQUAL 0)
      list(APPEND tried "  ${rustc}: does not run")
      continue()
    endif()
    if(EXISTS "${sysroot}/lib/rustlib/${target}/lib")
      set(build_std)
    elseif(EXISTS "${sysroot}/lib/rustlib/src/rust/library/Cargo.lock")
      set(build_std -Z build-std=core)
    else()
      list(APPEND tried "  ${rustc} (${version}): no prebuilt core for ${target} and no rust-src")
      continue()
    endif()
    if(QFABRIC_CARGO)
      set(cargo ${QFABRIC_CARGO})
    else()
      get_filename_component(dir ${rustc} DIRECTORY)
      if(EXISTS ${dir}/cargo)
        set(cargo ${dir}/cargo)
      else()
        find_program(cargo cargo NO_CACHE)
      endif()
    endif()
    if(NOT cargo OR NOT EXISTS ${cargo})
      list(APPEND tried "  ${rustc} (${version}): no cargo beside it or on PATH")
      continue()
    endif()
    set(QFABRIC_RUSTC_FOUND ${rustc} PARENT_SCOPE)
    set(QFABRIC_CARGO_FOUND ${cargo} PARENT_SCOPE)
    set(QFABRIC_BUILD_STD "${build_std}" PARENT_SCOPE)
    string(JOIN " " how ${build_std})
    if(NOT how)
      set(how "its prebuilt core")
    endif()
    message(STATUS "qfabric: Rust ${version} (${rustc}, ${cargo}) for ${target}, ${how}")
    return()
  endforeach()
  if(NOT tried)
    set(tried "  no rustc found (looked for ${candidates})")
  endif()
  list(JOIN tried "\n" tried)
  message(FATAL_ERROR "qfabric: no Rust toolchain here can build the staticlib for ${target}:\n"
    "${tried}\n"
    "It needs a rustc whose sysroot has ${target}'s core or the Rust sources to build it:\n"
    "  rustup target add ${target}            (rustup's prebuilt core), or\n"
    "  rustup component add rust-src           (built with -Z build-std=core), or\n"
    "  apt-get install rustc-web cargo-web rust-web-src   (Debian 12's Rust 1.96)\n"
    "then build again, or point at one with -DQFABRIC_RUSTC=/path/to/rustc "
    "-DQFABRIC_CARGO=/path/to/cargo (or those environment variables).")
endfunction()

# The patched kernel declares the qfabric control-block pointer in struct _thread_base; without it
# the build would fail deep inside the kernel, so say what to do instead.
function(qfabric_require_patched_kernel)
  get_filename_component(patches ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../../kernel-patches/zephyr
    ABSOLUTE)
  file(STRINGS ${ZEPHYR_BASE}/include/zephyr/kernel/thread.h marker REGEX "qf_control")
  if(NOT marker)
    message(FATAL_ERROR
      "qfabric: CONFIG_QFABRIC_HOOKS_KERNEL_PATCH needs the qfabric kernel patches in "
      "${ZEPHYR_BASE}. Apply them with\n"
      "  west patch -b ${patches} -l ${patches}/patches.yml apply\n"
      "or choose CONFIG_QFABRIC_HOOKS_TRACING_USER (no patch).")
  endif()
  # The series before sched_hooks.h included kernel_hooks.h in sched.c: the image would fail
  # to link (z_qf_deadline_set_reschedule) with no hint why.
  file(STRINGS ${ZEPHYR_BASE}/kernel/sched.c current REGEX "qfabric/sched_hooks.h")
  if(NOT current)
    message(FATAL_ERROR
      "qfabric: ${ZEPHYR_BASE} carries an older version of the qfabric kernel patches. "
      "Revert it and apply the current one:\n"
      "  west patch -b ${patches} -l ${patches}/patches.yml clean\n"
      "  west patch -b ${patches} -l ${patches}/patches.yml apply")
  endif()
endfunction()

function(qfabric_rust_staticlib)
  cmake_parse_arguments(ARG "" "CRATE_DIR;LIBRARY" "" ${ARGN})
  qfabric_rust_target(target)

  qfabric_find_rust(${target})
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

  set(build_std ${QFABRIC_BUILD_STD})
  set(bootstrap)
  if(build_std)
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
      RUSTC=${QFABRIC_RUSTC_FOUND} ${bootstrap} ${opt_level} ${rustflags}
      QFABRIC_MAX_THREADS=${CONFIG_QFABRIC_MAX_THREADS}
      QFABRIC_TRACE_EVENTS=${trace_events}
      QFABRIC_TRACE_SWITCHES=${trace_switches}
      QFABRIC_ADMISSION=${admission}
      QFABRIC_CBS=${cbs}
      QFABRIC_THREAD_FIELD=${thread_field}
      QFABRIC_EXECUTOR_MAX_CHAINS=${chains}
      QFABRIC_BINDGEN=${QFABRIC_BINDGEN}
      QFABRIC_BINDGEN_ARGS=${bindgen_args}
      ${QFABRIC_CARGO_FOUND} build --release --locked ${features}
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
endfunction()
