/*
 * The rpmsg host side of the test: the part of Linux (remoteproc's vdev set-up and
 * virtio_rpmsg_bus) that the MCU executor talks to, done with OpenAMP's virtio driver role on the
 * executor's own resource table (rsc_table_get(), where Linux finds ".resource_table"), the
 * chosen shared memory and the host end of the loopback mailbox.
 */
#include <string.h>

#include <zephyr/kernel.h>
#include <zephyr/device.h>
#include <zephyr/drivers/ipm.h>
#include <zephyr/sys/atomic.h>

#include <openamp/open_amp.h>
#include <metal/sys.h>
#include <metal/io.h>
#include <resource_table.h>

#include <qfabric/executor.h>

#include "host.h"

#define SHM_SIZE DT_REG_SIZE(DT_CHOSEN(zephyr_ipc_shm))
/* Above the chain threads (5) and the executor's rpmsg thread (6): the host is another core and
 * takes what the MCU sends as soon as it is signalled.
 */
#define HOST_RX_PRIORITY 4

static const struct device *const host_ipm = DEVICE_DT_GET(DT_NODELABEL(ipm_host));

static uint8_t *shm;
static metal_phys_addr_t shm_phys;
static metal_phys_addr_t rsc_phys;
static struct metal_io_region shm_io;
static struct metal_io_region rsc_io;
static struct fw_rsc_vdev *vdev_rsc;
static struct virtio_device *vdev;
static struct rpmsg_virtio_device rvdev;
static struct rpmsg_virtio_shm_pool shpool;
static struct rpmsg_device *rdev;
static struct rpmsg_endpoint epts[HOST_EPT_COUNT];
static bool ept_open[HOST_EPT_COUNT];

K_MSGQ_DEFINE(host_rx_queue, sizeof(struct host_msg), 8, 8);
K_MSGQ_DEFINE(host_ns_queue, sizeof(struct host_announcement), 4, 4);
static K_SEM_DEFINE(host_kick_sem, 0, 1);
/* One bit per vring the MCU signalled since the host thread last looked. */
static atomic_t host_kicks;
static atomic_t host_stray;
static atomic_t host_lost_msgs;
static atomic_t host_ns_count;

/* The mailbox interrupt on the host core. */
static void host_ipm_callback(const struct device *dev, void *context, uint32_t id,
			      volatile void *data)
{
	ARG_UNUSED(dev);
	ARG_UNUSED(context);
	ARG_UNUSED(data);
	/* The host gave the vrings notify ids 0 and 1 (host_start()). */
	if (id < 2) {
		atomic_or(&host_kicks, BIT(id));
	} else {
		atomic_inc(&host_stray);
	}
	k_sem_give(&host_kick_sem);
}

/* What the host's virtqueues call to signal the MCU: the vring's (or vdev's) notify id. */
static int host_notify(void *priv, uint32_t id)
{
	ARG_UNUSED(priv);
	return ipm_send(host_ipm, 0, id, &id, sizeof(id));
}

/* The host's "interrupt thread": runs the virtqueue callbacks of each vring the MCU kicked. */
static void host_rx_main(void *arg1, void *arg2, void *arg3)
{
	ARG_UNUSED(arg1);
	ARG_UNUSED(arg2);
	ARG_UNUSED(arg3);
	while (true) {
		(void)k_sem_take(&host_kick_sem, K_FOREVER);
		atomic_val_t kicks = atomic_clear(&host_kicks);

		for (uint32_t id = 0; id < 2; id++) {
			if ((kicks & BIT(id)) == 0) {
				continue;
			}
			if (vdev == NULL || rproc_virtio_notified(vdev, id) != 0) {
				atomic_inc(&host_stray);
			}
		}
	}
}

K_THREAD_DEFINE(host_rx, 2048, host_rx_main, NULL, NULL, NULL, HOST_RX_PRIORITY, 0, 0);

static int host_ept_cb(struct rpmsg_endpoint *ept, void *data, size_t len, uint32_t src,
		       void *priv)
{
	ARG_UNUSED(priv);
	static struct host_msg msg;

	/* Only the host thread runs endpoint callbacks, so one staging buffer serves. */
	msg.len = len;
	msg.src = src;
	msg.ept = (enum host_endpoint)(ept - epts);
	msg.at = k_uptime_ticks();
	memcpy(msg.data, data, MIN(len, sizeof(msg.data)));
	if (k_msgq_put(&host_rx_queue, &msg, K_NO_WAIT) != 0) {
		atomic_inc(&host_lost_msgs);
	}
	return RPMSG_SUCCESS;
}

/* A name-service announcement for which the host has no endpoint yet (Linux creates the
 * channel device here; the test opens the endpoint itself).
 */
static void host_ns_bind(struct rpmsg_device *dev, const char *name, uint32_t dest)
{
	ARG_UNUSED(dev);
	struct host_announcement announcement = {.addr = dest};

	strncpy(announcement.name, name, sizeof(announcement.name) - 1);
	atomic_inc(&host_ns_count);
	if (k_msgq_put(&host_ns_queue, &announcement, K_NO_WAIT) != 0) {
		atomic_inc(&host_lost_msgs);
	}
}

