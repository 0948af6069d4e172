/*
 * The MCU's side of the virtual board (CONFIG_QFABRIC_VBOARD, docs/virtual-board.md): what a
 * board's boot ROM, watchdog and mailbox give Linux remoteproc, done by this image for
 * qfabric_rproc, around the same rpmsg device as on a board (executor_rpmsg.c).
 *
 * - Shared memory: the chosen zephyr,ipc_shm node is the whole board window (16 MiB on
 *   mps2/an521, QEMU's machine RAM, a host file the Linux guest's ivshmem BAR2 maps too).
 * - Control block at its offset 0: magic, layout version, mcu_state, generation (one more than
 *   the block says at boot, so a reset MCU is a new generation), heartbeat (a kernel timer),
 *   the resource table's place, the channel address.
 * - Resource table: OpenAMP's (resource_table.c, CONFIG_OPENAMP_COPY_RSC_TABLE), copied to the
 *   chosen zephyr,ipc_rsc_table node, the contract's table slot.
 * - Mailbox: a UART (chosen qfabric,vboard-mailbox); each byte is one doorbell, its value the
 *   vector (0: vrings, 1: MCU state). The harness bridges the bytes to ivshmem eventfds.
 * - Sessions: a vector-0 doorbell is served only when Linux is attached to this generation and
 *   tagged it with its attach count; a new attach count starts a new rpmsg device over the
 *   vrings Linux has just zeroed (the contract's rule, the same as the emulator's).
 */
#include <zephyr/kernel.h>
#include <zephyr/device.h>
#include <zephyr/drivers/uart.h>
#include <zephyr/fatal.h>
#include <zephyr/logging/log.h>
#include <zephyr/logging/log_ctrl.h>
#include <zephyr/sys/barrier.h>
#include <zephyr/sys/sys_io.h>

#include <openamp/open_amp.h>
#include <metal/sys.h>
#include <resource_table.h>

#include <qfabric/executor.h>

#include "executor_rpmsg.h"

LOG_MODULE_REGISTER(qfabric_vboard, LOG_LEVEL_INF);

#if !DT_HAS_CHOSEN(qfabric_vboard_mailbox) || !DT_HAS_CHOSEN(zephyr_ipc_rsc_table)
#error "CONFIG_QFABRIC_VBOARD needs the chosen nodes qfabric,vboard-mailbox and zephyr,ipc_rsc_table"
#endif

/* Layout (docs/virtual-board.md, offsets into the shared memory). */
#define VB_RSC_TABLE_OFFSET 0x1000u
#define VB_VRING0_OFFSET    0x10000u
#define VB_VRING1_OFFSET    0x20000u
#define VB_BUFFER_OFFSET    0x100000u
#define VB_BUFFER_LEN       0x100000u

/* Control block fields (byte offsets) and values. */
#define CB_MAGIC               0
#define CB_LAYOUT_VERSION      4
#define CB_MCU_STATE           8
#define CB_GENERATION          12
#define CB_HEARTBEAT           16
#define CB_RSC_TABLE_OFFSET    20
#define CB_RSC_TABLE_SIZE      24
#define CB_LINUX_STATE         28
#define CB_ATTACHED_GENERATION 32
#define CB_ATTACH_COUNT        36
#define CB_KICK_TAG            40
#define CB_BAR2_PA             48
#define CB_HEARTBEAT_PERIOD_US 56
#define CB_CHANNEL_ADDR        60
#define CB_SERVED_ATTACH_COUNT 64

#define VB_MAGIC          0x48534651u /* "QFSH" */
#define VB_LAYOUT_VERSION 2u
#define MCU_BOOTING       1u
#define MCU_RUNNING       2u
#define MCU_CRASHED       3u
#define LINUX_ATTACHED    1u
/* OpenAMP gives the first named endpoint the first address above the reserved ones. */
#define VB_CHANNEL_ADDR   RPMSG_RESERVED_ADDRESSES
#define VB_HEARTBEAT_US   1000u

#define VECTOR_VRING 0u
#define VECTOR_STATE 1u

/* virtio status Linux sets once the rpmsg driver is ready (ACK, DRIVER, FEATURES_OK, DRIVER_OK). */
#define VB_STATUS_READY 0x0fu

BUILD_ASSERT(DT_REG_ADDR(DT_CHOSEN(zephyr_ipc_rsc_table)) ==
		     DT_REG_ADDR(DT_CHOSEN(zephyr_ipc_shm)) + VB_RSC_TABLE_OFFSET,
	     "the resource table node must be the contract's slot, 0x1000 into the shared memory");
