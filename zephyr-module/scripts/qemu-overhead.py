#!/usr/bin/env python3
"""Per-event overhead of qfabric's CBS hooks, counted in instructions from a QEMU exec trace.

Run an Arm (Thumb) image under QEMU with `-icount shift=N -accel tcg,one-insn-per-tb=on -d
exec,nochain -D <log>` (one trace line per executed instruction, deterministic virtual time) and
feed the log on stdin; pass the ELF so each traced address can be disassembled. A hook call is
counted from its first instruction to the return that leaves it: calls (bl/blx) nest, returns
(bx lr, pop/ldm of pc) unnest, and tail calls (b) stay at the same depth, so a callee's return
made on the hook's behalf ends it.

  SWT_TO  z_qf_switched_in  calls that re-armed a budget timer (a CBS thread with an active job)
  SWT_AY  z_qf_switched_out calls that charged a budget (timer re-armed or cancelled)
  B_ROUT  qf_rs_timer_expired calls that postponed a deadline (budget exhaustion: replenish
          and postpone; not the deadline-miss checks the same timer makes)

Reported like Table 1 of the task-based CBS paper: average, O_f (the most frequent of the
per-batch maxima, batches of BATCH consecutive events) and O_max (the largest sample). With
--profile, also the average instructions each function contributes to an event.
"""
import argparse
import collections
import re
import statistics
import subprocess
import sys

TRACE = re.compile(r"^Trace \d+: \S+ \[[0-9a-f]+/([0-9a-f]+)/[0-9a-f]+/[0-9a-f]+\] (\S+)")
HOOKS = {
    "z_qf_switched_in": "SWT_TO",
    "z_qf_switched_out": "SWT_AY",
    "qf_rs_timer_expired": "B_ROUT",
}
# A switch hook only does CBS work when it touches the budget timer; a timer expiry is a budget
# replenishment when it moves the thread's deadline.
CBS_WORK = {"qf_port_timer_arm", "qf_port_timer_cancel"}
REPLENISH = {"qf_port_deadline_set"}


DISASSEMBLY = re.compile(r"^\s*([0-9a-f]+):\s+(?:[0-9a-f]{4}\s?){1,2}\s+(\S+)\s*(.*)$")


def instruction_kinds(elf, objdump):
    """Maps each instruction address of the ELF to 'call', 'return' or None."""
    kinds = {}
    listing = subprocess.run([objdump, "-d", elf], capture_output=True, text=True, check=True)
    for line in listing.stdout.splitlines():
        match = DISASSEMBLY.match(line)
        if not match:
            continue
        address, mnemonic, operands = int(match.group(1), 16), match.group(2), match.group(3)
        mnemonic = mnemonic.split(".")[0]
        if mnemonic in ("bl", "blx"):
            kinds[address] = "call"
        elif (mnemonic == "bx" and operands.startswith("lr")) or (
            mnemonic in ("pop", "ldmia", "ldm") and "pc" in operands
        ) or (mnemonic == "ldr" and operands.startswith("pc")):
            kinds[address] = "return"
    return kinds


def measure(lines, kinds):
    """Yields (event, instructions, instructions per function) for every hook call."""
    active = None  # [hook, count, depth, instructions per function]
    previous = None
    for line in lines:
        match = TRACE.match(line)
        if not match:
            continue
        pc, symbol = int(match.group(1), 16), match.group(2)
        if active is None:
            if symbol in HOOKS and previous != symbol:
                active = [symbol, 0, 0, collections.Counter()]
        if active is not None:
            active[1] += 1
            active[3][symbol] += 1
            kind = kinds.get(pc)
            if kind == "call":
                active[2] += 1
            elif kind == "return":
                if active[2] == 0:
                    yield HOOKS[active[0]], active[1], active[3]
                    active = None
                else:
                    active[2] -= 1
        previous = symbol


def table(samples, batch):
    maxima = [max(samples[i:i + batch]) for i in range(0, len(samples), batch)]
    most_frequent = collections.Counter(maxima).most_common(1)[0][0]
    return statistics.mean(samples), most_frequent, max(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("elf", help="the traced image (zephyr.elf)")
    parser.add_argument("--objdump", default="arm-none-eabi-objdump")
    parser.add_argument("--batch", type=int, default=10, help="events per batch for O_f")
    parser.add_argument("--profile", action="store_true",
                        help="also print the average instructions per function of each event")
    args = parser.parse_args()
    kinds = instruction_kinds(args.elf, args.objdump)
    samples = collections.defaultdict(list)
    profiles = collections.defaultdict(collections.Counter)
    plain = collections.Counter()
    for event, count, per_function in measure(sys.stdin, kinds):
        work = REPLENISH if event == "B_ROUT" else CBS_WORK
        if work & per_function.keys():
            samples[event].append(count)
            profiles[event].update(per_function)
        else:
            plain[event] += 1
    if not samples:
        sys.exit("qemu-overhead: no hook calls with CBS work found in the trace")
    print("event,samples,average,most_frequent_max,max (instructions)")
    for event in ("SWT_TO", "SWT_AY", "B_ROUT"):
        if samples[event]:
            avg, freq, top = table(samples[event], args.batch)
            print(f"{event},{len(samples[event])},{avg:.1f},{freq},{top}")
    if args.profile:
        for event in ("SWT_TO", "SWT_AY", "B_ROUT"):
            for function, total in profiles[event].most_common():
                print(f"# profile {event} {function} {total / len(samples[event]):.1f}")
    for event, n in sorted(plain.items()):
        print(f"# {n} {event} hook calls without CBS work (no budget, or a deadline-miss check)"
              " not counted")


if __name__ == "__main__":
    main()
