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
 * k_thread_absolute_deadline_set() then k_reschedule(), as v4.3.0 writes them, for the budget
 * timer's expiry (B_ROUT): it postpones the running thread's deadline and must let an earlier
 * one preempt it when the interrupt returns. The two calls take and release the scheduler lock
 * twice and pass through two more functions (12 of B_ROUT's ~270 instructions on the
 * Cortex-M33).
 *
 * The caller holds qfabric's own spinlock (port.c), so interrupts are locked. On a uniprocessor
 * without spinlock validation a spinlock is nothing but that interrupt lock, so taking the
 * scheduler lock would change nothing, and z_reschedule() could not swap under a locked key: it
 * would only release the lock. The new decision (update_cache) takes effect when the timer
 * interrupt returns, as after any timeout callback. With SMP (another CPU may hold the scheduler
 * lock) or CONFIG_SPIN_VALIDATE (which checks every scheduler-lock holder) the lock is taken
 * and released as upstream does.
 */
void z_qf_deadline_set_reschedule(struct k_thread *thread, int deadline)
{
#if defined(CONFIG_SMP) || defined(CONFIG_SPIN_VALIDATE)
	k_spinlock_key_t key = k_spin_lock(&_sched_spinlock);
#endif

	/* The deadline orders the run queue: requeue around the change (see upstream's setter). */
	if (z_is_thread_queued(thread)) {
		dequeue_thread(thread);
		thread->base.prio_deadline = deadline;
		queue_thread(thread);
	} else {
		thread->base.prio_deadline = deadline;
	}
	update_cache(0);

#if defined(CONFIG_SMP) || defined(CONFIG_SPIN_VALIDATE)
	z_reschedule(&_sched_spinlock, key);
#endif
}
#endif /* CONFIG_SCHED_DEADLINE */

#endif /* QFABRIC_SCHED_HOOKS_H_ */
