/*
 * The MCU executor's transport (CONFIG_QFABRIC_EXECUTOR_RPMSG): the rpmsg endpoint "qfabric" in
 * OpenAMP resource-table mode, as Linux remoteproc expects. Modelled on Zephyr's
 * samples/subsys/ipc/openamp_rsc_table/src/main_remote.c (v4.3.0); only what qfabric needs:
 * the resource table's vdev (subsys/ipc/open-amp/resource_table.c), the IPM mailbox, one
 * endpoint whose callback runs qf_executor_serve(), and the send function resident chains use.
 *
 * Each frame is answered to the address it came from. Chain results go to the endpoint that last
 * wrote to "qfabric" (docs/resident-chains.md, *Results*; qf-mcu-emu does the same), so a reader
 * binds itself with one frame: /dev/qfabricN and an rpmsg_char endpoint are two Linux addresses
 * on the one channel, and OpenAMP's own destination stays the first one that ever wrote. Until
 * Linux has written once, and after it closed the channel, chains count their results as send
 * failures.
 *
 * Sizes: an rpmsg buffer is RPMSG_BUFFER_SIZE (512) bytes with a 16-byte header, so a message
 * carries at most 496 bytes (rpmsg_get_tx_buffer_size()). Every declared response fits (at most
 * 100 bytes); a response that would not is answered EXECUTION_ERROR by the dispatcher, and a
 * chain result that would not is refused with -EMSGSIZE (OpenAMP's send would cut it to 496).
 * Linux cannot send more than 496 bytes; an OpenAMP host cuts a longer message, and the frame's
 * payload length makes that MALFORMED. tests/executor-rpmsg runs all this against an OpenAMP
 * host in the same image.
 *
 * The platform (where the table and the shared memory are, how doorbells ring) is the IPM mailbox
 * and the chosen nodes below, or, with CONFIG_QFABRIC_VBOARD, the virtual board's
 * (executor_vboard.c): both open the same rpmsg device with qf_rpmsg_open() (executor_rpmsg.h).
 */
#include <zephyr/kernel.h>
#include <zephyr/device.h>
#include <zephyr/drivers/ipm.h>
#include <zephyr/logging/log.h>
#include <zephyr/sys/atomic.h>

#include <openamp/open_amp.h>
#include <metal/sys.h>
#include <metal/io.h>
#include <resource_table.h>
#include <addr_translation.h>

#include <qfabric/executor.h>

#include "executor_rpmsg.h"

LOG_MODULE_REGISTER(qfabric_executor, LOG_LEVEL_INF);

#if !DT_HAS_CHOSEN(zephyr_ipc_shm)
#error "CONFIG_QFABRIC_EXECUTOR_RPMSG needs the chosen node zephyr,ipc_shm"
#endif
#if !defined(CONFIG_QFABRIC_VBOARD) && !DT_HAS_CHOSEN(zephyr_ipc)
#error "CONFIG_QFABRIC_EXECUTOR_RPMSG needs the chosen node zephyr,ipc (the IPM mailbox)"
#endif

#define QF_ENDPOINT_NAME "qfabric"
/* struct rpmsg_hdr (src, dst, reserved, len, flags) is OpenAMP-internal: 16 bytes on the wire. */
#define QF_RPMSG_HDR_LEN 16
#define QF_RPMSG_PAYLOAD_MAX (RPMSG_BUFFER_SIZE - QF_RPMSG_HDR_LEN)

#define SHM_NODE DT_CHOSEN(zephyr_ipc_shm)
#define SHM_SIZE DT_REG_SIZE(SHM_NODE)

static metal_phys_addr_t shm_physmap;
static metal_phys_addr_t rsc_tab_physmap;
static struct metal_io_region shm_io;
static struct metal_io_region rsc_io;
static struct rpmsg_virtio_device rvdev;
static struct virtio_device *qf_vdev;
static struct rpmsg_endpoint qf_ept;
/* Where chain results go: the source of the last frame received, RPMSG_ADDR_ANY before one. */
static atomic_t qf_results_dst = ATOMIC_INIT((atomic_val_t)RPMSG_ADDR_ANY);

/*
 * On a board the shared memory is where the chosen node says, and the vring and buffer
 * addresses Linux writes are those physical addresses. Weak so that an image whose shared memory
 * has no fixed address can provide it: on native_sim "physical" memory is the host process's, so
 * tests/executor-rpmsg (which plays Linux in the same image) defines this to return its own
 * buffer. Every board keeps this definition, so its path is the chosen node's address as before.
 */
__weak void *qf_executor_rpmsg_shm(void)
{
	return (void *)DT_REG_ADDR(SHM_NODE);
}

