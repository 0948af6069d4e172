/*
 * Patch-free mode: the CBS budget pause/resume hooks come from CONFIG_TRACING_USER instead of the
 * kernel patch. The tracing layer calls these on every context switch with _current already set
 * (switched_out before the switch, switched_in after it).
 */
#include <zephyr/kernel.h>
#include <tracing_user.h>

void z_qf_switched_in(struct k_thread *thread);
void z_qf_switched_out(struct k_thread *thread);

void sys_trace_thread_switched_in_user(void)
{
	z_qf_switched_in(_current);
}

void sys_trace_thread_switched_out_user(void)
{
	z_qf_switched_out(_current);
}
