/*
 * The kernel services the Rust scheduler core (the .rs files beside this one) uses, as plain C functions over Zephyr's
 * API: many of those are static inlines, macros or kernel-internal, so they are compiled here
 * with the kernel's own flags rather than re-declared in Rust. include/qfabric/port.h declares
 * them (checked here by the compiler), and bindgen turns that header into Rust (see build.rs).
 *
 * Timers are bare kernel timeouts (struct _timeout), not k_timer: they are armed and cancelled
 * from the context-switch hooks and from thread-abort handling, where only the timeout lock may
 * be taken, never the scheduler lock.
 */
#include <zephyr/init.h>
#include <zephyr/kernel.h>
#include <zephyr/sys/printk.h>
#include <timeout_q.h>

#include <qfabric/port.h>
#include <qfabric/qfabric.h>

/* errno values as this image's libc numbers them (glibc on native_sim differs from newlib). */
const int qf_errno_einval = EINVAL;
const int qf_errno_enomem = ENOMEM;
const int qf_errno_ebusy = EBUSY;
const int qf_errno_enospc = ENOSPC;
const int qf_errno_etimedout = ETIMEDOUT;
const int qf_errno_enotsup = ENOTSUP;

static struct k_spinlock qf_lock;

/*
 * Set by the switch-out hook of a thread with a control block and cleared by the next switch-in
 * (of any thread): while set, the tick that hook read is the time of the context switch in
 * progress, and the switch-in hook uses it instead of reading the clock again (api.rs).
 */
bool z_qf_switch_tick_valid;

bool qf_expiry_miss_due;

/*
 * One budget/deadline-miss timer per pool slot, disarmed lazily: the context-switch hooks re-aim
 * it on every switch, and reprogramming a kernel timeout each time (z_abort_timeout +
 * z_add_timeout + the timer driver) costs more than the hook's own work. So cancelling only
 * marks the timer unwanted, and aiming later than a pending expiry keeps that expiry. An
 * unwanted expiry is dropped here. One re-aimed while armed may be early (the scheduler moved
 * its instant later since): it goes to the Rust side's qf_rs_timer_reaimed, which reports the
 * scheduler's target if so; every other expiry is due and goes straight to the checks
 * (qf_rs_timer_expired, api.rs). Both run with the lock held by the expiry here, which arms
 * the timer again for the tick they report. The scheduler keeps the instant it wants
 * (qf-sched's timer target), so this layer does not keep a second copy.
 */
struct qf_timer {
	struct _timeout timeout;
	uint64_t pending;  /* when the kernel timeout will fire, if armed */
	uint16_t slot;     /* its pool slot (stored: recomputing it from the address divides) */
	uint8_t state;     /* QF_TIMER_* bits: one byte, so arming and firing each store once */
};

#define QF_TIMER_WANTED BIT(0) /* the scheduler wants an expiry */
#define QF_TIMER_ARMED  BIT(1) /* the kernel timeout is in the timeout queue (or has just left
				* it, its expiry waiting for qf_lock)
				*/
#define QF_TIMER_REAIMED BIT(2) /* aimed again while armed, not earlier: may fire early */

static struct qf_timer qf_timers[CONFIG_QFABRIC_MAX_THREADS];
static struct _timeout qf_resume[CONFIG_QFABRIC_MAX_THREADS];
static struct k_thread *qf_resume_thread[CONFIG_QFABRIC_MAX_THREADS];

uint32_t qf_port_lock(void)
{
	return (uint32_t)k_spin_lock(&qf_lock).key;
}

void qf_port_unlock(uint32_t key)
{
	k_spinlock_key_t k = {.key = (int)key};

	k_spin_unlock(&qf_lock, k);
}

uint64_t qf_port_now(void)
{
	return (uint64_t)sys_clock_tick_get();
}

