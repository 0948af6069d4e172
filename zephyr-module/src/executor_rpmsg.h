/*
 * The rpmsg device of the MCU executor (executor_rpmsg.c) as its platform layers use it: the IPM
 * platform in executor_rpmsg.c and the virtual board's in executor_vboard.c.
 */
#ifndef QFABRIC_EXECUTOR_RPMSG_H_
#define QFABRIC_EXECUTOR_RPMSG_H_

#include <stddef.h>
#include <openamp/open_amp.h>
#include <metal/io.h>

/* libmetal's initialisation, once before the first qf_rpmsg_open(): 0 or its error (logged). */
int qf_rpmsg_init(void);

/*
 * Brings up the rpmsg vdev of the resource table @p table (waiting for DRIVER_OK in its status),
 * its two vrings (at @p vring_va, or at the das Linux wrote in the table when NULL), the buffers
 * (@p buf_len bytes this core reads at @p buf_va and Linux addresses as @p buf_pa), and the
 * endpoint "qfabric", whose creation announces it to Linux; sets it as the chain sink.
 * @p notify rings Linux's doorbell. 0, or a negative errno (nothing left open).
 */
int qf_rpmsg_open(void *table, int table_size, void *const vring_va[2], void *buf_va,
		  metal_phys_addr_t buf_pa, size_t buf_len, rpvdev_notify_func notify);

/* Takes the endpoint and the vdev down (chains' results are dropped until the next open). */
void qf_rpmsg_close(void);

/* Linux rang the doorbell: serves what it queued (in the thread that opened the device). */
void qf_rpmsg_notified(void);

#endif /* QFABRIC_EXECUTOR_RPMSG_H_ */
