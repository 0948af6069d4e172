/*
 * The kernel services the MCU executor (executor.rs, chains.rs) uses, as plain C functions over
 * Zephyr's API, in the style of port.c: the dispatcher's mutex, the nanosecond clock on the
 * hardware cycle counter, the result sink, and the statically allocated chain threads.
 * include/qfabric/executor_port.h declares them for the compiler and for bindgen (build.rs).
 */
#include <zephyr/kernel.h>
#include <zephyr/spinlock.h>

#include <qfabric/executor.h>
#include <qfabric/executor_port.h>

/*
 * The dispatcher's replay windows. A mutex, not the qfabric spinlock: a request runs its task
 * (fir_x512 is thousands of cycles) while holding it, and interrupts must stay enabled.
 */
static K_MUTEX_DEFINE(qf_executor_mutex);

int qf_executor_port_lock(void)
{
	if (k_is_in_isr()) {
		return -EBUSY;
	}
	return k_mutex_lock(&qf_executor_mutex, K_FOREVER);
}

void qf_executor_port_unlock(void)
{
	(void)k_mutex_unlock(&qf_executor_mutex);
}

/*
 * Nanoseconds from the hardware cycle counter. A 32-bit counter is widened here: every read
 * that sees it smaller than the last one adds a wrap, which is exact as long as two reads are
 * less than one wrap apart (a task's start and end reads are).
 */
uint64_t qf_executor_port_now_ns(void)
{
#ifdef CONFIG_TIMER_HAS_64BIT_CYCLE_COUNTER
	return k_cyc_to_ns_floor64(k_cycle_get_64());
#else
	static struct k_spinlock lock;
	static uint32_t last;
	static uint64_t wraps;
	k_spinlock_key_t key = k_spin_lock(&lock);
	uint32_t now = k_cycle_get_32();

	if (now < last) {
		wraps += (uint64_t)1 << 32;
	}
	last = now;
	uint64_t cycles = wraps | now;

	k_spin_unlock(&lock, key);
	return k_cyc_to_ns_floor64(cycles);
#endif
}

static qf_executor_sink_t qf_sink;
static void *qf_sink_ctx;

void qf_executor_sink_set(qf_executor_sink_t sink, void *ctx)
{
	unsigned int key = irq_lock();

	qf_sink = sink;
	qf_sink_ctx = ctx;
	irq_unlock(key);
}

int qf_executor_port_send(const uint8_t *frame, size_t len)
{
	unsigned int key = irq_lock();
	qf_executor_sink_t sink = qf_sink;
	void *ctx = qf_sink_ctx;

	irq_unlock(key);
	if (sink == NULL) {
		return -ENOTCONN;
	}
	return sink(frame, len, ctx);
}

#if CONFIG_QFABRIC_EXECUTOR_MAX_CHAINS > 0
K_THREAD_STACK_ARRAY_DEFINE(qf_chain_stacks, CONFIG_QFABRIC_EXECUTOR_MAX_CHAINS,
			    CONFIG_QFABRIC_EXECUTOR_CHAIN_STACK_SIZE);
static struct k_thread qf_chain_threads[CONFIG_QFABRIC_EXECUTOR_MAX_CHAINS];
/* Given by a chain thread once its first cycle started (or was refused). */
static struct k_sem qf_chain_started[CONFIG_QFABRIC_EXECUTOR_MAX_CHAINS];

static void qf_chain_entry(void *slot, void *unused1, void *unused2)
{
	ARG_UNUSED(unused1);
	ARG_UNUSED(unused2);
	qf_rs_chain_main((uint16_t)(uintptr_t)slot);
}

/*
 * Creates chain thread @p slot, not started yet, so its period and budget can be set first.
 * NULL if @p priority is not an application thread priority.
 */
struct k_thread *qf_executor_port_chain_create(uint16_t slot, int priority)
{
	if (priority < K_HIGHEST_APPLICATION_THREAD_PRIO ||
	    priority > K_LOWEST_APPLICATION_THREAD_PRIO) {
		return NULL;
	}
	k_sem_init(&qf_chain_started[slot], 0, 1);
	k_tid_t tid = k_thread_create(&qf_chain_threads[slot], qf_chain_stacks[slot],
				      K_THREAD_STACK_SIZEOF(qf_chain_stacks[slot]), qf_chain_entry,
				      (void *)(uintptr_t)slot, NULL, NULL, priority, 0, K_FOREVER);
	(void)k_thread_name_set(tid, "qf_chain");
	return tid;
}

