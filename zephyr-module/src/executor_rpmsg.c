/*
 * The MCU executor's transport (CONFIG_QFABRIC_EXECUTOR_RPMSG): the rpmsg endpoint "qfabric" in
 * OpenAMP resource-table mode, as Linux remoteproc expects. Modelled on Zephyr's
 * samples/subsys/ipc/openamp_rsc_table/src/main_remote.c (v4.3.0); only what qfabric needs:
 * the resource table's vdev (subsys/ipc/open-amp/resource_table.c), the IPM mailbox, one
 * endpoint whose callback runs qf_executor_serve(), and the send function resident chains use.
 *
 * Each frame is answered to the address it came from. Chain results go to the endpoint's
 * destination, which OpenAMP sets from the first message Linux sends: until Linux has written
 * once to "qfabric", chains count their results as send failures.
 *
 * Sizes: an rpmsg buffer is RPMSG_BUFFER_SIZE (512) bytes with a 16-byte header, so a message
 * carries at most 496 bytes (rpmsg_get_tx_buffer_size()). Every declared response fits (at most
 * 100 bytes); a response that would not is answered EXECUTION_ERROR by the dispatcher, and a
 * chain result that would not is refused with -EMSGSIZE (OpenAMP's send would cut it to 496).
 * Linux cannot send more than 496 bytes; an OpenAMP host cuts a longer message, and the frame's
 * payload length makes that MALFORMED. tests/executor-rpmsg runs all this against an OpenAMP
 * host in the same image.
 */
#include <zephyr/kernel.h>
#include <zephyr/device.h>
#include <zephyr/drivers/ipm.h>
#include <zephyr/logging/log.h>

#include <openamp/open_amp.h>
#include <metal/sys.h>
#include <metal/io.h>
#include <resource_table.h>
#include <addr_translation.h>

#include <qfabric/executor.h>

LOG_MODULE_REGISTER(qfabric_executor, LOG_LEVEL_INF);

#if !DT_HAS_CHOSEN(zephyr_ipc_shm) || !DT_HAS_CHOSEN(zephyr_ipc)
#error "CONFIG_QFABRIC_EXECUTOR_RPMSG needs the chosen nodes zephyr,ipc_shm and zephyr,ipc"
#endif

#define QF_ENDPOINT_NAME "qfabric"
/* struct rpmsg_hdr (src, dst, reserved, len, flags) is OpenAMP-internal: 16 bytes on the wire. */
#define QF_RPMSG_HDR_LEN 16
#define QF_RPMSG_PAYLOAD_MAX (RPMSG_BUFFER_SIZE - QF_RPMSG_HDR_LEN)

#define SHM_NODE DT_CHOSEN(zephyr_ipc_shm)
#define SHM_SIZE DT_REG_SIZE(SHM_NODE)

#if CONFIG_IPM_MAX_DATA_SIZE > 0
#define IPM_SEND(dev, w, id, d, s) ipm_send(dev, w, id, d, s)
#else
#define IPM_SEND(dev, w, id, d, s) ipm_send(dev, w, id, NULL, 0)
#endif

static const struct device *const ipm_handle = DEVICE_DT_GET(DT_CHOSEN(zephyr_ipc));

static metal_phys_addr_t shm_physmap;
static metal_phys_addr_t rsc_tab_physmap;
static struct metal_io_region shm_io;
static struct metal_io_region rsc_io;
static struct rpmsg_virtio_device rvdev;
static void *rsc_table;
static struct rpmsg_endpoint qf_ept;

static K_SEM_DEFINE(qf_ipm_sem, 0, 1);

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

/* Runs in the rpmsg thread (rproc_virtio_notified), never in an interrupt. */
static int qf_rpmsg_rx(struct rpmsg_endpoint *ept, void *data, size_t len, uint32_t src,
		       void *priv)
{
	/* Only the rpmsg thread answers requests, so one buffer serves them all. */
	static uint8_t response[QF_RPMSG_PAYLOAD_MAX];
	struct qf_served served;
	int mtu = rpmsg_get_tx_buffer_size(ept);
	size_t cap = MIN(sizeof(response), (size_t)MAX(mtu, 0));
	int status = qf_executor_serve(data, len, response, cap, &served);

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
	LOG_INF("Linux closed the \"%s\" endpoint", QF_ENDPOINT_NAME);
}

/* The sink of chain results: never blocks a chain waiting for a buffer from Linux. */
static int qf_rpmsg_send(const uint8_t *frame, size_t len, void *ctx)
{
	struct rpmsg_endpoint *ept = ctx;

	if (!is_rpmsg_ept_ready(ept)) {
		return -ENOTCONN;
	}
	int mtu = rpmsg_get_tx_buffer_size(ept);

	if (mtu < 0 || len > (size_t)mtu) {
		return -EMSGSIZE;
	}
	return rpmsg_trysend(ept, frame, (int)len) < 0 ? -ENOBUFS : 0;
}