BUILD_ASSERT(DT_REG_SIZE(DT_CHOSEN(zephyr_ipc_shm)) >= VB_BUFFER_OFFSET + VB_BUFFER_LEN,
	     "the shared memory must hold the contract's layout (2 MiB at least)");

static const struct device *const mbox = DEVICE_DT_GET(DT_CHOSEN(qfabric_vboard_mailbox));
static K_SEM_DEFINE(vb_doorbell, 0, 1);

static uint32_t vb_generation;
static uint32_t vb_served_attach;
/* Doorbells that failed the session rule, and mailbox bytes that name no vector. */
static uint32_t vb_stale_kicks;
static uint32_t vb_bad_bytes;

static inline mem_addr_t cb(uint32_t field)
{
	return (mem_addr_t)(uintptr_t)qf_executor_rpmsg_shm() + field;
}

static inline uint32_t cb_read(uint32_t field)
{
	return sys_read32(cb(field));
}

static inline void cb_write(uint32_t field, uint32_t value)
{
	sys_write32(value, cb(field));
}

static void vb_ring(uint32_t vector)
{
	uart_poll_out(mbox, (unsigned char)vector);
}

static int vb_notify(void *priv, uint32_t id)
{
	ARG_UNUSED(priv);
	ARG_UNUSED(id);
	/* Linux scans both vrings on vector 0, whichever advanced. */
	barrier_dmem_fence_full();
	vb_ring(VECTOR_VRING);
	return 0;
}

static void vb_mailbox_isr(const struct device *dev, void *user_data)
{
	ARG_UNUSED(user_data);
	uint8_t bytes[8];

	while (uart_irq_update(dev) > 0 && uart_irq_rx_ready(dev) > 0) {
		int n = uart_fifo_read(dev, bytes, sizeof(bytes));

		for (int i = 0; i < n; i++) {
			if (bytes[i] == VECTOR_VRING) {
				k_sem_give(&vb_doorbell);
			} else {
				vb_bad_bytes++;
			}
		}
		if (n <= 0) {
			break;
		}
	}
}

static void vb_heartbeat(struct k_timer *timer)
{
	ARG_UNUSED(timer);
	cb_write(CB_HEARTBEAT, cb_read(CB_HEARTBEAT) + 1);
}

static K_TIMER_DEFINE(vb_heartbeat_timer, vb_heartbeat, NULL);

/*
 * A fatal error ends this MCU: say so in the control block and ring the state vector, so Linux
 * notices at once rather than when the heartbeat has been still for its timeout.
 */
void k_sys_fatal_error_handler(unsigned int reason, const struct arch_esf *esf)
{
	ARG_UNUSED(esf);
	k_timer_stop(&vb_heartbeat_timer);
	cb_write(CB_MCU_STATE, MCU_CRASHED);
	barrier_dmem_fence_full();
	vb_ring(VECTOR_STATE);
	LOG_PANIC();
	printk("qfabric vboard: fatal error %u, published crashed (generation %u)\n", reason,
	       vb_generation);
	k_fatal_halt(reason);
}

