#!/bin/sh
# The checks run inside the guest (protocol with tests/qemu/run: /tests/lib.sh).
set -u
. /tests/lib.sh
qfg=/bin/qf-board-guest

# crash_and_recover NAME FAULT GENERATION: traffic running, the host injects FAULT (`crash`: the
# MCU publishes crashed; `hang`: only its heartbeat stops), the watchdog must report a crash, each
# traffic program must have had replies and then fail with the error of a vanished channel
# (`--until-gone`: EPIPE through rpmsg_char, ENODEV through /dev/qfabric0; a failure before any
# reply, a wrong reply or another error fails the check), and after the host restarts the MCU the
# driver must re-attach to GENERATION and traffic must flow again.
crash_and_recover() {
  name=$1 fault=$2 generation=$3
  # A fresh epoch, as `qf`'s clients start theirs (qf_execution::session): the wall clock's
  # seconds, newer than the epoch the resident observers above left `add` at (a fixed small one
  # is refused as stale from the first frame). Both programs share it: dev-frames numbers its
  # invocations far above frames', so both are accepted.
  epoch=$(date +%s)
  crashes_before=$(count_dmesg 'crash detected in')
  $qfg frames --count 1000000 --epoch "$epoch" --until-gone >/tmp/bg.log 2>&1 &
  bg=$!
  $qfg dev-frames --count 1000000 --epoch "$epoch" --until-gone >/tmp/bg-dev.log 2>&1 &
  bg_dev=$!
  sleep 2
  host "$fault"
  if wait_for 30 sh -c "[ \$(dmesg | grep -c 'crash detected in') -gt $crashes_before ]"; then
    pass "$name-reported" "$(dmesg | grep -E 'watchdog:|crash detected' | tail -n 2 | tr '\n' ' ')"
  else fail "$name-reported" "no new 'crash detected' in dmesg"; fi
  wait "$bg"; bg_status=$?
  if [ "$bg_status" -eq 0 ]; then pass "$name-traffic-interrupted" "$(tail -n 1 /tmp/bg.log)"
  else fail "$name-traffic-interrupted" "status $bg_status: $(tail -n 3 /tmp/bg.log | tr '\n' ' ')"; fi
  # A caller sleeping in QF_IOC_INVOKE when the channel goes must be woken with ENODEV.
  wait "$bg_dev"; bg_status=$?
  if [ "$bg_status" -eq 0 ] && [ ! -e /dev/qfabric0 ]; then pass "$name-qfdev-interrupted" "$(tail -n 1 /tmp/bg-dev.log)"
  else fail "$name-qfdev-interrupted" "status $bg_status, $(ls /dev/qfabric* 2>&1): $(tail -n 3 /tmp/bg-dev.log | tr '\n' ' ')"; fi
  host restart
  if wait_for 120 sh -c "dmesg | grep -q 'attached to MCU generation $generation '" && wait_for 30 attached; then
    pass "$name-recovered" "$(dmesg | grep 'attached to MCU' | tail -n 1)"
  else fail "$name-recovered" "state $(rproc_state); $(dmesg | grep -E 'qfabric|remoteproc' | tail -n 3 | tr '\n' ' ')"; fi
  wait_for 60 channel && wait_for 10 ctrl_dev
  check "$name-traffic-resumes" $qfg frames --count 1000 --epoch $((epoch + 1))
  wait_for 10 test -c /dev/qfabric0
  check "$name-qfdev-resumes" $qfg dev-frames --count 1000 --epoch $((epoch + 1))
}

echo "QFTEST PLAN 52"

# The MCU is not running yet (crashed before Linux looks): the driver binds, maps, waits.
host crash
sleep 3 # the harness polls the console every 200 ms
check module-load insmod /qfabric_rproc.ko
check probe sh -c 'ls -d /sys/bus/pci/drivers/qfabric_rproc/0000:* && dmesg | grep "qfabric_rproc: ivshmem peer 1"'
sleep 2
if dmesg | grep -q 'waiting for the MCU.s resource table: State(3)' && [ ! -e /sys/class/remoteproc/remoteproc0 ]; then
  pass waits-for-mcu "$(dmesg | grep 'waiting for the MCU' | tail -n 1)"
else fail waits-for-mcu "$(dmesg | grep qfabric | tail -n 2 | tr '\n' ' ')"; fi
host restart

# Attach and name service once the MCU runs (generation 2).
if wait_for 120 attached; then pass attach "remoteproc0: $(rproc_state); $(dmesg | grep 'attached to MCU' | tail -n 1)"
else fail attach "state: $(rproc_state)"; fi
if wait_for 60 channel; then pass name-service "$(ls /sys/bus/rpmsg/devices | tr '\n' ' ')"
else fail name-service "rpmsg devices: $(ls /sys/bus/rpmsg/devices | tr '\n' ' ')"; fi
if wait_for 10 ctrl_dev; then pass rpmsg-ctrl "$(ls /dev/rpmsg_ctrl*)"; else fail rpmsg-ctrl "no /dev/rpmsg_ctrl*"; fi