static int qf_platform_init(void)
{
	struct metal_init_params metal_params = METAL_INIT_DEFAULTS;
	int rsc_size;
	int status = metal_init(&metal_params);

	if (status != 0) {
		LOG_ERR("metal_init: %d", status);
		return status;
	}
	void *shm = qf_executor_rpmsg_shm();

	/* This core addresses the memory at its physical address (no MMU). */
	shm_physmap = (metal_phys_addr_t)(uintptr_t)shm;
	metal_io_init(&shm_io, shm, &shm_physmap, SHM_SIZE, -1, 0,
		      addr_translation_get_ops(shm_physmap));
	rsc_table_get(&rsc_table, &rsc_size);
	rsc_tab_physmap = (uintptr_t)rsc_table;
	metal_io_init(&rsc_io, rsc_table, &rsc_tab_physmap, rsc_size, -1, 0, NULL);

	if (!device_is_ready(ipm_handle)) {
		LOG_ERR("IPM device %s is not ready", ipm_handle->name);
		return -ENODEV;
	}
	ipm_register_callback(ipm_handle, qf_ipm_callback, NULL);
	return ipm_set_enabled(ipm_handle, 1);
}

static struct rpmsg_device *qf_create_rpmsg_vdev(void)
{
	struct fw_rsc_vdev_vring *vring;
	struct virtio_device *vdev = rproc_virtio_create_vdev(
		VIRTIO_DEV_DEVICE, VDEV_ID, rsc_table_to_vdev(rsc_table), &rsc_io, NULL,
		qf_mailbox_notify, NULL);

	if (vdev == NULL) {
		LOG_ERR("failed to create the rpmsg vdev");
		return NULL;
	}
	/* Blocks until Linux remoteproc has set up the vdev (status DRIVER_OK). */
	rproc_virtio_wait_remote_ready(vdev);

	vring = rsc_table_get_vring0(rsc_table);
	if (rproc_virtio_init_vring(vdev, 0, vring->notifyid, (void *)(uintptr_t)vring->da,
				    &rsc_io, vring->num, vring->align) != 0) {
		goto failed;
	}
	vring = rsc_table_get_vring1(rsc_table);
	if (rproc_virtio_init_vring(vdev, 1, vring->notifyid, (void *)(uintptr_t)vring->da,
				    &rsc_io, vring->num, vring->align) != 0) {
		goto failed;
	}
	if (rpmsg_init_vdev(&rvdev, vdev, NULL, &shm_io, NULL) != 0) {
		goto failed;
	}
	return rpmsg_virtio_get_rpmsg_device(&rvdev);

failed:
	LOG_ERR("failed to set up the vrings");
	rproc_virtio_remove_vdev(vdev);
	return NULL;
}

static void qf_rpmsg_thread(void *arg1, void *arg2, void *arg3)
{
	ARG_UNUSED(arg1);
	ARG_UNUSED(arg2);
	ARG_UNUSED(arg3);
	struct rpmsg_device *rpdev;
	int status = qf_platform_init();

	if (status != 0) {
		LOG_ERR("platform init failed: %d", status);
		return;
	}
	rpdev = qf_create_rpmsg_vdev();
	if (rpdev == NULL) {
		metal_finish();
		return;
	}
	status = rpmsg_create_ept(&qf_ept, rpdev, QF_ENDPOINT_NAME, RPMSG_ADDR_ANY,
				  RPMSG_ADDR_ANY, qf_rpmsg_rx, qf_rpmsg_unbind);
	if (status != 0) {
		LOG_ERR("endpoint \"%s\" not created: %d", QF_ENDPOINT_NAME, status);
		return;
	}
	qf_executor_sink_set(qf_rpmsg_send, &qf_ept);
	LOG_INF("serving QFabric frames on rpmsg endpoint \"%s\" (%d-byte messages)",
		QF_ENDPOINT_NAME, rpmsg_get_tx_buffer_size(&qf_ept));
	while (true) {
		(void)k_sem_take(&qf_ipm_sem, K_FOREVER);
		rproc_virtio_notified(rvdev.vdev, VRING1_ID);
	}
}

K_THREAD_DEFINE(qf_rpmsg, CONFIG_QFABRIC_EXECUTOR_RPMSG_STACK_SIZE, qf_rpmsg_thread, NULL, NULL,
		NULL, CONFIG_QFABRIC_EXECUTOR_RPMSG_PRIORITY, 0, 0);