uint64_t qf_port_cycles_to_ticks(uint32_t cycles)
{
#if !defined(CONFIG_TIMER_READS_ITS_FREQUENCY_AT_RUNTIME) &&                                      \
	CONFIG_SYS_CLOCK_HW_CYCLES_PER_SEC >= CONFIG_SYS_CLOCK_TICKS_PER_SEC &&                    \
	CONFIG_SYS_CLOCK_HW_CYCLES_PER_SEC % CONFIG_SYS_CLOCK_TICKS_PER_SEC == 0
	/* A whole number of cycles per tick, known when compiling: k_cyc_to_ticks_ceil64's value
	 * with a 32-bit division by a constant (a multiplication), where it divides in 64 bits (a
	 * library call of ~60 instructions on a 32-bit core, in every qf_thread_deadline_set).
	 */
	const uint32_t per_tick =
		CONFIG_SYS_CLOCK_HW_CYCLES_PER_SEC / CONFIG_SYS_CLOCK_TICKS_PER_SEC;

	return (uint64_t)(cycles / per_tick) + (cycles % per_tick != 0U);
#else
	return k_cyc_to_ticks_ceil64(cycles);
#endif
}

struct k_thread *qf_port_current(void)
{
	/* Not k_current_get(): this also runs in interrupt context and during the first switch. */
	return _current;
}

static void qf_timer_fired(struct _timeout *timeout);

/* K_TIMEOUT_ABS_TICKS(at) without its clamp to non-negative tick counts, which costs the
 * switch-in hook a dozen instructions: `at` is a tick count since boot, far below 2^63, so the
 * unsigned subtraction gives exactly the macro's value. A larger `at` (a saturated "never" of
 * the scheduler) becomes K_FOREVER or a relative wait of over 2^62 ticks, never either way.
 */
static ALWAYS_INLINE k_timeout_t qf_abs_ticks(uint64_t at)
{
	BUILD_ASSERT(IS_ENABLED(CONFIG_TIMEOUT_64BIT), "absolute timeouts need 64-bit ticks");
	return (k_timeout_t){.ticks = (k_ticks_t)((uint64_t)K_TICKS_FOREVER - 1U - at)};
}

/* Arms a timer that is not armed. Inlined, and the timeout is added last, so
 * qf_port_timer_arm tail-calls z_add_timeout and saves no registers: the switch-in hook
 * reaches it on nearly every switch, and the saves are most of a call's cost on RV32, which
 * has no multi-register push. Marking it armed first is safe: nothing fires it before it is
 * added.
 */
static ALWAYS_INLINE void qf_timer_add(struct qf_timer *t, uint64_t at)
{
	t->pending = at;
	t->state = QF_TIMER_WANTED | QF_TIMER_ARMED;
	z_add_timeout(&t->timeout, qf_timer_fired, qf_abs_ticks(at));
}

/* Moves an armed timer's expiry earlier: rare (a pending expiry is kept when it comes first),
 * so out of line, keeping the common path above free of a call that needs saved registers.
 */
static __noinline void qf_timer_advance(struct qf_timer *t, uint64_t at)
{
	z_abort_timeout(&t->timeout);
	qf_timer_add(t, at);
}

