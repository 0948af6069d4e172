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