# rpmsg_char traffic.
check frames-10000 $qfg frames --count 10000 --epoch 1
check sizes $qfg sizes --epoch 2
check latency-10000 $qfg latency --count 10000 --epoch 3

# A resident chain (QFabric Section VIII-A): the MCU's timer releases crc32 on a fixed request
# every 10 ms and the MCU sends only the results, to the address that last wrote to it. Installed
# and started by control frames through rpmsg_char (`qf resident`); the program binds its
# endpoint with one request, then checks 200 results byte for byte.
check chain-install qf resident install --template "$($qfg chain-template --epoch 4)" --chain 1 \
  --period-us 10000 --start --mcu-rpmsg
check chain-results $qfg chain --count 200 --period-us 10000 --epoch 4
check chain-remove qf resident remove 1 --mcu-rpmsg

# The kernel dispatch device (qfabric_rpmsg, docs/qfabric-dev.md): /dev/qfabric0 on the same
# channel, next to rpmsg_char. Many callers share it; the kernel matches every reply to its caller.
check qfdev-load insmod /qfabric_rpmsg.ko
if wait_for 10 test -c /dev/qfabric0; then pass qfdev-node "$(dmesg | grep 'qfabric_rpmsg: /dev/qfabric0' | tail -n 1)"
else fail qfdev-node "no /dev/qfabric0: $(dmesg | grep qfabric_rpmsg | tail -n 2 | tr '\n' ' ')"; fi
check qfdev-frames-10000 $qfg dev-frames --count 10000 --epoch 5
stat_of() { echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
# Every waiter slot in use (32 callers, the driver's MAX_WAITERS), so every slot's wakeup is
# exercised: each reply must reach its own caller (dev-concurrent compares every reply byte for
# byte with what that caller's request gets). The MCU holds each reply 2 ms (it answers one
# request at a time), so the callers pile up in the kernel for the whole run instead of finishing
# in a fraction of a second, and QF_IOC_STATS sampled meanwhile must show several waiting at once.
# A caller its reply does not wake still gets the reply when its 5 s deadline ends the sleep, so
# a lost wakeup is not an error by itself. dev-concurrent therefore fails any call whose reply
# waited over half that deadline for its caller to run (the kernel's replied/woken timestamps;
# normally microseconds): replies that wake nobody, or another slot's caller (whose own caller is
# then woken by a neighbour's reply or by its deadline). `timeout` bounds the run besides: the
# 1600 calls take about 4 s.
host latency-us 2000
sleep 1 # the harness polls the console every 200 ms
rm -f /tmp/concurrent.status
concurrent_started=$(date +%s)
( timeout 60 $qfg dev-concurrent --threads 32 --count 50 --epoch 6 >/tmp/concurrent.log 2>&1
  echo $? >/tmp/concurrent.status ) &
peak_in_flight=0
while [ ! -e /tmp/concurrent.status ]; do
  in_flight=$(stat_of in_flight "$($qfg dev-stats 2>/dev/null)")
  [ "${in_flight:-0}" -gt "$peak_in_flight" ] && peak_in_flight=$in_flight
  sleep 0.1
done
wait
concurrent_status=$(cat /tmp/concurrent.status)
concurrent_took="$(( $(date +%s) - concurrent_started )) s"
host latency-us 0
sleep 1
if [ "$concurrent_status" -eq 0 ] && [ "$peak_in_flight" -ge 2 ]; then
  pass qfdev-concurrent "$concurrent_took, up to $peak_in_flight callers waiting at once; $(tail -n 1 /tmp/concurrent.log)"
else fail qfdev-concurrent "status $concurrent_status after $concurrent_took (143: stopped by timeout), up to $peak_in_flight waiting at once: $(tail -n 3 /tmp/concurrent.log | tr '\n' ' ')"; fi
# dev-abuse races a second party against the MCU's reply (a second caller with the same id:
# EBUSY; a signal: EINTR; a 1 ms timeout: ETIMEDOUT). With replies in ~50 us the reply can win
# every one of 100 attempts (seen once in CI: EINTR 0/100), so the MCU holds each reply 2 ms here:
# every race is then decided by the second party, and the kernel's late-reply accounting is
# exercised on every attempt instead of by chance.
host latency-us 2000
sleep 1 # the harness polls the console every 200 ms
check qfdev-abuse $qfg dev-abuse --epoch 7
host latency-us 0
sleep 1
check qfdev-latency-10000 $qfg dev-latency --count 10000 --epoch 8
# Garbage from the MCU (a broken or hostile remote): 200 frames that answer nothing, 4 in 5 no
# QFabric response at all (counted as malformed), 1 in 5 a stray response (queued for read(), 32
# at most, the rest dropped and counted). Sent to the endpoint that last wrote: /dev/qfabric0's.
# Three calls make /dev/qfabric0 the last writer (ids from 1; dev-frames below numbers from 2^40).
$qfg dev-latency --count 3 --epoch 9 >/dev/null
before=$($qfg dev-stats)
host garbage 200
sleep 2
# The 32 queued stray responses serve QF_IOC_RECV's checks, which take them all.
recv_out=$($qfg dev-recv 2>&1); recv_status=$?
after=$($qfg dev-stats)
if [ $recv_status -eq 0 ] && echo "$recv_out" | grep -q "took 32 frames"; then pass qfdev-recv "$recv_out"
else fail qfdev-recv "$recv_out"; fi
malformed=$(( $(stat_of malformed "$after") - $(stat_of malformed "$before") ))
stray=$(( $(stat_of unsolicited "$after") + $(stat_of unsolicited_dropped "$after") \
  - $(stat_of unsolicited "$before") - $(stat_of unsolicited_dropped "$before") ))
dropped=$(( $(stat_of unsolicited_dropped "$after") - $(stat_of unsolicited_dropped "$before") ))
if [ "$malformed" -eq 160 ] && [ "$stray" -eq 40 ] && [ "$dropped" -eq 8 ]; then
  pass qfdev-garbage "160 malformed, 40 stray responses (32 queued, 8 dropped); $after"
else fail qfdev-garbage "malformed +$malformed, stray +$stray; before: $before; after: $after"; fi
check qfdev-after-garbage $qfg dev-frames --count 1000 --epoch 9
# An open file pins the module: delete_module refuses with EWOULDBLOCK (the module is in use), the
# module and its device stay.
exec 3</dev/qfabric0
if busy_out=$(rmmod qfabric_rpmsg 2>&1); then fail qfdev-busy "unloaded with /dev/qfabric0 open"
elif echo "$busy_out" | grep -q 'Resource temporarily unavailable' && [ -d /sys/module/qfabric_rpmsg ] &&
  [ -c /dev/qfabric0 ]; then pass qfdev-busy "refused while /dev/qfabric0 is open: $busy_out"
else fail qfdev-busy "not refused as in use: $busy_out; $(ls -d /sys/module/qfabric_rpmsg /dev/qfabric0 2>&1 | tr '\n' ' ')"; fi
exec 3<&-

# Resident chains through /dev/qfabric0 (docs/resident-chains.md): control frames through
# QF_IOC_INVOKE install, start, stop and remove them, the MCU admits each by its CBS bandwidth
# test, and their results, tagged with the chain id, arrive on the device's read queue.
dev=--mcu-dev=/dev/qfabric0
resident_install() {
  [ "$(qf resident install --chain 11 --task crc32 --seed 3 --period-us 10000 --budget-us 1000 $dev)" = 11 ] &&
    [ "$(qf resident install --chain 12 --task add --request '{"a": 40, "b": 2}' --period-us 20000 --budget-us 1000 $dev)" = 12 ] &&
    qf resident start 11 $dev && qf resident start 12 $dev && qf resident list $dev | tr '\n' ' '
}
check resident-install resident_install
# Both chains run; each observer keeps only its chain's results (the other's are skipped):
# none lost, every output right (observe_ok, /tests/lib.sh).
check resident-results-11 observe_ok 11 100 --task crc32 --seed 3 --period-us 10000
check resident-results-12 observe_ok 12 40 --task add --request '{"a": 40, "b": 2}' --period-us 20000
# Stopped: no release and no result after the stop while chain 12 runs on; the counters agree
# (every release gave an OK result, none rejected). Then chain 12 stops too, so that the MCU's
# state holds still for the comparisons below.
resident_stop() {
  resident_stopped 11 100 --task crc32 --seed 3 --period-us 10000 &&
    qf resident stop 12 $dev >/dev/null &&
    echo "stopped after $releases releases, $results OK results, 0 rejected; nothing since (chain 12 ran on)"
}
check resident-stop resident_stop
# Every refusal by name, with a failing exit, and the MCU's list and status unchanged
# (refused_unchanged, /tests/lib.sh).
resident_refusals() {
  refused_unchanged over_bound install --chain 13 --task add --period-us 10000 --budget-us 8900 $dev &&
    refused_unchanged id_in_use install --chain 11 --task add --period-us 10000 $dev &&
    refused_unchanged not_installed start 99 $dev &&
    refused_unchanged not_installed remove 99 $dev &&
    refused_unchanged "--period-us 50" install --chain 13 --task add --period-us 50 $dev || return 1
  for c in 13 14 15 16 17 18; do qf resident install --chain $c --task add --period-us 100000 $dev >/dev/null || return 1; done
  refused_unchanged table_full install --chain 19 --task add --period-us 100000 $dev || return 1
  for c in 13 14 15 16 17 18; do qf resident remove $c $dev >/dev/null || return 1; done
  # A caller without permission on the device cannot install (nor open it).
  before=$(mcu_state)
  if out=$($qfg as-user --uid 65534 qf resident install --chain 20 --task add --period-us 10000 $dev 2>&1); then
    echo "installed without permission: $out"; return 1
  fi
  echo "$out" | grep -q "Permission denied" || { echo "$out"; return 1; }
  [ "$(mcu_state)" = "$before" ] || { echo "the unpermitted install changed the MCU"; return 1; }
  echo "over_bound, id_in_use, not_installed, table_full named, --period-us checked, no permission refused; MCU unchanged each time"
}
check resident-refusals resident_refusals
# Over the bound until another chain goes: 0.1 + 0.05 + 0.89 of the CPU is refused, removing
# chain 12 (0.05) admits it.
resident_admission() {
  refused_unchanged over_bound install --chain 13 --task add --period-us 10000 --budget-us 8900 $dev &&
    qf resident remove 12 $dev >/dev/null &&
    [ "$(qf resident install --chain 13 --task add --period-us 10000 --budget-us 8900 $dev)" = 13 ] &&
    qf resident list $dev | tail -n 1 && qf resident remove 13 $dev >/dev/null && qf resident remove 11 $dev >/dev/null &&
    [ "$(qf resident list --json $dev | grep -c chain_id)" = 0 ]
}
check resident-admission resident_admission

# MCU crash in the middle of traffic (state published), then a hang (heartbeat only): two
# recoveries in one boot.
crash_and_recover crash crash 3
crash_and_recover hang hang 4

# Unload while recovery waits for a hung MCU: remove must end the wait, shut the rproc down
# and leave nothing behind; after the MCU restarts, a fresh load attaches (generation 5).
crashes_before=$(count_dmesg 'crash detected in')
host hang
if wait_for 30 sh -c "[ \$(dmesg | grep -c 'crash detected in') -gt $crashes_before ]" &&
  timeout 60 rmmod qfabric_rproc && [ ! -e /sys/class/remoteproc/remoteproc0 ] && no_channel; then
  pass unload-while-mcu-down "$(dmesg | grep -E 'attach abandoned|removed' | tail -n 2 | tr '\n' ' ')"
else fail unload-while-mcu-down "$(dmesg | grep -E 'qfabric|remoteproc' | tail -n 3 | tr '\n' ' ')"; fi
host restart
sleep 1
check load-after-mcu-down insmod /qfabric_rproc.ko
if wait_for 120 sh -c "dmesg | grep -q 'attached to MCU generation 5 '" && wait_for 60 channel && wait_for 10 ctrl_dev; then
  pass reattach-after-mcu-down "$(dmesg | grep 'attached to MCU' | tail -n 1)"
else fail reattach-after-mcu-down "state $(rproc_state)"; fi

# Module unload and reload with traffic stopped.
check module-unload rmmod qfabric_rproc
if [ ! -e /sys/class/remoteproc/remoteproc0 ] && no_channel; then pass unload-clean "no remoteproc, no rpmsg channel"
else fail unload-clean "left: $(ls /sys/class/remoteproc /sys/bus/rpmsg/devices 2>&1 | tr '\n' ' ')"; fi
check module-reload insmod /qfabric_rproc.ko
if wait_for 120 attached && wait_for 60 channel && wait_for 10 ctrl_dev; then
  pass reattach "$(dmesg | grep 'attached to MCU' | tail -n 1)"
else fail reattach "state $(rproc_state)"; fi
check traffic-after-reload $qfg frames --count 1000 --epoch 30
# qfabric_rpmsg stayed loaded through both reloads of the remoteproc driver.
wait_for 10 test -c /dev/qfabric0
check qfdev-after-reload $qfg dev-frames --count 1000 --epoch 31
# Malformed frames through rpmsg_char (bad header, bad payload length, unknown task, replayed
# invocation, stale epoch): each answered with its status, then a valid one OK.
check malformed-frames $qfg malformed --epoch 32
check final-unload rmmod qfabric_rproc
if rmmod qfabric_rpmsg && [ ! -e /dev/qfabric0 ]; then pass qfdev-unload "$(dmesg | grep 'qfabric_rpmsg' | tail -n 1)"
else fail qfdev-unload "$(ls /dev/qfabric* 2>&1)"; fi

echo "QFTEST DONE"
poweroff -f