static void qf_timer_fired(struct _timeout *timeout)
{
	struct qf_timer *t = CONTAINER_OF(timeout, struct qf_timer, timeout);
	k_spinlock_key_t key = k_spin_lock(&qf_lock);
	uint8_t state = t->state;
	uint64_t next = 0U;

	/* The kernel took the timeout out of its queue and then released its lock to call this:
	 * an interrupt that preempted the timer's may have aimed the timer in between, which
	 * (finding it marked armed) may have queued it again. Then this expiry is stale and the
	 * new one stands.
	 */
	if (!z_is_inactive_timeout(timeout)) {
		k_spin_unlock(&qf_lock, key);
		return;
	}
	/* Not armed any more, and not wanted until the scheduler aims it again. */
	t->state = 0;
	/* Inside sys_clock_announce the current tick is this timeout's expiry tick, which is
	 * `pending` for a timeout added for a future tick: no need to read the clock (a third of
	 * B_ROUT's kernel calls). One added for a tick already past fires at the next announced
	 * tick; `pending` then is the instant the scheduler asked for, which its accounting
	 * takes as the event's time (budget used up exactly, a deadline missed at the deadline).
	 * Testing the whole state for the common case (added once, wanted, not re-aimed) costs
	 * what testing the wanted bit alone did.
	 */
	if (state == (QF_TIMER_WANTED | QF_TIMER_ARMED)) {
		next = qf_rs_timer_expired(t->slot, t->pending);
	} else if ((state & QF_TIMER_WANTED) != 0U) {
		next = qf_rs_timer_reaimed(t->slot, t->pending);
	}
	/* Armed again here, under the same lock as the checks, with the timer at hand (the Rust
	 * side would reach it through its slot and test whether it is armed).
	 */
	if (next != 0U) {
		qf_timer_add(t, next);
	}
	k_spin_unlock(&qf_lock, key);
	/* A flag in memory rather than a bit of the report: the report would stay live across
	 * the timer's arming, in one more saved register.
	 */
	if (unlikely(qf_expiry_miss_due)) {
		qf_expiry_miss_due = false;
		qf_rs_miss_report();
	}
}

/* qf_port_timer_arm for a timer still in the timeout queue: wanted again, and moved only if
 * the scheduler now wants it earlier. Out of line so that arming an idle timer, the common case
 * (every budget exhaustion, most switches in), keeps no value across a call and saves no
 * registers.
 */
static __noinline void qf_timer_reaim(struct qf_timer *t, uint8_t state, uint64_t at)
{
	if (at < t->pending) {
		qf_timer_advance(t, at);
	} else {
		/* It fires first, and the Rust side sets it again if it is early (api.rs). */
		t->state = state | QF_TIMER_WANTED | QF_TIMER_REAIMED;
	}
}

void qf_port_timer_arm(uint16_t slot, uint64_t at)
{
	struct qf_timer *t = &qf_timers[slot];
	uint8_t state = t->state;

	if ((state & QF_TIMER_ARMED) != 0U) {
		qf_timer_reaim(t, state, at);
		return;
	}
	qf_timer_add(t, at);
}

void qf_port_timer_cancel(uint16_t slot)
{
	qf_timers[slot].state &= (uint8_t)~QF_TIMER_WANTED;
}

void qf_port_slot_release(uint16_t slot)
{
	/* A throttled thread waits for qf_resume[slot], not for its timer (whose target the
	 * scheduler's detach has already dropped), so only this stops a dead thread from being
	 * resumed.
	 */
	if (qf_resume_thread[slot] != NULL) {
		z_abort_timeout(&qf_resume[slot]);
		qf_resume_thread[slot] = NULL;
	}
}

/* The hardware cycle count at tick 0, rounded down to a whole tick. prio_deadline holds
 * k_cycle_get_32() values (upstream k_thread_deadline_set adds to it), and our deadlines are
 * ticks, so both views must share an origin or qfabric threads and plain EDF threads compare
 * wrongly. They need not: RISC-V's mtime counts from reset, the tick count from timer init.
 * The rounding keeps tick-aligned origins (Cortex-M SysTick, native_sim) exact; any other
 * origin is off by less than one tick, the resolution of our deadlines anyway.
 */
static uint32_t qf_cycle_origin;

static int qf_cycle_origin_init(void)
{
	uint32_t per_tick = MAX(k_ticks_to_cyc_floor32(1), 1U);
	uint64_t ticks;
	uint32_t cycles;

	do { /* a tick between the two reads would put `cycles` in the next tick */
		ticks = (uint64_t)sys_clock_tick_get();
		cycles = k_cycle_get_32();
	} while ((uint64_t)sys_clock_tick_get() != ticks);

	uint32_t since_tick0 = cycles - k_ticks_to_cyc_floor32(ticks);

	qf_cycle_origin = since_tick0 - since_tick0 % per_tick;
	return 0;
}
SYS_INIT(qf_cycle_origin_init, POST_KERNEL, 0);

