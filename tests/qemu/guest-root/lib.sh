# Shared by the guest scripts (sourced as /tests/lib.sh). Protocol with tests/qemu/run (read from
# the serial console):
#   QFTEST PLAN n             number of checks that follow
#   QFTEST PASS|FAIL name ... one line per check
#   QFHOST command            asks the harness to send `command` to the emulator's control socket
#   QFDATA path text          appends `text` to `path` in the harness's collection directory
#   QFTEST DONE               the guest finished (then it powers off)
pass() { echo "QFTEST PASS $1 ${2:-}"; }
fail() { echo "QFTEST FAIL $1 ${2:-}"; }
# check NAME COMMAND...: PASS with the command's last output line, FAIL with its last lines.
# Its variables are local (busybox ash): a caller's `name` survives it.
check() {
  local check_name=$1 check_out; shift
  if check_out=$("$@" 2>&1); then pass "$check_name" "$(echo "$check_out" | tail -n 1)"
  else fail "$check_name" "$(echo "$check_out" | tail -n 3 | tr '\n' ' ')"; fi
}
# wait_for SECONDS COMMAND...: until the command succeeds, polling every 100 ms.
wait_for() {
  local limit=$(( $1 * 10 )) i=0; shift
  while [ $i -lt $limit ]; do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; i=$((i + 1)); done
  return 1
}
host() { echo "QFHOST $*"; }
# emit PATH FILE: the file's lines as QFDATA lines (collected by the harness under PATH).
emit() { while IFS= read -r line; do echo "QFDATA $1 $line"; done <"$2"; }
rproc_state() { cat /sys/class/remoteproc/remoteproc0/state 2>/dev/null; }
attached() { [ "$(rproc_state)" = attached ]; }
channel() { ls /sys/bus/rpmsg/devices/ 2>/dev/null | grep -q '\.qfabric\.'; }
no_channel() { ! channel; }
ctrl_dev() { ls /dev/rpmsg_ctrl* >/dev/null 2>&1; }
dmesg_has() { dmesg | grep -q "$1"; }
count_dmesg() { dmesg | grep -c "$1"; }

# Resident chains through the endpoint in $dev (e.g. --mcu-dev=/dev/qfabric0), shared by guest.sh
# and board.sh. mcu_state: the MCU's chain list and statuses, without the counters of running
# chains (they move on by themselves; a stopped chain's must not); json_field JSON KEY: one field
# of `qf resident status --json` or `list --json`.
mcu_state() {
  mcu_statuses=$(qf resident list --json $dev && qf resident status --json $dev) || return 1
  echo "$mcu_statuses" | awk '
    /^  [{]/ { n = 0; running = 0; inside = 1 }
    !inside { print; next }
    { line[n++] = $0; if ($0 ~ /"state": "running"/) running = 1 }
    /^  [}]/ {
      for (i = 0; i < n; i++)
        if (!running || line[i] !~ /"(releases|results|overruns|budget_exhaustions|deadline_misses|lateness_max_us|compute_max_ns|not_delivered|rejected)":/) print line[i]
      inside = 0
    }'
}
json_field() { echo "$1" | sed -n "s/^ *\"$2\": \"*\([^,\"]*\)\"*,*$/\1/p" | head -n 1; }
# observe_ok CHAIN SAMPLES ARGS...: `qf resident observe` of that chain has SAMPLES results, 0 lost,
# 0 wrong (other chains' results are skipped); what it printed when not.
observe_ok() {
  chain=$1 samples=$2; shift 2
  out=$(qf resident observe --chain "$chain" "$@" --samples "$samples" --warmup 5 --out /tmp/resident $dev 2>&1) &&
    echo "$out" | awk -v n="$samples" 'NR == 2 { ok = ($3 == n && $4 == 0 && $5 == 0) } END { exit !ok }' &&
    echo "chain $chain: $(echo "$out" | tail -n 1)" || { echo "chain $chain: $out" | tail -n 3 | tr '\n' ' '; return 1; }
}
# refused_unchanged STATUS ARGS...: `qf resident ARGS` fails naming STATUS, and the MCU's list and
# statuses are as before (mcu_state).
refused_unchanged() {
  status=$1; shift
  before=$(mcu_state) || return 1
  if out=$(qf resident "$@" 2>&1); then echo "accepted: qf resident $*: $out"; return 1; fi
  echo "$out" | grep -q -e "$status" || { echo "qf resident $*: $out"; return 1; }
  [ "$(mcu_state)" = "$before" ] || { echo "qf resident $* changed the MCU"; return 1; }
}

# A stopped chain sends nothing more and its counters stay as they were: stops chain ID, waits for
# one result of it (`qf resident observe` with the given arguments must find none) and requires
# its status unchanged, stopped, at least MIN releases, one OK result each and none rejected.
# Leaves the status in $after and prints nothing on success.
# Usage: resident_stopped ID MIN OBSERVE-ARGS...
resident_stopped() {
  local id="$1" min="$2" before
  shift 2
  qf resident stop "$id" $dev >/dev/null || return 1
  before=$(qf resident status "$id" --json $dev) || return 1
  if qf resident observe --chain "$id" "$@" --samples 1 --warmup 0 \
    --out /tmp/resident-stopped $dev >/tmp/stopped.log 2>&1; then
    echo "a result of chain $id after its stop"; return 1
  fi
  grep -q "none within" /tmp/stopped.log || { cat /tmp/stopped.log; return 1; }
  after=$(qf resident status "$id" --json $dev) || return 1
  releases=$(json_field "$after" releases) results=$(json_field "$after" results)
  [ "$before" = "$after" ] && [ "$(json_field "$after" state)" = stopped ] &&
    [ "$releases" -ge "$min" ] && [ "$releases" = "$results" ] && [ "$(json_field "$after" rejected)" = 0 ]
}