/* Runs in the rpmsg thread (rproc_virtio_notified), never in an interrupt. */
static int qf_rpmsg_rx(struct rpmsg_endpoint *ept, void *data, size_t len, uint32_t src,
		       void *priv)
{
	/* Only the rpmsg thread answers requests, so one buffer serves them all. */
	static uint8_t response[QF_RPMSG_PAYLOAD_MAX];
	struct qf_served served;
	int mtu = rpmsg_get_tx_buffer_size(ept);
	size_t cap = MIN(sizeof(response), (size_t)MAX(mtu, 0));
	int status;

	/* Any frame, served or not, makes its sender the chains' reader. */
	atomic_set(&qf_results_dst, (atomic_val_t)src);
	status = qf_executor_serve(data, len, response, cap, &served);
	if (status < 0) {
		LOG_ERR("%zu-byte frame from 0x%x not served: %d (tx buffer %d bytes)", len, src,
			status, mtu);
		return RPMSG_SUCCESS;
	}
	if (status != QF_STATUS_OK) {
		LOG_DBG("task %u from 0x%x: status %d", served.task_id, src, status);
	}
	int sent = rpmsg_sendto(ept, response, (int)served.len, src);

	if (sent < 0) {
		LOG_ERR("response to 0x%x not sent: %d", src, sent);
	}
	return RPMSG_SUCCESS;
}

static void qf_rpmsg_unbind(struct rpmsg_endpoint *ept)
{
	atomic_set(&qf_results_dst, (atomic_val_t)RPMSG_ADDR_ANY);
	LOG_INF("Linux closed the \"%s\" endpoint", QF_ENDPOINT_NAME);
}

/* The sink of chain results: never blocks a chain waiting for a buffer from Linux. */
static int qf_rpmsg_send(const uint8_t *frame, size_t len, void *ctx)
{
	struct rpmsg_endpoint *ept = ctx;
	uint32_t dst = (uint32_t)atomic_get(&qf_results_dst);

	if (dst == RPMSG_ADDR_ANY || !is_rpmsg_ept_ready(ept)) {
		return -ENOTCONN;
	}
	int mtu = rpmsg_get_tx_buffer_size(ept);

	if (mtu < 0 || len > (size_t)mtu) {
		return -EMSGSIZE;
	}
	return rpmsg_trysendto(ept, frame, (int)len, dst) < 0 ? -ENOBUFS : 0;
}

int qf_rpmsg_init(void)
{
	struct metal_init_params metal_params = METAL_INIT_DEFAULTS;
	int status = metal_init(&metal_params);

	if (status != 0) {
		LOG_ERR("metal_init: %d", status);
	}
	return status;
}

int qf_rpmsg_open(void *table, int table_size, void *const vring_va[2], void *buf_va,
		  metal_phys_addr_t buf_pa, size_t buf_len, rpvdev_notify_func notify)
{
	struct fw_rsc_vdev_vring *vrings[2] = {rsc_table_get_vring0(table),
					       rsc_table_get_vring1(table)};

	/* This core addresses the buffers at buf_va, Linux at buf_pa (its descriptors' addresses). */
	shm_physmap = buf_pa;
	metal_io_init(&shm_io, buf_va, &shm_physmap, buf_len, -1, 0,
		      addr_translation_get_ops(shm_physmap));
	rsc_tab_physmap = (uintptr_t)table;
	metal_io_init(&rsc_io, table, &rsc_tab_physmap, table_size, -1, 0, NULL);

	qf_vdev = rproc_virtio_create_vdev(VIRTIO_DEV_DEVICE, VDEV_ID, rsc_table_to_vdev(table),
					   &rsc_io, NULL, notify, NULL);
	if (qf_vdev == NULL) {
		LOG_ERR("failed to create the rpmsg vdev");
		return -ENOMEM;
	}
	/* Blocks until Linux remoteproc has set up the vdev (status DRIVER_OK). */
	rproc_virtio_wait_remote_ready(qf_vdev);

	for (int i = 0; i < 2; i++) {
		/* Without a platform address, the vring is where Linux wrote its da. */
		void *va = vring_va != NULL ? vring_va[i] : (void *)(uintptr_t)vrings[i]->da;

		if (rproc_virtio_init_vring(qf_vdev, i, vrings[i]->notifyid, va, &rsc_io,
					    vrings[i]->num, vrings[i]->align) != 0) {
			goto failed;
		}
	}
	if (rpmsg_init_vdev(&rvdev, qf_vdev, NULL, &shm_io, NULL) != 0) {
		goto failed;
	}
	int status = rpmsg_create_ept(&qf_ept, rpmsg_virtio_get_rpmsg_device(&rvdev),
				      QF_ENDPOINT_NAME, RPMSG_ADDR_ANY, RPMSG_ADDR_ANY, qf_rpmsg_rx,
				      qf_rpmsg_unbind);

	if (status != 0) {
		LOG_ERR("endpoint \"%s\" not created: %d", QF_ENDPOINT_NAME, status);
		rpmsg_deinit_vdev(&rvdev);
		rproc_virtio_remove_vdev(qf_vdev);
		qf_vdev = NULL;
		return status;
	}
	qf_executor_sink_set(qf_rpmsg_send, &qf_ept);
	LOG_INF("serving QFabric frames on rpmsg endpoint \"%s\" (%d-byte messages)",
		QF_ENDPOINT_NAME, rpmsg_get_tx_buffer_size(&qf_ept));
	return 0;

failed:
	LOG_ERR("failed to set up the vrings");
	rproc_virtio_remove_vdev(qf_vdev);
	qf_vdev = NULL;
	return -EINVAL;
}