/* The timers' slots and the Rust state's boot-time configuration (state.rs), before any thread
 * runs.
 */
static int qf_init(void)
{
	for (uint16_t slot = 0; slot < ARRAY_SIZE(qf_timers); slot++) {
		qf_timers[slot].slot = slot;
	}
	qf_rs_init();
	return 0;
}
SYS_INIT(qf_init, PRE_KERNEL_1, 0);

/* prio_deadline keeps the 32-bit cycle view of the deadline, as upstream does. */
static ALWAYS_INLINE int qf_deadline_cycles(uint64_t at)
{
	return (int)(qf_cycle_origin + k_ticks_to_cyc_floor32(at));
}

void qf_port_deadline_set(struct k_thread *thread, uint64_t at)
{
	z_impl_k_thread_absolute_deadline_set(thread, qf_deadline_cycles(at));
}

void qf_port_deadline_set_reschedule(struct k_thread *thread, uint64_t at)
{
#ifdef CONFIG_QFABRIC_HOOKS_KERNEL_PATCH
	/* One hold of the scheduler lock for both, none on a uniprocessor: the timer expiry, the
	 * only caller, holds qf_lock (sched_hooks.h).
	 */
	z_qf_deadline_set_reschedule(thread, qf_deadline_cycles(at));
#else
	z_impl_k_thread_absolute_deadline_set(thread, qf_deadline_cycles(at));
	k_reschedule();
#endif
}

void qf_port_deadline_set_relative(struct k_thread *thread, int deadline)
{
	/* Plain Zephyr EDF, for threads without a control block. */
	deadline = CLAMP(deadline, 0, INT_MAX);
	z_impl_k_thread_absolute_deadline_set(thread, (int)(k_cycle_get_32() + deadline));
}

void qf_port_sleep_until(uint64_t at)
{
	if (at > (uint64_t)sys_clock_tick_get()) {
		(void)k_sleep(K_TIMEOUT_ABS_TICKS(at));
	} else {
		/* Already due: k_sleep would still wait for the next tick. The new deadline may
		 * have let another thread ahead.
		 */
		k_reschedule();
	}
}

static void qf_resume_fired(struct _timeout *t)
{
	k_thread_resume(qf_resume_thread[t - qf_resume]);
}

void qf_port_throttle(uint16_t slot, struct k_thread *thread, uint64_t until)
{
	qf_resume_thread[slot] = thread;
	z_abort_timeout(&qf_resume[slot]);
	z_add_timeout(&qf_resume[slot], qf_resume_fired, K_TIMEOUT_ABS_TICKS(until));
	k_thread_suspend(thread);
}

void qf_port_reschedule(void)
{
	k_reschedule();
}

void qf_port_miss_callback(qf_deadline_miss_cb_t cb, struct k_thread *thread, void *arg)
{
	cb(thread, arg);
}

void qf_port_print(const char *text, size_t len)
{
	printk("%.*s", (int)len, text);
}

FUNC_NORETURN void qf_port_panic(const char *text, size_t len)
{
	printk("qfabric: Rust panic: %.*s\n", (int)len, text);
	k_panic();
	CODE_UNREACHABLE;
}

#ifdef CONFIG_QFABRIC_HOOKS_KERNEL_PATCH
uintptr_t qf_port_thread_control_get(const struct k_thread *thread)
{
	return (uintptr_t)thread->base.qf_control;
}

void qf_port_thread_control_set(struct k_thread *thread, uintptr_t control)
{
	thread->base.qf_control = (void *)control;
}
#endif /* CONFIG_QFABRIC_HOOKS_KERNEL_PATCH */

#ifdef CONFIG_QFABRIC_EDF
/* Upstream hook (CONFIG_THREAD_ABORT_HOOK), called from halt_thread() for a dying thread: its
 * control block and timers go back to the pool.
 */
void thread_abort_hook(struct k_thread *thread)
{
	qf_rs_thread_exit(thread);
}
#endif /* CONFIG_QFABRIC_EDF */