int host_start(void)
{
	struct metal_init_params metal_params = METAL_INIT_DEFAULTS;
	struct fw_rsc_vdev_vring *vrings[2];
	void *rsc_table;
	int rsc_size;
	size_t used = 0;
	int status = metal_init(&metal_params);

	if (status != 0) {
		return status;
	}
	rsc_table_get(&rsc_table, &rsc_size);
	rsc_phys = (metal_phys_addr_t)(uintptr_t)rsc_table;
	metal_io_init(&rsc_io, rsc_table, &rsc_phys, rsc_size, -1, 0, NULL);
	shm = qf_executor_rpmsg_shm();
	shm_phys = (metal_phys_addr_t)(uintptr_t)shm;
	/* The resource table carries 32-bit device addresses. */
	if ((uint64_t)(uintptr_t)shm + SHM_SIZE > UINT32_MAX) {
		return -EFAULT;
	}
	metal_io_init(&shm_io, shm, &shm_phys, SHM_SIZE, -1, 0, NULL);

	if (!device_is_ready(host_ipm)) {
		return -ENODEV;
	}
	ipm_register_callback(host_ipm, host_ipm_callback, NULL);
	status = ipm_set_enabled(host_ipm, 1);
	if (status != 0) {
		return status;
	}

	/* As Linux's rproc_alloc_vring(): each vring from the shared memory, its address and the
	 * notify id Linux allocates (0 and 1 for the first vdev) written into the table. The rest
	 * of the memory is the rpmsg buffer pool (virtio_rpmsg_bus's receive and send buffers).
	 */
	vdev_rsc = rsc_table_to_vdev(rsc_table);
	vrings[0] = rsc_table_get_vring0(rsc_table);
	vrings[1] = rsc_table_get_vring1(rsc_table);
	for (int i = 0; i < 2; i++) {
		used = ROUND_UP(used, vrings[i]->align);
		vrings[i]->da = (uint32_t)(uintptr_t)(shm + used);
		vrings[i]->notifyid = i;
		used += vring_size(vrings[i]->num, vrings[i]->align);
	}
	used = ROUND_UP(used, 16);

	vdev = rproc_virtio_create_vdev(VIRTIO_DEV_DRIVER, VDEV_ID, vdev_rsc, &rsc_io, NULL,
					host_notify, NULL);
	if (vdev == NULL) {
		return -ENOMEM;
	}
	for (int i = 0; i < 2; i++) {
		status = rproc_virtio_init_vring(vdev, i, vrings[i]->notifyid,
						 (void *)(uintptr_t)vrings[i]->da, &shm_io,
						 vrings[i]->num, vrings[i]->align);
		if (status != 0) {
			return status;
		}
	}
	rpmsg_virtio_init_shm_pool(&shpool, shm + used, SHM_SIZE - used);
	/* Queues the receive buffers and sets DRIVER_OK: from here the MCU may talk. */
	status = rpmsg_init_vdev(&rvdev, vdev, host_ns_bind, &shm_io, &shpool);
	if (status != 0) {
		return status;
	}
	rdev = rpmsg_virtio_get_rpmsg_device(&rvdev);
	return 0;
}

uint8_t *host_shm(void)
{
	return shm;
}

size_t host_shm_size(void)
{
	return SHM_SIZE;
}

struct fw_rsc_vdev *host_vdev_rsc(void)
{
	return vdev_rsc;
}

int host_wait_announcement(struct host_announcement *out, k_timeout_t timeout)
{
	return k_msgq_get(&host_ns_queue, out, timeout) == 0 ? 0 : -EAGAIN;
}

int host_announcements(void)
{
	return (int)atomic_get(&host_ns_count);
}

int host_open(enum host_endpoint ept, const char *name, uint32_t dest)
{
	if (rdev == NULL) {
		return -ENODEV;
	}
	if (ept_open[ept]) {
		return -EALREADY;
	}
	int status = rpmsg_create_ept(&epts[ept], rdev, name, RPMSG_ADDR_ANY, dest, host_ept_cb,
				      NULL);

	ept_open[ept] = status == 0;
	return status;
}

void host_close(enum host_endpoint ept)
{
	if (ept_open[ept]) {
		rpmsg_destroy_ept(&epts[ept]);
		ept_open[ept] = false;
	}
}

int host_send(enum host_endpoint ept, const void *data, size_t len)
{
	return rpmsg_send(&epts[ept], data, (int)len);
}

int host_mtu(enum host_endpoint ept)
{
	return rpmsg_get_tx_buffer_size(&epts[ept]);
}

int host_receive(struct host_msg *out, k_timeout_t timeout)
{
	return k_msgq_get(&host_rx_queue, out, timeout) == 0 ? 0 : -EAGAIN;
}

int host_lost(void)
{
	return (int)atomic_get(&host_lost_msgs);
}

int host_stray_kicks(void)
{
	return (int)atomic_get(&host_stray);
}
