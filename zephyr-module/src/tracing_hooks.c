/*
 * Patch-free mode: the CBS budget pause/resume hooks come from CONFIG_TRACING_USER instead of the
 * kernel patch. The tracing layer calls these on every context switch with _current already set
 * (switched_out before the switch, switched_in after it).
 */
#include <zephyr/kernel.h>
#include <tracing_user.h>

#include <qfabric/port.h>

void sys_trace_thread_switched_in_user(void)
{
	z_qf_switched_in(_current, 0); /* no control word here: the pool is searched */
}

void sys_trace_thread_switched_out_user(void)
{
	z_qf_switched_out(_current, 0);
}
