/*
 * `qf events` shell command: dumps the scheduling event ring as CSV (qfabric's `qf sim --events`
 * format) over the shell, when the shell is in the image.
 */
#include <zephyr/kernel.h>
#include <qfabric/qfabric.h>

#ifdef CONFIG_SHELL
#include <zephyr/shell/shell.h>

static int cmd_qf_events(const struct shell *sh, size_t argc, char **argv)
{
	ARG_UNUSED(sh);
	ARG_UNUSED(argc);
	ARG_UNUSED(argv);
	qf_trace_dump();
	return 0;
}

SHELL_STATIC_SUBCMD_SET_CREATE(qf_cmds,
	SHELL_CMD(events, NULL, "Dump and drain the qfabric event ring as CSV", cmd_qf_events),
	SHELL_SUBCMD_SET_END);
SHELL_CMD_REGISTER(qf, &qf_cmds, "qfabric scheduler", NULL);
#endif /* CONFIG_SHELL */
