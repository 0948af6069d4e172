/*
 * The qfabric syscalls the patched kernel declares in <zephyr/kernel.h>: implementation
 * (forwarding to the qf_* API in Rust) and, with CONFIG_USERSPACE, verification.
 */
#include <zephyr/kernel.h>
#include <zephyr/internal/syscall_handler.h>

#include <qfabric/qfabric.h>

int z_impl_k_thread_period_set(k_tid_t thread, int period)
{
	return qf_thread_period_set(thread, period);
}

int z_impl_k_thread_deadline_miss_callback_set(k_tid_t thread, k_thread_deadline_miss_cb_t cb,
					       void *arg)
{
	return qf_thread_deadline_miss_callback_set(thread, cb, arg);
}

int z_impl_k_thread_cbs_budget_set(k_tid_t thread, int budget)
{
	return qf_thread_cbs_budget_set(thread, budget);
}

#ifdef CONFIG_USERSPACE
static inline int z_vrfy_k_thread_period_set(k_tid_t thread, int period)
{
	K_OOPS(K_SYSCALL_OBJ(thread, K_OBJ_THREAD));
	K_OOPS(K_SYSCALL_VERIFY_MSG(period >= 0, "invalid thread period %d", period));
	return z_impl_k_thread_period_set(thread, period);
}
#include <zephyr/syscalls/k_thread_period_set_mrsh.c>

static inline int z_vrfy_k_thread_deadline_miss_callback_set(k_tid_t thread,
							     k_thread_deadline_miss_cb_t cb,
							     void *arg)
{
	K_OOPS(K_SYSCALL_OBJ(thread, K_OBJ_THREAD));
	/* The callback runs in timer interrupt context: a user thread may only clear it. */
	K_OOPS(K_SYSCALL_VERIFY_MSG(cb == NULL,
				    "deadline-miss callbacks run in supervisor mode"));
	return z_impl_k_thread_deadline_miss_callback_set(thread, cb, arg);
}
#include <zephyr/syscalls/k_thread_deadline_miss_callback_set_mrsh.c>

static inline int z_vrfy_k_thread_cbs_budget_set(k_tid_t thread, int budget)
{
	K_OOPS(K_SYSCALL_OBJ(thread, K_OBJ_THREAD));
	K_OOPS(K_SYSCALL_VERIFY_MSG(budget >= 0, "invalid CBS budget %d", budget));
	return z_impl_k_thread_cbs_budget_set(thread, budget);
}
#include <zephyr/syscalls/k_thread_cbs_budget_set_mrsh.c>
#endif /* CONFIG_USERSPACE */
