#!/usr/bin/env python3
"""Instructions of the executor's rpmsg path on the virtual board's Cortex-M33, from a QEMU exec
trace (`-icount shift=N -accel tcg,one-insn-per-tb=on -d exec,nochain -D LOG`) of the executor
sample built with vboard.overlay/vboard.conf while Linux sends requests (e.g. `add` only).

Windows, counted with qemu-overhead.py's call/return tracking (a call is counted from its first
instruction to the return that leaves it):

  qfabric      qf_rpmsg_rx, the endpoint's receive callback, without the subtree of OpenAMP's
               send (rpmsg_send_offchannel_raw): decoding, dispatch, the task, encoding
  callback     qf_rpmsg_rx whole: the above and OpenAMP's send (tx buffer, copy, virtqueue,
               the doorbell to Linux)
  notified     rproc_virtio_notified whole: OpenAMP's virtqueue work around the callback (taking
               the received buffer, returning it) on one doorbell

  board-path.py ELF [--objdump arm-none-eabi-objdump] < LOG
"""
import argparse
import importlib.util
import pathlib
import statistics
import sys

WINDOWS = {
    "qfabric": ("qf_rpmsg_rx", {"qf_rpmsg_rx": "rpmsg_send_offchannel_raw"}),
    "callback": ("qf_rpmsg_rx", {}),
    "notified": ("rproc_virtio_notified", {}),
}


def overhead_module():
    """qemu-overhead.py (its trace parsing and call/return tracking), loaded by path."""
    path = pathlib.Path(__file__).with_name("qemu-overhead.py")
    spec = importlib.util.spec_from_file_location("qemu_overhead", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def counts(overhead, lines, kinds, hook, excluded):
    """Instructions of every call of `hook`, with the subtree of `excluded[hook]` left out."""
    overhead.HOOKS = {hook: hook}
    overhead.EXCLUDED = excluded
    overhead.INCLUDED = {}
    return [count for _, count, _ in overhead.measure(iter(lines), kinds)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("elf", help="the traced image (zephyr.elf)")
    parser.add_argument("--objdump", default="arm-none-eabi-objdump")
    args = parser.parse_args()
    overhead = overhead_module()
    kinds = overhead.instruction_kinds(args.elf, args.objdump)
    lines = sys.stdin.readlines()
    print("window,calls,median,min,max (M33 instructions, QEMU exec trace)")
    found = False
    for name, (hook, excluded) in WINDOWS.items():
        samples = counts(overhead, lines, kinds, hook, excluded)
        if samples:
            found = True
            print(f"{name},{len(samples)},{statistics.median(samples):.0f},"
                  f"{min(samples)},{max(samples)}")
    if not found:
        sys.exit("board-path: no call of qf_rpmsg_rx or rproc_virtio_notified in the trace")


if __name__ == "__main__":
    main()
