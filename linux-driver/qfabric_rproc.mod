/work/wt/kernel/linux-driver/qfabric_rproc.o
