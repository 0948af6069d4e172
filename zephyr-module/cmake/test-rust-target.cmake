# Checks the board-to-Rust-target mapping of rust-staticlib.cmake without Zephyr: each case sets
# the Kconfig symbols a board's SoC selects and compares qfabric_rust_target()'s answer.
# Run: cmake -P zephyr-module/cmake/test-rust-target.cmake (tier 60). Exit status 1 on a mismatch.
include(${CMAKE_CURRENT_LIST_DIR}/rust-staticlib.cmake)

set(kconfig_symbols
  CONFIG_QFABRIC_RUST_TARGET CONFIG_CPU_CORTEX_M33 CONFIG_CPU_CORTEX_M4 CONFIG_FP_HARDABI
  CONFIG_RISCV CONFIG_64BIT CONFIG_RISCV_ISA_RV32I CONFIG_RISCV_ISA_RV32E CONFIG_RISCV_ISA_EXT_M
  CONFIG_RISCV_ISA_EXT_A CONFIG_RISCV_ISA_EXT_C CONFIG_FPU CONFIG_FLOAT_HARD
  CONFIG_CPU_HAS_FPU_DOUBLE_PRECISION CONFIG_ARCH_POSIX)
set(failures 0)
# Script mode does not set it; native_sim/native/64 maps by it.
set(CMAKE_HOST_SYSTEM_PROCESSOR x86_64)

# expect_target(TARGET SYMBOL[=VALUE]...): with exactly these symbols set (to y, or VALUE), the
# mapping gives TARGET.
function(expect_target expected)
  foreach(symbol ${kconfig_symbols})
    unset(${symbol})
  endforeach()
  foreach(assignment ${ARGN})
    if(assignment MATCHES "^([A-Z0-9_]+)=(.*)$")
      set(${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
    else()
      set(${assignment} y)
    endif()
  endforeach()
  qfabric_rust_target(actual)
  if(NOT actual STREQUAL expected)
    message(SEND_ERROR "with ${ARGN}: ${actual}, expected ${expected}")
    math(EXPR n "${failures} + 1")
    set(failures ${n} PARENT_SCOPE)
  endif()
endfunction()

set(rv32 CONFIG_RISCV CONFIG_RISCV_ISA_RV32I)
expect_target(thumbv8m.main-none-eabi CONFIG_CPU_CORTEX_M33)
expect_target(thumbv8m.main-none-eabihf CONFIG_CPU_CORTEX_M33 CONFIG_FP_HARDABI)
expect_target(thumbv7em-none-eabi CONFIG_CPU_CORTEX_M4)
# STM32MP157's Cortex-M4F with CONFIG_FPU and the hard-float ABI (the boards' default is soft).
expect_target(thumbv7em-none-eabihf CONFIG_CPU_CORTEX_M4 CONFIG_FP_HARDABI)
# ESP32-C3 (the task-based CBS paper's board): RV32IMC, no atomics.
expect_target(riscv32imc-unknown-none-elf ${rv32} CONFIG_RISCV_ISA_EXT_M CONFIG_RISCV_ISA_EXT_C)
# qemu_riscv32 (virt: M, A, C; F without the hard-float ABI).
expect_target(riscv32imac-unknown-none-elf ${rv32} CONFIG_RISCV_ISA_EXT_M CONFIG_RISCV_ISA_EXT_A
  CONFIG_RISCV_ISA_EXT_C CONFIG_FPU)
expect_target(riscv32imafc-unknown-none-elf ${rv32} CONFIG_RISCV_ISA_EXT_M CONFIG_RISCV_ISA_EXT_A
  CONFIG_RISCV_ISA_EXT_C CONFIG_FPU CONFIG_FLOAT_HARD)
expect_target(riscv32ima-unknown-none-elf ${rv32} CONFIG_RISCV_ISA_EXT_M CONFIG_RISCV_ISA_EXT_A)
expect_target(riscv32im-unknown-none-elf ${rv32} CONFIG_RISCV_ISA_EXT_M)
# No Rust target has C or A without M.
expect_target(riscv32i-unknown-none-elf ${rv32} CONFIG_RISCV_ISA_EXT_A CONFIG_RISCV_ISA_EXT_C)
expect_target(riscv32emc-unknown-none-elf CONFIG_RISCV CONFIG_RISCV_ISA_RV32E
  CONFIG_RISCV_ISA_EXT_M CONFIG_RISCV_ISA_EXT_A CONFIG_RISCV_ISA_EXT_C)
expect_target(x86_64-unknown-none CONFIG_ARCH_POSIX CONFIG_64BIT)

# The Kconfig override beats every mapping.
expect_target(thumbv7m-none-eabi CONFIG_QFABRIC_RUST_TARGET=thumbv7m-none-eabi ${rv32}
  CONFIG_RISCV_ISA_EXT_M CONFIG_RISCV_ISA_EXT_C)

# Beside zephyr-lang-rust, its mapping is used, except for RV32 (it maps every RV32 core to
# riscv32i).
macro(_rust_map_target)
  set(RUST_TARGET zephyr-lang-rust-choice)
endmacro()
expect_target(zephyr-lang-rust-choice CONFIG_CPU_CORTEX_M33)
expect_target(riscv32imac-unknown-none-elf ${rv32} CONFIG_RISCV_ISA_EXT_M CONFIG_RISCV_ISA_EXT_A
  CONFIG_RISCV_ISA_EXT_C)

if(failures GREATER 0)
  message(FATAL_ERROR "test-rust-target: ${failures} case(s) failed")
endif()
message(STATUS "test-rust-target: every case maps as expected")
