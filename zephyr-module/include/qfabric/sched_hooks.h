/*
 * The part of qfabric compiled inside the kernel's scheduler: the patched kernel/sched.c
 * (kernel-patches/zephyr, patch 2) includes this header, and nothing else may, because it
 * defines a function that uses sched.c's own static run-queue helpers. It also brings what
 * sched.c calls into qfabric (qf_thread_deadline_set(), via kernel_hooks.h).
 */
#ifndef QFABRIC_SCHED_HOOKS_H_
#define QFABRIC_SCHED_HOOKS_H_

#include <qfabric/kernel_hooks.h>

#ifdef CONFIG_SCHED_DEADLINE
/*
 * k_thread_absolute_deadline_set() then k_reschedule(), as v4.3.0 writes them, under one hold of
 * the scheduler lock. The budget timer's expiry (B_ROUT) postpones the running thread's deadline
 * and must let an earlier one preempt it when the interrupt returns; the two calls take and
 * release the lock twice and pass through two more functions (12 of B_ROUT's ~270 instructions
 * on the Cortex-M33).
 */
void z_qf_deadline_set_reschedule(struct k_thread *thread, int deadline)
{
	k_spinlock_key_t key = k_spin_lock(&_sched_spinlock);

	/* The deadline orders the run queue: requeue around the change (see upstream's setter). */
	if (z_is_thread_queued(thread)) {
		dequeue_thread(thread);
		thread->base.prio_deadline = deadline;
		queue_thread(thread);
	} else {
		thread->base.prio_deadline = deadline;
	}
	update_cache(0);
	z_reschedule(&_sched_spinlock, key);
}
#endif /* CONFIG_SCHED_DEADLINE */

#endif /* QFABRIC_SCHED_HOOKS_H_ */
