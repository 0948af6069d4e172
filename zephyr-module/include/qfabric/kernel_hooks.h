/*
 * The calls the patched kernel makes into qfabric (kernel-patches/zephyr). Kept here, not in the
 * patch, so the patch stays a handful of guarded lines. The switch hooks test the thread's
 * control-block pointer inline, so threads without one pay a load, a branch and (switching in)
 * a store. Without CONFIG_QFABRIC_CBS they are empty: only a budget needs them, and the kernel
 * may still instrument switches for something else (e.g. thread runtime statistics).
 */
#ifndef QFABRIC_KERNEL_HOOKS_H_
#define QFABRIC_KERNEL_HOOKS_H_

#include <zephyr/kernel.h>
#include <qfabric/qfabric.h>
/* z_qf_switched_in/out and z_qf_switch_tick_valid (the tick the last switch-out hook read
 * belongs to this switch only).
 */
#include <qfabric/port.h>

/* k_thread_deadline_set() calls qf_thread_deadline_set() (qfabric.h). */

static ALWAYS_INLINE void z_qf_thread_switched_in(struct k_thread *thread)
{
#ifdef CONFIG_QFABRIC_CBS
	if (thread != NULL && thread->base.qf_control != NULL) {
		z_qf_switched_in(thread, (uintptr_t)thread->base.qf_control);
	} else {
		z_qf_switch_tick_valid = false;
	}
#else
	ARG_UNUSED(thread);
#endif
}

static ALWAYS_INLINE void z_qf_thread_switched_out(struct k_thread *thread)
{
#ifdef CONFIG_QFABRIC_CBS
	if (thread != NULL && thread->base.qf_control != NULL) {
		z_qf_switched_out(thread, (uintptr_t)thread->base.qf_control);
	}
#else
	ARG_UNUSED(thread);
#endif
}

#endif /* QFABRIC_KERNEL_HOOKS_H_ */
