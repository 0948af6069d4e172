#!/bin/sh
# The guest's checks of qfabric_rproc against malformed resource tables (tests/qemu/run with
# QF_GUEST_SCRIPT=guest-root/table.sh and QF_EMU_ARGS='--defect table-version', the emulator as
# the MCU, so the first defect is there before the driver looks): the emulator restarts as an MCU
# image publishing one defect after another (`qf-mcu-emu ctl defect KIND`); for each the driver
# must refuse the table with an error naming the defect as qf_resource_table::board names it,
# and register no remoteproc device. An MCU that does not boot is waited for, named. Then a good
# table: the driver attaches and frames flow. The harness checks the kernel log for oopses/WARNs.
# Protocol with tests/qemu/run: /tests/lib.sh.
set -u
. /tests/lib.sh
qfg=/bin/qf-board-guest

# kind|what the driver must print
defects="table-version|Version(2)
table-entries|Entries(2)
table-entry-offset|EntryOffset(200)
table-entry-type|EntryType(0)
table-vdev-id|VdevId(3)
table-config-len|ConfigLen(8)
table-vrings|Vrings(1)
table-vring-num|VringNum { vring: 1, num: 100 }
table-vring-align|VringAlign { vring: 0, align: 8 }
table-vring-da|VringDa { vring: 1, da: 268500992 }
table-slot|BadTable { offset: 4096, size: 8192 }"

echo "QFTEST PLAN $(( $(echo "$defects" | wc -l) + 5 ))"

refused() { dmesg | grep -F "resource table is malformed, not attaching: $1" | tail -n 1; }
in_dmesg() { dmesg | grep -qF "$1"; }
no_rproc() { [ ! -e /sys/class/remoteproc/remoteproc0 ]; }

check module-load insmod /qfabric_rproc.ko
echo "$defects" | while IFS='|' read -r kind text; do
  [ "$kind" = table-version ] || host defect "$kind"
  if wait_for 20 in_dmesg "not attaching: $text"; then
    if no_rproc; then pass "refused-$kind" "$(refused "$text")"
    else fail "refused-$kind" "named, but a remoteproc device exists: $(rproc_state)"; fi
  else
    fail "refused-$kind" "no 'not attaching: $text' in dmesg: $(dmesg | grep qfabric_rproc | tail -n 2 | tr '\n' ' ')"
  fi
done

# An MCU that never boots: the driver waits, saying why (the control block has no magic).
host defect no-boot
if wait_for 20 in_dmesg "waiting for the MCU's resource table: NoMagic(0)"; then
  if no_rproc; then pass waits-for-no-boot "$(dmesg | grep -F 'NoMagic(0)' | tail -n 1)"
  else fail waits-for-no-boot "a remoteproc device exists: $(rproc_state)"; fi
else fail waits-for-no-boot "$(dmesg | grep qfabric_rproc | tail -n 2 | tr '\n' ' ')"; fi

# A good image: the same driver attaches, the channel comes up and frames flow.
host defect none
if wait_for 60 attached; then pass attach-after-defects "$(dmesg | grep 'attached to MCU' | tail -n 1)"
else fail attach-after-defects "state: $(rproc_state); $(dmesg | grep -E 'qfabric|remoteproc' | tail -n 3 | tr '\n' ' ')"; fi
if wait_for 60 channel; then pass name-service "$(ls /sys/bus/rpmsg/devices | tr '\n' ' ')"
else fail name-service "rpmsg devices: $(ls /sys/bus/rpmsg/devices | tr '\n' ' ')"; fi
insmod /qfabric_rpmsg.ko
wait_for 10 test -c /dev/qfabric0
check frames-after-defects $qfg dev-frames --count 200 --all-tasks --epoch 3

echo "QFTEST DONE"
poweroff -f
