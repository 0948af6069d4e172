/*
 * The paper's own hook work, measured by the same counter as qfabric's hooks
 * (CONFIG_CBS_PAPER_BASELINE, used by `scripts/zephyr-check overhead`).
 *
 * The paper's Table 1 is not in CPU cycles of any core we have: its authors' published kernel
 * (alexpaschoaletto/zephyr, kernel/deadline.c and include/zephyr/kernel/
 * deadline_tracer_overhead.h) times each hook with k_cycle_get_64(), which on the ESP32-C3 is the
 * 16 MHz systimer, a tenth of the 160 MHz CPU clock. So the only like-for-like comparison is to
 * run the same kernel operations on our core and count them the same way as ours. These
 * functions do exactly the kernel calls the paper's hooks make, in the same order, on a budget
 * timer and the running thread, around every job of every task while the test case runs, so the
 * timeout queue and run queue are the ones the real hooks see:
 *
 *   z_cbs_switched_in     k_timer_start(budget, current budget, K_NO_WAIT); k_uptime_ticks()
 *   z_cbs_switched_out    k_timer_stop(budget); budget -= k_uptime_ticks() - start
 *   z_cbs_timer_callback  k_uptime_ticks(); k_timer_start(budget, max budget, K_FOREVER);
 *                         set the thread's deadline; k_reschedule()
 *
 * Each runs in the context the paper's runs in, because the kernel's timeout code does not do
 * the same work everywhere: the switch hooks under a lock outside the timeout processing (as in
 * a context switch), the budget callback from a timer expiry inside sys_clock_announce(), where
 * adding a timeout neither reads nor reprograms the hardware timer. (Called from the thread, as
 * it once was, the callback counted ~100 instructions of timer reprogramming the paper's never
 * pays, which flattered qfabric's B_ROUT ratio.) The expiry is armed at a job's start for the
 * next tick and only counted when it interrupts the thread that armed it, whose deadline and
 * run-queue position are then those of a real budget exhaustion.
 *
 * The switch hooks' work depends on the timeout queue they find (whether the budget timer
 * becomes its head, so the hardware timer is reprogrammed), and real switches happen both where
 * a job ends and where the next starts. So they run at both points, once each per job: alone,
 * the end gave SWT_TO and SWT_AY averages of 275 and 192 instructions, the start 238 and 143
 * (case 2, 1 ms, mps2/an521).
 *
 * Left out, so the baseline is if anything cheaper than the paper's hooks: the trace_cbs() call
 * its timer callback makes, and the deadline-miss timer (the paper's test tasks have no
 * callback).
 *
 * The callback postpones the thread's deadline by one server period, as the paper's does (CBS:
 * d = d + T), so the run-queue re-insertion walks past every ready thread whose deadline is
 * now earlier, and k_reschedule() may pick another thread: the work of a real budget
 * exhaustion, and what qfabric's B_ROUT pays. (Until this was changed the baseline set the
 * deadline one cycle earlier instead, keeping the thread first in the queue: the cheapest
 * re-insertion there is, which flattered the paper's B_ROUT.) No switch happens inside the
 * call: it runs in the timer interrupt, where k_reschedule() only updates the scheduler's
 * cache. The deadline and the cache are put back afterwards, outside the measured call, so the
 * test case's schedule does not change.
 */
#include <zephyr/kernel.h>

#include "paper_baseline.h"

static void budget_expired(struct k_timer *timer)
{
	/* Never reached in practice: every start is followed by a stop within one job. */
	ARG_UNUSED(timer);
}

static K_TIMER_DEFINE(budget_timer, budget_expired, NULL);
static int64_t current_budget;
static int64_t start_tick;

/* Not inlined, and named, so qemu-overhead.py can count each call like a qfabric hook. */
__noinline void paper_baseline_switched_in(void)
{
	k_timer_start(&budget_timer, K_TICKS(current_budget), K_NO_WAIT);
	start_tick = k_uptime_ticks();
}

__noinline void paper_baseline_switched_out(void)
{
	k_timer_stop(&budget_timer);
	current_budget -= k_uptime_ticks() - start_tick;
	start_tick = 0;
}

__noinline void paper_baseline_budget_expired(int64_t max_budget, int period_cycles)
{
	int64_t now = k_uptime_ticks();
	struct k_thread *thread = k_current_get();

	start_tick = now;
	current_budget = max_budget;
	k_timer_start(&budget_timer, K_TICKS(max_budget), K_FOREVER);
	z_impl_k_thread_absolute_deadline_set(thread, thread->base.prio_deadline + period_cycles);
	k_reschedule();
}

/* The thread whose job start armed the expiry, its budget and server period. */
static struct k_thread *expiry_thread;
static int64_t expiry_budget;
static int expiry_period_cycles;

/* A timer expiry (sys_clock_announce, interrupt context), like the paper's budget callback. */
static void expiry_fired(struct k_timer *timer)
{
	struct k_thread *thread = k_current_get();
	int deadline;

	ARG_UNUSED(timer);
	if (thread != expiry_thread) {
		return; /* another thread runs: its queue position differs, so no sample */
	}
	deadline = thread->base.prio_deadline;
	paper_baseline_budget_expired(expiry_budget, expiry_period_cycles);
	k_timer_stop(&budget_timer);
	z_impl_k_thread_absolute_deadline_set(thread, deadline);
	k_reschedule(); /* the cache again names this thread, first again */
}

static K_TIMER_DEFINE(expiry_timer, expiry_fired, NULL);

void paper_baseline_job_end(int64_t budget_ticks)
{
	unsigned int key;

	/* The paper's switch hooks run with interrupts locked (context switch). */
	current_budget = budget_ticks;
	key = irq_lock();
	paper_baseline_switched_in();
	irq_unlock(key);
	key = irq_lock();
	paper_baseline_switched_out();
	irq_unlock(key);
}

void paper_baseline_job_start(int64_t budget_ticks, int period_cycles)
{
	paper_baseline_job_end(budget_ticks); /* the same switch hooks */
	expiry_thread = k_current_get();
	expiry_budget = budget_ticks;
	expiry_period_cycles = period_cycles;
	k_timer_start(&expiry_timer, K_NO_WAIT, K_NO_WAIT); /* the next tick */
}
