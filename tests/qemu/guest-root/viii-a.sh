#!/bin/sh
# The QFabric paper's Section VIII-A experiment, inside the virtual board's guest (run by
# scripts/viii-a, which puts the parameters below in front of this file). With the paper's
# method (`qf profile`: per task x domain x load x caller, warm-up excluded, outputs checked
# against the reference), it measures:
#   1. per call: the task in Linux (persistent executor) and on the MCU dispatched by the kernel
#      over shared memory, with no userspace relay: through qfabric_rpmsg's /dev/qfabric0
#      (DISPATCH=qfabric-dev, which also timestamps each call in the kernel) or rpmsg_char;
#   2. a resident chain: the MCU releases the task with its own timer and sends only results,
#      which a Linux thread reads (`qf resident observe`).
# Raw observations and traces go to the host as QFDATA lines; `qf report` there answers.
set -u
. /tests/lib.sh
: "${SAMPLES:=300}" "${WARMUP:=30}" "${TASKS:=add,crc32,fir_x64}" "${LOADS:=idle,cpu:2,rt:1}"
: "${CALLERS:=ordinary,fifo}" "${PERIOD_US:=10000}" "${CHAIN_TASK:=crc32}" "${CHAIN_SAMPLES:=300}"
: "${DISPATCH:=qfabric-dev}" "${IRQ_FIFO:=}" "${MCU:=emulator}"
campaign=/tmp/campaign
case "$DISPATCH" in
  qfabric-dev) mcu_path=--mcu-dev; node_up() { test -c /dev/qfabric0; } ;;
  # `qf resident observe` reads through rpmsg_char unless told --mcu-dev.
  *) mcu_path=--mcu-rpmsg; node_up() { ctrl_dev; } ;;
esac

# The raw data travels as QFDATA lines on the serial console, where a kernel message printed
# meanwhile would land inside a line (seen once: "random: crng init done" in a CSV row). Keep
# kernel messages off the console while measuring; the ring buffer is printed at the end, so
# the harness still checks it for BUG/Oops/WARNING.
dmesg -n 1

echo "QFTEST PLAN $((4 + $([ -n "$IRQ_FIFO" ] && echo 1 || echo 0)))"
check module-load sh -c 'insmod /qfabric_rproc.ko && insmod /qfabric_rpmsg.ko'
if wait_for 120 attached && wait_for 60 channel && wait_for 10 node_up; then
  pass board-up "$(dmesg | grep 'attached to MCU' | tail -n 1); MCU path $mcu_path"
else fail board-up "state $(rproc_state)"; fi
# The rpmsg receive path runs in the vring interrupt's thread (SCHED_FIFO 50 by default).
[ -n "$IRQ_FIFO" ] && check irq-fifo qf-board-guest irq-fifo --name qfabric-vring --priority "$IRQ_FIFO"

echo "viii-a: per call: tasks $TASKS, loads $LOADS, callers $CALLERS, $SAMPLES samples after $WARMUP"
if qf profile --out "$campaign" --domains linux,mcu "$mcu_path" --tasks "$TASKS" --loads "$LOADS" \
  --callers "$CALLERS" --warmup "$WARMUP" --samples "$SAMPLES" --min-samples "$SAMPLES" --quiet \
  >/tmp/profile.txt 2>&1; then
  pass per-call "$(($(wc -l </tmp/profile.txt) - 1)) cells"
else fail per-call "$(tail -n 3 /tmp/profile.txt | tr '\n' ' ')"; fi
cat /tmp/profile.txt
for f in "$campaign"/profile/*/*/observations.csv "$campaign"/traces/*/*/*.csv; do
  [ -f "$f" ] && emit "${f#"$campaign"/}" "$f"
done

echo "viii-a: resident chain: $CHAIN_TASK every $PERIOD_US us, $CHAIN_SAMPLES results per cell"
# Installed and started by control frames through the same path the results come back on, under
# the smallest free id (1 on the emulator; the Zephyr image's own chain holds 1, so 2 there): its
# results carry that id, the MCU's other chains' are skipped.
observe_path=""
[ "$mcu_path" = --mcu-dev ] && observe_path=--mcu-dev
# shellcheck disable=SC2086 # empty or one flag
if chain=$(qf resident install --task "$CHAIN_TASK" --period-us "$PERIOD_US" --start "$mcu_path" 2>/tmp/install.txt) &&
  qf resident observe $observe_path --chain "$chain" --task "$CHAIN_TASK" --period-us "$PERIOD_US" --loads "$LOADS" \
    --callers "$CALLERS" --samples "$CHAIN_SAMPLES" --out "$campaign" >/tmp/resident.txt 2>&1; then
  pass resident "chain $chain: $(($(wc -l </tmp/resident.txt) - 1)) cells"
else fail resident "$(cat /tmp/install.txt /tmp/resident.txt | tail -n 3 | tr '\n' ' ')"; fi
# The emulator's own view of the chain for the report (mcu-status.txt); the Zephyr image has no
# control socket, its view is `qf resident status` below.
[ "$MCU" = emulator ] && host status
if [ -n "${chain:-}" ]; then
  qf resident status "$chain" "$mcu_path"
  qf resident remove "$chain" "$mcu_path"
fi
cat /tmp/resident.txt
for f in "$campaign"/resident/*/*/observations.csv; do [ -f "$f" ] && emit "${f#"$campaign"/}" "$f"; done

dmesg
echo "QFTEST DONE"
poweroff -f
