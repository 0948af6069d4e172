/*
 * The boundary between the MCU executor's C port (src/executor_port.c) and its Rust side
 * (src/executor.rs, src/chains.rs), not an application API; like port.h it needs no Zephyr
 * header, so zephyr-module/build.rs runs bindgen over it anywhere and executor_port.c's
 * definitions are checked against it.
 */
#ifndef QFABRIC_EXECUTOR_PORT_H_
#define QFABRIC_EXECUTOR_PORT_H_

#include <stddef.h>
#include <stdint.h>

struct k_thread;
struct qf_chain_config;

/* Kernel services for the executor (src/executor_port.c; Rust wrappers in executor_port.rs). */
int qf_executor_port_lock(void);
void qf_executor_port_unlock(void);
uint64_t qf_executor_port_now_ns(void);
int qf_executor_port_send(const uint8_t *frame, size_t len);
struct k_thread *qf_executor_port_chain_create(uint16_t slot, int priority);
void qf_executor_port_chain_start(struct k_thread *thread);
void qf_executor_port_chain_started(uint16_t slot);
void qf_executor_port_chain_wait_started(uint16_t slot);
void qf_executor_port_chain_abort(struct k_thread *thread);
int qf_executor_port_chain_join(struct k_thread *thread, uint32_t cycles);
void qf_executor_port_chain_wake(struct k_thread *thread);
void qf_executor_port_sleep_us(uint32_t us);
uint64_t qf_executor_port_tick_ns(void);
uint64_t qf_executor_port_us_to_cycles(uint32_t us);
uint32_t qf_executor_port_cycles_to_us(uint32_t cycles);
int qf_executor_port_chain_priority(void);

/* Implemented in Rust (src/chains.rs): the body of chain thread @p slot. */
void qf_rs_chain_main(uint16_t slot);
/*
 * Implemented in Rust (src/chains.rs): qf_chain_start()'s install and start, which
 * executor_port.c runs on the chain control thread's stack.
 */
int qf_rs_chain_start(const struct qf_chain_config *config);

#endif /* QFABRIC_EXECUTOR_PORT_H_ */
