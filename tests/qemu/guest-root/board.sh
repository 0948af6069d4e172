#!/bin/sh
# The checks run inside the guest when the MCU is a machine of its own (tests/qemu/run with
# QF_MCU=zephyr: the executor sample on QEMU's Cortex-M33, reached through qf-board-bridge).
# Protocol with tests/qemu/run: /tests/lib.sh. Round-trip figures are printed as QFDATA lines
# (collected with QF_COLLECT) and on the console.
set -u
. /tests/lib.sh
qfg=/bin/qf-board-guest
frames=10000

echo "QFTEST PLAN 16"

check module-load insmod /qfabric_rproc.ko
if wait_for 120 attached; then pass attach "$(dmesg | grep 'attached to MCU' | tail -n 1)"
else fail attach "state: $(rproc_state); $(dmesg | grep -E 'qfabric|remoteproc' | tail -n 3 | tr '\n' ' ')"; fi
if wait_for 60 channel; then pass name-service "$(ls /sys/bus/rpmsg/devices | tr '\n' ' ')"
else fail name-service "rpmsg devices: $(ls /sys/bus/rpmsg/devices | tr '\n' ' ')"; fi
check qfdev-load insmod /qfabric_rpmsg.ko
if wait_for 10 test -c /dev/qfabric0; then pass qfdev-node "$(dmesg | grep 'qfabric_rpmsg: /dev/qfabric0' | tail -n 1)"
else fail qfdev-node "no /dev/qfabric0"; fi

# Malformed frames through rpmsg_char: every length up to 496 with a valid header and any
# payload (bad payload lengths, unknown content), each answered with the dispatcher's status. Before the resident
# chain's check: from then on the chain sends to the rpmsg_char address (the last writer).
if wait_for 10 ctrl_dev; then pass rpmsg-ctrl "$(ls /dev/rpmsg_ctrl*)"; else fail rpmsg-ctrl "no /dev/rpmsg_ctrl*"; fi
check malformed-sizes $qfg sizes --epoch 1

# The resident chain while epoch 1 is fresh in the add window (its bind request): crc32 of a fixed
# block every 100 ms on a periodic CBS thread (budget 2 ms, contract 1, epoch 1), which the
# Zephyr image starts at boot and the emulator gets installed here by control frames (the same
# template; an MCU that already runs chain 1, or knows no control frames, is left as it is).
# Read through rpmsg_char, every result compared byte for byte, no id may be skipped.
if ! qf resident status 1 --mcu-rpmsg >/dev/null 2>&1; then
  qf resident install --template "$($qfg chain-template --epoch 1)" --chain 1 --period-us 100000 \
    --budget-us 2000 --start --mcu-rpmsg || echo "board: the chain was not installed (the image's own runs from boot)"
fi
chain_out=$($qfg chain --count 100 --period-us 100000 --epoch 1 2>&1); status=$?
if [ $status -eq 0 ] && echo "$chain_out" | grep -q ' 0 ids skipped'; then pass resident-chain "$(echo "$chain_out" | tail -n 1)"
else fail resident-chain "$(echo "$chain_out" | tail -n 2 | tr '\n' ' ')"; fi

# Malformed frames through rpmsg_char (bad header, bad payload length, unknown task, replayed
# invocation, stale epoch): each answered with its status, then a valid one OK (epoch 5: after
# the chain's bind request at epoch 1, below the epochs that follow).
check malformed-frames $qfg malformed --epoch 5

# Every declared task through /dev/qfabric0, each reply compared byte for byte with
# qf_tasks::serve (a lost reply is a timeout, a wrong one a mismatch: either fails the check).
check qfdev-frames-all-tasks $qfg dev-frames --count "$frames" --all-tasks --epoch 11
# 32 callers at once (the driver's MAX_WAITERS), each woken by its own reply.
check qfdev-concurrent-32 timeout 600 $qfg dev-concurrent --threads 32 --count 50 --epoch 12
# Round trip of `add` through /dev/qfabric0, answered by the MCU (the Zephyr image, or the
# emulator when scripts/zephyr-check runs these checks with it for comparison).
$qfg dev-latency --count 2000 --epoch 13 >/tmp/latency.log 2>&1; status=$?
if [ $status -eq 0 ]; then pass qfdev-latency "$(tail -n 2 /tmp/latency.log | tr '\n' ' ')"
else fail qfdev-latency "$(tail -n 3 /tmp/latency.log | tr '\n' ' ')"; fi
emit board/latency.txt /tmp/latency.log

# MCU reset during traffic: the heartbeat watchdog (or the new generation) reports a crash,
# the waiting caller gets an error, the firmware re-attaches, traffic resumes.
crashes_before=$(count_dmesg 'crash detected in')
$qfg dev-frames --count 1000000 --epoch 16 >/tmp/bg-dev.log 2>&1 &
bg_dev=$!
sleep 3
host mcu-reset
if wait_for 60 sh -c "[ \$(dmesg | grep -c 'crash detected in') -gt $crashes_before ]"; then
  pass mcu-reset-reported "$(dmesg | grep -E 'watchdog:|crash detected' | tail -n 2 | tr '\n' ' ')"
else fail mcu-reset-reported "no new 'crash detected' in dmesg"; fi
wait "$bg_dev"; bg_status=$?
if [ "$bg_status" -ne 0 ]; then pass mcu-reset-caller-error "$(tail -n 1 /tmp/bg-dev.log)"
else fail mcu-reset-caller-error "traffic program did not notice: $(tail -n 1 /tmp/bg-dev.log)"; fi
if wait_for 180 sh -c "dmesg | grep -q 'attached to MCU generation 2 '" && wait_for 30 attached; then
  pass mcu-reset-reattached "$(dmesg | grep 'attached to MCU' | tail -n 1)"
else fail mcu-reset-reattached "state $(rproc_state); $(dmesg | grep -E 'qfabric|remoteproc' | tail -n 3 | tr '\n' ' ')"; fi
wait_for 60 channel && wait_for 10 test -c /dev/qfabric0
check mcu-reset-traffic-resumes $qfg dev-frames --count 1000 --all-tasks --epoch 17

echo "QFTEST DONE"
poweroff -f
