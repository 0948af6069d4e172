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
#if defined(CONFIG_SCHED_SIMPLE) && !defined(CONFIG_SMP)
/*
 * dequeue_thread() then queue_thread() for a queued thread whose deadline becomes later (or
 * stays), the only change a budget expiry makes; false, touching nothing, for an earlier one.
 *
 * The simple run queue is sorted, highest first, equals in arrival order, and a later deadline
 * only lowers the thread. So every thread ahead of it stays ahead, and upstream's insertion
 * (z_priq_simple_add from the head, after the thread's removal) would pass them all and stop
 * where a walk on from the thread's own node stops: before the first thread it now outranks,
 * or at the tail. When that is the thread's present place, the list is left alone. No call and
 * no saved registers on the budget expiry (upstream's removal is a call, and RV32 saves
 * registers one by one); the running thread heads the queue, so the walk is the one upstream's
 * insertion makes.
 */
static ALWAYS_INLINE bool qf_runq_postpone(struct k_thread *thread, int deadline)
{
	sys_dnode_t *const end = (sys_dnode_t *)thread_runq(thread); /* the list's own node */
	sys_dnode_t *const node = &thread->base.qnode_dlist;
	const int8_t prio = thread->base.prio;
	sys_dnode_t *before;

	if ((int32_t)((uint32_t)deadline - (uint32_t)thread->base.prio_deadline) < 0) {
		return false;
	}
	thread->base.prio_deadline = deadline;
	/* z_sched_prio_cmp(thread, t) > 0, with the thread's priority and deadline at hand. */
	for (before = node->next; before != end; before = before->next) {
		const struct k_thread *t = CONTAINER_OF(before, struct k_thread, base.qnode_dlist);

		if (t->base.prio != prio) {
			if (t->base.prio > prio) {
				break;
			}
		} else if ((int32_t)((uint32_t)t->base.prio_deadline - (uint32_t)deadline) > 0) {
			break;
		}
	}
	if (before != node->next) {
		/* Before `before`, which is the list's own node for the tail. */
		sys_dlist_dequeue(node);
		sys_dlist_insert(before, node);
	}
	return true;
}
#else
/* The scalable and multi-queue run queues, and SMP's (where _current is not in it), requeue. */
static ALWAYS_INLINE bool qf_runq_postpone(struct k_thread *thread, int deadline)
{
	ARG_UNUSED(thread);
	ARG_UNUSED(deadline);
	return false;
}
#endif /* CONFIG_SCHED_SIMPLE && !CONFIG_SMP */

/* The general case, as upstream's setter does it: requeue around the change. Out of line, so
 * that the budget expiry's case (above) makes no call and saves no registers.
 */
static __noinline void qf_deadline_requeue(struct k_thread *thread, int deadline)
{
	if (z_is_thread_queued(thread)) {
		dequeue_thread(thread);
		thread->base.prio_deadline = deadline;
		queue_thread(thread);
	} else {
		thread->base.prio_deadline = deadline;
	}
	update_cache(0);
}

/*
 * k_thread_absolute_deadline_set() then k_reschedule(), as v4.3.0 writes them, for the budget
 * timer's expiry (B_ROUT): it postpones the running thread's deadline and must let an earlier
 * one preempt it when the interrupt returns. The two calls take and release the scheduler lock
 * twice and pass through two more functions; here the postponement moves the thread on from
 * its place (qf_runq_postpone), and only another change requeues it as upstream does.
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

	/* The deadline orders the run queue. */
	if (z_is_thread_queued(thread) && qf_runq_postpone(thread, deadline)) {
		update_cache(0);
	} else {
		qf_deadline_requeue(thread, deadline);
	}

#if defined(CONFIG_SMP) || defined(CONFIG_SPIN_VALIDATE)
	z_reschedule(&_sched_spinlock, key);
#endif
}
#endif /* CONFIG_SCHED_DEADLINE */

#endif /* QFABRIC_SCHED_HOOKS_H_ */
