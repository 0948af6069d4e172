/*
 * native_sim: the shared memory of the rpmsg link. A board has it at a physical address (the
 * chosen zephyr,ipc_shm node's, which the module's weak qf_executor_rpmsg_shm() returns); in a
 * native_sim process any fixed address could collide with the host's mappings, so the memory is
 * this image's own buffer and both ends (the executor and the host the test plays) use it. The
 * image is linked without PIE, so the buffer sits below 4 GiB where the resource table's 32-bit
 * device addresses can name it (host_start() checks).
 */
#include <zephyr/kernel.h>
#include <zephyr/devicetree.h>

#include <qfabric/executor.h>

static uint8_t ipc_shm[DT_REG_SIZE(DT_CHOSEN(zephyr_ipc_shm))] __aligned(4096);

void *qf_executor_rpmsg_shm(void)
{
	return ipc_shm;
}
