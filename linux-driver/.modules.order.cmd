savedcmd_/work/wt/kernel/linux-driver/modules.order := {   echo /work/wt/kernel/linux-driver/qfabric_rproc.o; :; } > /work/wt/kernel/linux-driver/modules.order
