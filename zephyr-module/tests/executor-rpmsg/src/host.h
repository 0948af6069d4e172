/*
 * The rpmsg host this test image plays for the MCU executor: what Linux remoteproc and
 * virtio_rpmsg_bus do on the other core, done with OpenAMP in the virtio driver ("master") role
 * over the executor's own resource table, shared memory and (loopback) mailbox.
 */
#ifndef QF_TEST_RPMSG_HOST_H_
#define QF_TEST_RPMSG_HOST_H_

#include <stddef.h>
#include <stdint.h>
#include <zephyr/kernel.h>
#include <openamp/open_amp.h>

/* The host's endpoints: the one it opens on the announced "qfabric" channel (what rpmsg_char
 * gives Linux userspace), and a second one that talks to the same MCU address.
 */
enum host_endpoint {
	HOST_EPT_QFABRIC,
	HOST_EPT_AUX,
	HOST_EPT_COUNT,
};

/* One message the MCU sent, as a host endpoint received it. */
struct host_msg {
	uint8_t data[RPMSG_BUFFER_SIZE];
	size_t len;
	/* MCU endpoint address it came from. */
	uint32_t src;
	enum host_endpoint ept;
	/* k_uptime_ticks() when the host's endpoint callback ran. */
	int64_t at;
};

/* A name-service announcement from the MCU. */
struct host_announcement {
	char name[RPMSG_NAME_SIZE];
	uint32_t addr;
};

/*
 * Sets up the vdev as Linux does before the MCU may use it: vrings carved from the shared memory
 * with their device addresses and notify ids written into the executor's resource table, the
 * features negotiated, the receive buffers queued, then status DRIVER_OK. Returns 0 or a negative
 * OpenAMP/errno code.
 */
int host_start(void);

/* The shared memory and the resource table as the host set them up (after host_start()). */
uint8_t *host_shm(void);
size_t host_shm_size(void);
struct fw_rsc_vdev *host_vdev_rsc(void);

/* Waits for the next name-service announcement; 0 or -EAGAIN. */
int host_wait_announcement(struct host_announcement *out, k_timeout_t timeout);
/* Announcements received so far. */
int host_announcements(void);

/* Creates endpoint @p ept named @p name, bound to MCU address @p dest (no announcement back,
 * like Linux's channels); 0, -EALREADY (it is open) or an OpenAMP error.
 */
int host_open(enum host_endpoint ept, const char *name, uint32_t dest);
/* Destroys it if open; OpenAMP sends the MCU a name-service "destroy" for a named endpoint. */
void host_close(enum host_endpoint ept);
/* rpmsg_send() on it: bytes sent or an OpenAMP error. */
int host_send(enum host_endpoint ept, const void *data, size_t len);
/* The largest message the endpoint can send. */
int host_mtu(enum host_endpoint ept);

/* Next received message; 0 or -EAGAIN. */
int host_receive(struct host_msg *out, k_timeout_t timeout);
/* Messages the host could not queue for the test (the queue was full), and mailbox signals
 * with an id that is no vring's.
 */
int host_lost(void);
int host_stray_kicks(void);

#endif /* QF_TEST_RPMSG_HOST_H_ */
