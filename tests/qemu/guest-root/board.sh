#!/bin/sh
# The checks run inside the guest when the MCU is a machine of its own (tests/qemu/run with
# QF_MCU=zephyr: the executor sample on QEMU's Cortex-M33, reached through qf-board-bridge).
# Protocol with tests/qemu/run: /tests/lib.sh. Round-trip figures are printed as QFDATA lines
# (collected with QF_COLLECT) and on the console.
set -u
. /tests/lib.sh
qfg=/bin/qf-board-guest
frames=10000

echo "QFTEST PLAN 20"

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

# Resident chains through /dev/qfabric0 (docs/resident-chains.md): a second chain installed and
# started by control frames beside chain 1, admitted by the MCU's own bandwidth test, its
# results told apart from chain 1's (none lost, every output right), stopped with its counters
# frozen, then removed; every refusal named with the MCU's list and statuses unchanged
# (observe_ok, refused_unchanged: /tests/lib.sh). The image has two chain slots
# (CONFIG_QFABRIC_EXECUTOR_MAX_CHAINS), chain 1 holds one.
dev=--mcu-dev=/dev/qfabric0
add_chain="--task add --request {\"a\":40,\"b\":2}"
board_resident_install() {
  [ "$(qf resident install --chain 7 $add_chain --period-us 20000 --budget-us 1000 $dev)" = 7 ] &&
    qf resident start 7 $dev && qf resident list $dev | tr '\n' ' '
}
check resident-dev-install board_resident_install
check resident-dev-results observe_ok 7 40 $add_chain --period-us 20000
board_resident_stop() {
  qf resident stop 7 $dev >/dev/null || return 1
  after=$(qf resident status 7 --json $dev) || return 1
  sleep 1
  releases=$(json_field "$after" releases) results=$(json_field "$after" results)
  [ "$(qf resident status 7 --json $dev)" = "$after" ] && [ "$(json_field "$after" state)" = stopped ] &&
    [ "$releases" -ge 40 ] && [ "$releases" = "$results" ] && [ "$(json_field "$after" rejected)" = 0 ] &&
    echo "stopped after $releases releases, $results OK results; counters unchanged 1 s later"
}
check resident-dev-stop board_resident_stop
board_resident_refusals() {
  refused_unchanged id_in_use install --chain 7 --task add --period-us 10000 $dev &&
    refused_unchanged table_full install --chain 8 --task add --period-us 100000 $dev &&
    qf resident remove 7 $dev >/dev/null &&
    refused_unchanged over_bound install --chain 8 --task add --period-us 10000 --budget-us 9900 $dev &&
    refused_unchanged not_installed start 7 $dev &&
    [ "$(qf resident install --chain 8 --task add --period-us 10000 --budget-us 1000 $dev)" = 8 ] &&
    qf resident remove 8 $dev >/dev/null &&
    [ "$(qf resident list --json $dev | grep -c chain_id)" = 1 ] &&
    echo "id_in_use, table_full, over_bound, not_installed named, MCU unchanged each time; a chain within the bound admitted; chain 1 alone again"
}
check resident-dev-refusals board_resident_refusals

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
