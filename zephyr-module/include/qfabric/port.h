/*
 * The boundary between the C port (src/port.c) and the Rust scheduler (the src/ .rs files), not an
 * application API: the kernel services port.c wraps for Rust, and the Rust entry points that
 * port.c, the kernel patch (kernel_hooks.h) and the tracing hooks call. port.c includes it, so
 * the C compiler checks the definitions against it; zephyr-module/build.rs runs bindgen over it,
 * so Rust calls exactly these signatures. Hence only <stdbool.h>, <stddef.h>, <stdint.h> and
 * forward-declared structs here: it parses without Zephyr's headers (CI, host tests).
 */
#ifndef QFABRIC_PORT_H_
#define QFABRIC_PORT_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <qfabric/api.h>

struct k_thread;

/* errno values as this image's libc numbers them (glibc on native_sim differs from newlib). */
extern const int qf_errno_einval;
extern const int qf_errno_enomem;
extern const int qf_errno_ebusy;
extern const int qf_errno_enospc;
extern const int qf_errno_etimedout;
extern const int qf_errno_enotsup;

/*
 * Set by the switch-out hook of a thread with a control block and cleared by the next switch-in
 * (of any thread): while set, the tick that hook read is the time of the context switch in
 * progress (see port.c and api.rs).
 */
extern bool z_qf_switch_tick_valid;

/* Set by a timer expiry (under the lock) that found a deadline miss with a C callback, cleared
 * by port.c's expiry, which then runs it through qf_rs_miss_report() with the lock released.
 */
extern bool qf_expiry_miss_due;

/* Kernel services for the Rust scheduler (src/port.c; the Rust wrappers are in port.rs). */
uint32_t qf_port_lock(void);
void qf_port_unlock(uint32_t key);
uint64_t qf_port_now(void);
uint64_t qf_port_cycles_to_ticks(uint32_t cycles);
struct k_thread *qf_port_current(void);
void qf_port_timer_arm(uint16_t slot, uint64_t at);
void qf_port_timer_cancel(uint16_t slot);
void qf_port_slot_release(uint16_t slot);
void qf_port_deadline_set(struct k_thread *thread, uint64_t at);
void qf_port_deadline_set_reschedule(struct k_thread *thread, uint64_t at);
void qf_port_deadline_set_relative(struct k_thread *thread, int deadline);
void qf_port_sleep_until(uint64_t at);
void qf_port_throttle(uint16_t slot, struct k_thread *thread, uint64_t until);
void qf_port_reschedule(void);
void qf_port_miss_callback(qf_deadline_miss_cb_t cb, struct k_thread *thread, void *arg);
void qf_port_print(const char *text, size_t len);
_Noreturn void qf_port_panic(const char *text, size_t len);
/* CONFIG_QFABRIC_HOOKS_KERNEL_PATCH only: thread->base.qf_control. */
uintptr_t qf_port_thread_control_get(const struct k_thread *thread);
void qf_port_thread_control_set(struct k_thread *thread, uintptr_t control);

/* Implemented in Rust (src/state.rs, src/api.rs). */
void qf_rs_init(void);
/*
 * A slot's timer fired (port.c's expiry, which holds the qfabric lock across the call): they
 * return the tick to arm the slot's timer for again, 0 for none, and set qf_expiry_miss_due
 * when a deadline-miss callback is to run once the lock is released (qf_rs_miss_report).
 */
uint64_t qf_rs_timer_expired(uint16_t slot, uint64_t now);
uint64_t qf_rs_timer_reaimed(uint16_t slot, uint64_t now);
void qf_rs_miss_report(void);
void qf_rs_thread_exit(struct k_thread *thread);
/*
 * The context-switch hooks: from the kernel patch (kernel_hooks.h) or CONFIG_TRACING_USER.
 * `control` is the thread's control word (thread->base.qf_control: its pool slot + 1) as the
 * patched kernel's hook has just read it, or 0 from a caller without one (the tracing hooks):
 * then the pool is searched.
 */
void z_qf_switched_in(struct k_thread *thread, uintptr_t control);
void z_qf_switched_out(struct k_thread *thread, uintptr_t control);

/* CONFIG_QFABRIC_HOOKS_KERNEL_PATCH only: compiled in the patched kernel/sched.c (sched_hooks.h).
 * Call with the qfabric lock held.
 */
void z_qf_deadline_set_reschedule(struct k_thread *thread, int deadline);

#endif /* QFABRIC_PORT_H_ */