void qf_rpmsg_close(void)
{
	if (qf_vdev == NULL) {
		return;
	}
	/*
	 * Only called when Linux has started a new session: it has zeroed and refilled the vrings,
	 * so nothing may be sent on them with this device's indexes, not even the name service's
	 * destroy message rpmsg_destroy_ept() would send. A chain (above this thread's priority)
	 * is never inside the sink here: it would have run to its end before this thread resumed.
	 */
	qf_executor_sink_set(NULL, NULL);
	atomic_set(&qf_results_dst, (atomic_val_t)RPMSG_ADDR_ANY);
	rvdev.rdev.support_ns = 0;
	rpmsg_deinit_vdev(&rvdev);
	rproc_virtio_remove_vdev(qf_vdev);
	qf_vdev = NULL;
}

void qf_rpmsg_notified(void)
{
	if (qf_vdev != NULL) {
		rproc_virtio_notified(qf_vdev, VRING1_ID);
	}
}

#ifndef CONFIG_QFABRIC_VBOARD
/* The IPM platform: the chosen mailbox, the table in the image, the chosen shared memory. */

#if CONFIG_IPM_MAX_DATA_SIZE > 0
#define IPM_SEND(dev, w, id, d, s) ipm_send(dev, w, id, d, s)
#else
#define IPM_SEND(dev, w, id, d, s) ipm_send(dev, w, id, NULL, 0)
#endif

static const struct device *const ipm_handle = DEVICE_DT_GET(DT_CHOSEN(zephyr_ipc));

static K_SEM_DEFINE(qf_ipm_sem, 0, 1);

static void qf_ipm_callback(const struct device *dev, void *context, uint32_t id,
			    volatile void *data)
{
	k_sem_give(&qf_ipm_sem);
}

static int qf_mailbox_notify(void *priv, uint32_t id)
{
	ARG_UNUSED(priv);
	IPM_SEND(ipm_handle, 0, id, &id, 4);
	return 0;
}

static void qf_rpmsg_thread(void *arg1, void *arg2, void *arg3)
{
	ARG_UNUSED(arg1);
	ARG_UNUSED(arg2);
	ARG_UNUSED(arg3);
	void *table;
	int table_size;
	int status = qf_rpmsg_init();

	if (status != 0) {
		return;
	}
	void *shm = qf_executor_rpmsg_shm();

	rsc_table_get(&table, &table_size);
	if (!device_is_ready(ipm_handle)) {
		LOG_ERR("IPM device %s is not ready", ipm_handle->name);
		return;
	}
	ipm_register_callback(ipm_handle, qf_ipm_callback, NULL);
	status = ipm_set_enabled(ipm_handle, 1);
	if (status != 0) {
		LOG_ERR("platform init failed: %d", status);
		return;
	}
	/* This core addresses the memory at its physical address (no MMU). */
	if (qf_rpmsg_open(table, table_size, NULL, shm, (metal_phys_addr_t)(uintptr_t)shm,
			  SHM_SIZE, qf_mailbox_notify) != 0) {
		metal_finish();
		return;
	}
	while (true) {
		(void)k_sem_take(&qf_ipm_sem, K_FOREVER);
		qf_rpmsg_notified();
	}
}

K_THREAD_DEFINE(qf_rpmsg, CONFIG_QFABRIC_EXECUTOR_RPMSG_STACK_SIZE, qf_rpmsg_thread, NULL, NULL,
		NULL, CONFIG_QFABRIC_EXECUTOR_RPMSG_PRIORITY, 0, 0);
#endif /* !CONFIG_QFABRIC_VBOARD */
