# Sourced by scripts/install/*: apt_get, Debian's apt-get that waits while another apt holds its
# locks (on a freshly booted machine, apt's daily update and unattended-upgrades often do)
# instead of failing at once with "Could not get lock". The dpkg lock is waited for by apt itself
# (DPkg::Lock::Timeout); the package lists' lock, which `apt-get update` takes and that option
# does not cover, by trying again. Any other failure is reported as apt-get printed it.
QF_APT_WAIT=${QF_APT_WAIT:-600}

apt_get() {
  local err waited=0 status
  err=$(mktemp)
  while :; do
    status=0
    DEBIAN_FRONTEND=noninteractive apt-get -o "DPkg::Lock::Timeout=$QF_APT_WAIT" "$@" 2>"$err" ||
      status=$?
    if [ $status != 0 ] && grep -q 'Could not get lock' "$err" && [ $waited -lt "$QF_APT_WAIT" ]; then
      [ $waited = 0 ] &&
        echo "apt-get $1: another apt holds its lock ($(grep -m1 -o 'held by process.*' "$err" ||
          echo 'a lock')); waiting up to ${QF_APT_WAIT} s" >&2
      sleep 5
      waited=$((waited + 5))
      continue
    fi
    cat "$err" >&2
    rm -f "$err"
    return $status
  done
}