/* Publishes the control block and the resource table, starts the heartbeat: Linux may attach. */
static int vb_boot(void **table, int *table_size)
{
	uint32_t previous = cb_read(CB_MAGIC) == VB_MAGIC ? cb_read(CB_GENERATION) : 0;

	cb_write(CB_MCU_STATE, MCU_BOOTING);
	barrier_dmem_fence_full();
	vb_generation = previous + 1 == 0 ? 1 : previous + 1;
	cb_write(CB_MAGIC, VB_MAGIC);
	cb_write(CB_LAYOUT_VERSION, VB_LAYOUT_VERSION);
	cb_write(CB_GENERATION, vb_generation);
	cb_write(CB_SERVED_ATTACH_COUNT, 0);
	cb_write(CB_HEARTBEAT_PERIOD_US, VB_HEARTBEAT_US);
	cb_write(CB_CHANNEL_ADDR, VB_CHANNEL_ADDR);
	/* Copies OpenAMP's table into the chosen zephyr,ipc_rsc_table node, the table slot. */
	rsc_table_get(table, table_size);
	cb_write(CB_RSC_TABLE_OFFSET, VB_RSC_TABLE_OFFSET);
	cb_write(CB_RSC_TABLE_SIZE, (uint32_t)*table_size);

	if (!device_is_ready(mbox)) {
		LOG_ERR("mailbox UART %s is not ready", mbox->name);
		return -ENODEV;
	}
	int status = uart_irq_callback_user_data_set(mbox, vb_mailbox_isr, NULL);

	if (status != 0) {
		LOG_ERR("mailbox UART %s: no interrupt-driven API (%d)", mbox->name, status);
		return status;
	}
	uart_irq_rx_enable(mbox);
	/*
	 * A doorbell that reached the UART before its interrupt was enabled (rung by Linux while
	 * this MCU was being reset) fills the one-byte receive buffer without raising the
	 * interrupt, and a full buffer takes no more bytes: take it now, or the mailbox stays
	 * blocked. A stale doorbell is then dropped by the session rule.
	 */
	unsigned int key = irq_lock();

	vb_mailbox_isr(mbox, NULL);
	irq_unlock(key);
	k_timer_start(&vb_heartbeat_timer, K_USEC(VB_HEARTBEAT_US), K_USEC(VB_HEARTBEAT_US));
	barrier_dmem_fence_full();
	cb_write(CB_MCU_STATE, MCU_RUNNING);
	barrier_dmem_fence_full();
	vb_ring(VECTOR_STATE);
	LOG_INF("virtual board: generation %u running, resource table %d bytes at +%#x",
		vb_generation, *table_size, VB_RSC_TABLE_OFFSET);
	return 0;
}

/*
 * A new session: Linux has zeroed and refilled the vrings and set DRIVER_OK. After a recovery
 * Linux writes the vdev's status, features and vring addresses into its private copy of the
 * table (docs/virtual-board.md, Linux fact 3), so the shared table keeps the clean copy: the
 * session rule is the DRIVER_OK signal, the features are the table's own (Linux 6.12 takes the
 * name service), the vrings are at the contract's offsets.
 */
static int vb_session_open(void *table, int table_size)
{
	uint8_t *shm = qf_executor_rpmsg_shm();
	struct fw_rsc_vdev *vdev = rsc_table_to_vdev(table);
	void *vrings[2] = {shm + VB_VRING0_OFFSET, shm + VB_VRING1_OFFSET};
	uint64_t bar2_pa = (uint64_t)cb_read(CB_BAR2_PA) | ((uint64_t)cb_read(CB_BAR2_PA + 4) << 32);

	vdev->gfeatures = vdev->dfeatures;
	vdev->status = VB_STATUS_READY;
	barrier_dmem_fence_full();
	return qf_rpmsg_open(table, table_size, vrings, shm + VB_BUFFER_OFFSET,
			     (metal_phys_addr_t)(bar2_pa + VB_BUFFER_OFFSET), VB_BUFFER_LEN,
			     vb_notify);
}

static void vb_thread(void *arg1, void *arg2, void *arg3)
{
	ARG_UNUSED(arg1);
	ARG_UNUSED(arg2);
	ARG_UNUSED(arg3);
	void *table;
	int table_size;

	if (qf_rpmsg_init() != 0 || vb_boot(&table, &table_size) != 0) {
		return;
	}
	while (true) {
		(void)k_sem_take(&vb_doorbell, K_FOREVER);
		barrier_dmem_fence_full();
		uint32_t attach = cb_read(CB_ATTACH_COUNT);

		if (cb_read(CB_LINUX_STATE) != LINUX_ATTACHED ||
		    cb_read(CB_ATTACHED_GENERATION) != vb_generation ||
		    cb_read(CB_KICK_TAG) != attach) {
			vb_stale_kicks++;
			continue;
		}
		if (attach != vb_served_attach) {
			qf_rpmsg_close();
			vb_served_attach = attach;
			cb_write(CB_SERVED_ATTACH_COUNT, attach);
			if (vb_session_open(table, table_size) != 0) {
				LOG_ERR("session of attach %u not opened", attach);
				continue;
			}
			LOG_INF("session of attach %u open (%u stale doorbells so far)", attach,
				vb_stale_kicks);
		}
		qf_rpmsg_notified();
	}
}

K_THREAD_DEFINE(qf_vboard, CONFIG_QFABRIC_EXECUTOR_RPMSG_STACK_SIZE, vb_thread, NULL, NULL, NULL,
		CONFIG_QFABRIC_EXECUTOR_RPMSG_PRIORITY, 0, 0);
