#!/usr/bin/env python3
"""Instructions of the executor's rpmsg path on the virtual board's Cortex-M33, from a QEMU exec
trace (`-icount shift=N -accel tcg,one-insn-per-tb=on -d exec,nochain -D LOG`, one line per
executed instruction) of the executor sample built with vboard.overlay/vboard.conf while Linux
sends requests (e.g. `add` only, with the resident chain off).

A window opens at the first instruction of a function and closes when execution is back in the
function that called it (the symbol of the instruction before the entry), so everything run in
between is counted, callees and any interrupt that came in (rare: the median is reported).

  qfabric    qf_rpmsg_rx (the endpoint's receive callback) up to the entry of OpenAMP's send,
             rpmsg_send_offchannel_raw: decoding, dispatch, the task, encoding the reply
  callback   qf_rpmsg_rx to its return: the above and OpenAMP's send (tx buffer, copy,
             virtqueue, the doorbell byte to Linux)
  notified   rproc_virtio_notified to its return: OpenAMP's virtqueue work around the callback
             for one doorbell (taking each received buffer, returning it), all callbacks in it

  board-path.py < LOG
"""
import importlib.util
import pathlib
import statistics
import sys
# name: (function whose entry opens the window, function whose entry closes it or None for the
# return to the caller)
WINDOWS = {
    "qfabric": ("qf_rpmsg_rx", "rpmsg_send_offchannel_raw"),
    "callback": ("qf_rpmsg_rx", None),
    "notified": ("rproc_virtio_notified", None),
}


def overhead_module():
    """qemu-overhead.py (its trace reader), loaded by path."""
    path = pathlib.Path(__file__).with_name("qemu-overhead.py")
    spec = importlib.util.spec_from_file_location("qemu_overhead", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def windows(lines):
    """{name: [instructions per window]} over the trace."""
    found = {name: [] for name in WINDOWS}
    open_windows = {}  # name -> [count, caller]
    previous_symbol = None
    for _, symbol in overhead_module().executed(lines):
        entered = symbol != previous_symbol
        for name, state in list(open_windows.items()):
            _, end = WINDOWS[name]
            if entered and (symbol == end if end else symbol == state[1]):
                found[name].append(state[0])
                del open_windows[name]
            else:
                state[0] += 1
        if entered:
            for name, (start, _) in WINDOWS.items():
                if symbol == start and name not in open_windows:
                    open_windows[name] = [1, previous_symbol]
        previous_symbol = symbol
    return found


def main():
    if len(sys.argv) > 1:
        sys.exit(__doc__)
    found = windows(sys.stdin)
    if not any(found.values()):
        sys.exit("board-path: no call of qf_rpmsg_rx or rproc_virtio_notified in the trace")
    print("window,calls,median,min,max (M33 instructions, QEMU exec trace)")
    for name, samples in found.items():
        if samples:
            print(f"{name},{len(samples)},{statistics.median(samples):.0f},"
                  f"{min(samples)},{max(samples)}")


if __name__ == "__main__":
    main()
