#!/bin/sh
# The checks run inside the guest when the MCU is a machine of its own (tests/qemu/run with
# QF_MCU=zephyr: the executor sample on QEMU's Cortex-M33, reached through qf-board-bridge).
# Protocol with tests/qemu/run: /tests/lib.sh. Round-trip figures are printed as QFDATA lines
# (collected with QF_COLLECT) and on the console.
set -u
. /tests/lib.sh
qfg=/bin/qf-board-guest
frames=10000

echo "QFTEST PLAN 22"

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

# Resident chains through /dev/qfabric0 (docs/resident-chains.md), the flow of guest.sh's checks
# against whichever MCU this is: a second chain installed and started by control frames beside
# chain 1, admitted by the MCU's own bandwidth test; the results of each read through the device,
# the other's skipped (none lost, every output right); stopped, then nothing more and its counters
# frozen and equal to what Linux received; every refusal named with the MCU's list and statuses
# unchanged (observe_ok, refused_unchanged: /tests/lib.sh); a chain over the bound refused, then
# admitted once chain 7 is gone. The MCU's own reservations (the Zephyr image's threads and chain
# 1) and its chain slots are read from it, not assumed.
dev=--mcu-dev=/dev/qfabric0
add_chain="--task add --request {\"a\":40,\"b\":2}"
board_resident_install() {
  [ "$(qf resident install --chain 7 $add_chain --period-us 20000 --budget-us 1000 $dev)" = 7 ] &&
    qf resident start 7 $dev && qf resident list $dev | tr '\n' ' '
}
check resident-dev-install board_resident_install
check resident-dev-results-7 observe_ok 7 40 $add_chain --period-us 20000
check resident-dev-results-1 observe_ok 1 20 --template "$($qfg chain-template --epoch 1)" --period-us 100000
board_resident_stop() {
  resident_stopped 7 45 $add_chain --period-us 20000 &&
    echo "stopped after $releases releases, $results OK results, 0 rejected," \
      "$(json_field "$after" not_delivered) not delivered, lateness max $(json_field "$after" lateness_max_us) us," \
      "$(json_field "$after" deadline_misses) deadline misses; nothing since (chain 1 ran on)"
}
check resident-dev-stop board_resident_stop
# Every chain's counters (board/resident-status.txt in the collection).
qf resident status $dev >/tmp/resident-status.txt 2>&1
emit board/resident-status.txt /tmp/resident-status.txt
board_resident_refusals() {
  refused_unchanged id_in_use install --chain 7 --task add --period-us 10000 $dev &&
    refused_unchanged not_installed start 99 $dev &&
    refused_unchanged not_installed remove 99 $dev &&
    refused_unchanged "--period-us 50" install --chain 8 --task add --period-us 50 $dev || return 1
  # Chains without a budget (no reservation) until the MCU's slots are taken.
  filled=""
  for c in 20 21 22 23 24 25 26 27; do
    if ! qf resident install --chain $c --task add --period-us 100000 $dev >/tmp/fill.log 2>&1; then
      grep -q table_full /tmp/fill.log || { cat /tmp/fill.log; return 1; }
      break
    fi
    filled="$filled $c"
  done
  refused_unchanged table_full install --chain 28 --task add --period-us 100000 $dev || return 1
  for c in $filled; do qf resident remove $c $dev >/dev/null || return 1; done
  echo "id_in_use, not_installed, table_full (free slots filled first with chain${filled:- none}) named, --period-us checked; MCU unchanged each time"
}
check resident-dev-refusals board_resident_refusals
# Over the bound by half of chain 7's reservation, whatever the MCU has reserved already: refused;
# with chain 7 removed, the same install is admitted. Both read from the MCU: a reservation is
# budget/period as the MCU keeps them, in whole kernel ticks on Zephyr (10 ms on mps2/an521:
# chain 7's 1 ms per 20 ms reserves 500000 ppm there, 50000 on the emulator), so the request's
# period is ten ticks and the half-reservation margin outweighs a tick's rounding.
board_resident_admission() {
  list=$(qf resident list --json $dev) && status7=$(qf resident status 7 --json $dev) || return 1
  reserved=$(json_field "$list" reserved_ppm) bound=$(json_field "$list" bound_ppm)
  chain7=$(json_field "$status7" reserved_ppm)
  budget=$(( (bound - reserved + chain7 / 2) / 10 ))
  [ "$budget" -gt 0 ] && [ "$budget" -le 100000 ] ||
    { echo "reserved $reserved of $bound ppm, chain 7 $chain7: no budget to try"; return 1; }
  refused_unchanged over_bound install --chain 8 --task add --period-us 100000 --budget-us $budget $dev &&
    qf resident remove 7 $dev >/dev/null &&
    [ "$(qf resident install --chain 8 --task add --period-us 100000 --budget-us $budget $dev)" = 8 ] &&
    after=$(qf resident list --json $dev) && qf resident remove 8 $dev >/dev/null &&
    [ "$(qf resident list --json $dev | grep -c chain_id)" = 1 ] &&
    echo "reserved $reserved of $bound ppm with chain 7 ($chain7): a $budget/100000 us chain refused over_bound;" \
      "without chain 7 admitted (reserved $(json_field "$after" reserved_ppm) ppm); chain 1 alone again"
}
check resident-dev-admission board_resident_admission

# MCU reset during traffic: the heartbeat watchdog (or the new generation) reports a crash, the
# caller, which had replies until then, gets ENODEV (`--until-gone`: a failure before any reply, a
# wrong reply or another error fails the check), the firmware re-attaches, traffic resumes. A
# fresh epoch, as `qf`'s clients start theirs (qf_execution::session): the wall clock's seconds,
# newer than the epoch the resident observers above left `add` at (a fixed small one is refused
# as stale from the first frame).
epoch=$(date +%s)
crashes_before=$(count_dmesg 'crash detected in')
$qfg dev-frames --count 1000000 --epoch "$epoch" --until-gone >/tmp/bg-dev.log 2>&1 &
bg_dev=$!
sleep 3
host mcu-reset
if wait_for 60 sh -c "[ \$(dmesg | grep -c 'crash detected in') -gt $crashes_before ]"; then
  pass mcu-reset-reported "$(dmesg | grep -E 'watchdog:|crash detected' | tail -n 2 | tr '\n' ' ')"
else fail mcu-reset-reported "no new 'crash detected' in dmesg"; fi
wait "$bg_dev"; bg_status=$?
if [ "$bg_status" -eq 0 ]; then pass mcu-reset-caller-error "$(tail -n 1 /tmp/bg-dev.log)"
else fail mcu-reset-caller-error "status $bg_status: $(tail -n 3 /tmp/bg-dev.log | tr '\n' ' ')"; fi
if wait_for 180 sh -c "dmesg | grep -q 'attached to MCU generation 2 '" && wait_for 30 attached; then
  pass mcu-reset-reattached "$(dmesg | grep 'attached to MCU' | tail -n 1)"
else fail mcu-reset-reattached "state $(rproc_state); $(dmesg | grep -E 'qfabric|remoteproc' | tail -n 3 | tr '\n' ' ')"; fi
wait_for 60 channel && wait_for 10 test -c /dev/qfabric0
check mcu-reset-traffic-resumes $qfg dev-frames --count 1000 --all-tasks --epoch $((epoch + 1))

echo "QFTEST DONE"
poweroff -f
