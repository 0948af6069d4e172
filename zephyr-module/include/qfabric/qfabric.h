/*
 * qfabric public C API: periodic EDF and a private CBS per thread, run by the Rust qf-sched core.
 *
 * With CONFIG_QFABRIC_HOOKS_KERNEL_PATCH the same operations are also the kernel syscalls
 * k_thread_deadline_set(), k_thread_period_set(), k_thread_deadline_miss_callback_set() and
 * k_thread_cbs_budget_set(); these qf_* functions work in both hook modes (supervisor only).
 *
 * Units: every duration is in hardware cycles, like k_thread_deadline_set() (convert with
 * k_ms_to_cyc_ceil32() and friends). Internally qfabric counts kernel ticks, so a duration is
 * rounded up to whole ticks.
 *
 * Errors are negative errno values: -EINVAL (bad argument, or deadline_set on another thread
 * that has a control block), -ENOMEM (control-block pool full), -ENOSPC (admission control
 * refused the bandwidth; nothing changed), -ETIMEDOUT (the previous cycle overran its period:
 * the new cycle has started anyway), -ENOTSUP (a CBS budget in a kernel built without
 * CONFIG_QFABRIC_CBS).
 */
#ifndef QFABRIC_QFABRIC_H_
#define QFABRIC_QFABRIC_H_

#include <zephyr/kernel.h>
/* The declarations, free of Zephyr's headers so that bindgen reads them outside a Zephyr build
 * too; k_tid_t is their `struct k_thread *`.
 */
#include <qfabric/api.h>

#endif /* QFABRIC_QFABRIC_H_ */
