/*
 * A loopback mailbox for one image that plays both ends of an IPM link (the "vnd,ipm-loopback"
 * pair in the board overlay): ipm_send() on one instance runs the other instance's callback with
 * the same id and data, if that end has registered one and enabled it, as a mailbox interrupt on
 * the other core would. It runs in the sender's context; both users here only give a semaphore
 * from it, which is what they do in an interrupt too.
 */
#define DT_DRV_COMPAT vnd_ipm_loopback

#include <zephyr/kernel.h>
#include <zephyr/device.h>
#include <zephyr/drivers/ipm.h>

BUILD_ASSERT(DT_NUM_INST_STATUS_OKAY(DT_DRV_COMPAT) == 2,
	     "a loopback link is exactly two vnd,ipm-loopback nodes");

/* What a real mailbox carries with each signal: the executor sends the vring's notify id. */
#define IPM_LOOPBACK_MAX_DATA 4

struct ipm_loopback_config {
	/* Instance number: instance 0 signals 1 and 1 signals 0. */
	int index;
};

struct ipm_loopback_data {
	ipm_callback_t callback;
	void *user_data;
	bool enabled;
};

static const struct device *ipm_loopback_peer(const struct device *dev);

static int ipm_loopback_send(const struct device *dev, int wait, uint32_t id, const void *data,
			     int size)
{
	ARG_UNUSED(wait);
	const struct device *peer = ipm_loopback_peer(dev);
	struct ipm_loopback_data *to = peer->data;
	uint8_t copy[IPM_LOOPBACK_MAX_DATA] = {0};
	unsigned int key;
	ipm_callback_t callback;
	void *user_data;

	if (size < 0 || size > IPM_LOOPBACK_MAX_DATA || (size > 0 && data == NULL)) {
		return -EMSGSIZE;
	}
	if (size > 0) {
		memcpy(copy, data, size);
	}
	key = irq_lock();
	callback = to->enabled ? to->callback : NULL;
	user_data = to->user_data;
	irq_unlock(key);
	/* A disabled end drops the signal, as a masked mailbox interrupt would be lost. */
	if (callback != NULL) {
		callback(peer, user_data, id, copy);
	}
	return 0;
}

static void ipm_loopback_register_callback(const struct device *dev, ipm_callback_t cb,
					   void *user_data)
{
	struct ipm_loopback_data *data = dev->data;
	unsigned int key = irq_lock();

	data->callback = cb;
	data->user_data = user_data;
	irq_unlock(key);
}

static int ipm_loopback_max_data_size_get(const struct device *dev)
{
	ARG_UNUSED(dev);
	return IPM_LOOPBACK_MAX_DATA;
}

static uint32_t ipm_loopback_max_id_val_get(const struct device *dev)
{
	ARG_UNUSED(dev);
	return UINT32_MAX;
}

static int ipm_loopback_set_enabled(const struct device *dev, int enable)
{
	struct ipm_loopback_data *data = dev->data;

	data->enabled = enable != 0;
	return 0;
}

static DEVICE_API(ipm, ipm_loopback_api) = {
	.send = ipm_loopback_send,
	.register_callback = ipm_loopback_register_callback,
	.max_data_size_get = ipm_loopback_max_data_size_get,
	.max_id_val_get = ipm_loopback_max_id_val_get,
	.set_enabled = ipm_loopback_set_enabled,
};

#define IPM_LOOPBACK_DEFINE(n)                                                                     \
	static struct ipm_loopback_data ipm_loopback_data_##n;                                     \
	static const struct ipm_loopback_config ipm_loopback_config_##n = {.index = n};            \
	DEVICE_DT_INST_DEFINE(n, NULL, NULL, &ipm_loopback_data_##n, &ipm_loopback_config_##n,     \
			      POST_KERNEL, CONFIG_KERNEL_INIT_PRIORITY_DEVICE, &ipm_loopback_api);

DT_INST_FOREACH_STATUS_OKAY(IPM_LOOPBACK_DEFINE)

static const struct device *const ipm_loopback_devices[] = {
	DEVICE_DT_INST_GET(0),
	DEVICE_DT_INST_GET(1),
};

static const struct device *ipm_loopback_peer(const struct device *dev)
{
	const struct ipm_loopback_config *config = dev->config;

	return ipm_loopback_devices[config->index ^ 1];
}