void qf_executor_port_chain_started(uint16_t slot)
{
	k_sem_give(&qf_chain_started[slot]);
}

void qf_executor_port_chain_wait_started(uint16_t slot)
{
	(void)k_sem_take(&qf_chain_started[slot], K_FOREVER);
}

/*
 * qf_chain_start() runs its install and start (qf_rs_chain_start) on this thread, not on its
 * caller's stack: the chain table's install and the template's dry run need more than 2 KiB
 * beyond the caller's frame (fir_x512's the most), which overflowed a 3 KiB main stack into the
 * idle thread's stack on mps2/an521 (no stack guard there). The caller waits for it.
 */
K_THREAD_STACK_DEFINE(qf_chain_control_stack, CONFIG_QFABRIC_EXECUTOR_CHAIN_CONTROL_STACK_SIZE);
static struct k_thread qf_chain_control_thread;
static K_MUTEX_DEFINE(qf_chain_control_mutex);

static void qf_chain_control_entry(void *config, void *result, void *unused)
{
	ARG_UNUSED(unused);
	*(int *)result = qf_rs_chain_start((const struct qf_chain_config *)config);
}

int qf_chain_start(const struct qf_chain_config *config)
{
	int result = -EINVAL;

	if (k_is_in_isr()) {
		return -EBUSY;
	}
	(void)k_mutex_lock(&qf_chain_control_mutex, K_FOREVER);
	/* At the caller's priority: the install runs as if the caller ran it. */
	k_tid_t tid = k_thread_create(&qf_chain_control_thread, qf_chain_control_stack,
				      K_THREAD_STACK_SIZEOF(qf_chain_control_stack),
				      qf_chain_control_entry, (void *)config, &result, NULL,
				      k_thread_priority_get(k_current_get()), 0, K_NO_WAIT);
	(void)k_thread_name_set(tid, "qf_chain_ctl");
	(void)k_thread_join(tid, K_FOREVER);
	(void)k_mutex_unlock(&qf_chain_control_mutex);
	return result;
}
#else
int qf_chain_start(const struct qf_chain_config *config)
{
	return qf_rs_chain_start(config);
}

struct k_thread *qf_executor_port_chain_create(uint16_t slot, int priority)
{
	ARG_UNUSED(slot);
	ARG_UNUSED(priority);
	return NULL;
}

void qf_executor_port_chain_started(uint16_t slot)
{
	ARG_UNUSED(slot);
}

void qf_executor_port_chain_wait_started(uint16_t slot)
{
	ARG_UNUSED(slot);
}
#endif

void qf_executor_port_chain_start(struct k_thread *thread)
{
	k_thread_start(thread);
}

void qf_executor_port_chain_abort(struct k_thread *thread)
{
	k_thread_abort(thread);
}

/* 0 once @p thread has exited, -EAGAIN if it is still running after @p cycles. */
int qf_executor_port_chain_join(struct k_thread *thread, uint32_t cycles)
{
	return k_thread_join(thread, K_CYC(cycles));
}

/* Cuts a chain thread's sleep short (its stop is due); nothing if it is not sleeping. */
void qf_executor_port_chain_wake(struct k_thread *thread)
{
	k_wakeup(thread);
}

/* A chain's start delay: a k_wakeup() (its stop) ends it early. */
void qf_executor_port_sleep_us(uint32_t us)
{
	(void)k_usleep((int32_t)MIN(us, (uint32_t)INT32_MAX));
}

/* Kernel time in nanoseconds: the chains' release clock (releases fall on tick boundaries). */
uint64_t qf_executor_port_tick_ns(void)
{
	return k_ticks_to_ns_floor64(sys_clock_tick_get());
}

uint64_t qf_executor_port_us_to_cycles(uint32_t us)
{
	return k_us_to_cyc_ceil64(us);
}

uint32_t qf_executor_port_cycles_to_us(uint32_t cycles)
{
	return k_cyc_to_us_ceil32(cycles);
}

/* The Zephyr priority of chains installed from Linux. */
int qf_executor_port_chain_priority(void)
{
	return CONFIG_QFABRIC_EXECUTOR_CHAIN_PRIORITY;
}
