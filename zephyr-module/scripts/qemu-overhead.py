#!/usr/bin/env python3
"""Per-event overhead of qfabric's CBS hooks, counted in instructions from a QEMU exec trace.

Run an Arm (Thumb) or RISC-V image under QEMU with `-icount shift=N -accel
tcg,one-insn-per-tb=on -d exec,nochain -D <log>` (one trace line per executed instruction,
deterministic virtual time) and feed the log on stdin; pass the ELF (and its objdump) so each
traced address can be disassembled. A hook call is counted from its first instruction to the
return that leaves it: calls (bl/blx; jal/jalr) nest, returns (bx lr, pop/ldm of pc; ret)
unnest, and tail calls (b; j/jr) stay at the same depth, so a callee's return made on the
hook's behalf ends it.

  SWT_TO  z_qf_switched_in  calls that re-armed a budget timer (a CBS thread with an active job)
  SWT_AY  z_qf_switched_out calls that charged a budget (timer re-armed or cancelled)
  B_ROUT  expiries of a slot's kernel timeout (qf_timer_fired, port.c) that postponed a
          deadline (budget exhaustion: replenish and postpone), re-aiming included; the other
          expiries (early ones, deadline-miss checks) are reported apart

and, when the image has them, the same three events of the paper's design (every call of
paper_baseline_switched_in/_switched_out/_budget_expired), with the ratio of the averages.

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
    "qf_timer_fired": "B_ROUT",
    # The kernel work of the paper's own hooks, run in the same image when the cbs-paper sample
    # is built with CONFIG_CBS_PAPER_BASELINE (samples/cbs-paper/src/paper_baseline.c); every
    # call counts.
    "paper_baseline_switched_in": "paper SWT_TO",
    "paper_baseline_switched_out": "paper SWT_AY",
    "paper_baseline_budget_expired": "paper B_ROUT",
}
EVENTS = ("SWT_TO", "SWT_AY", "B_ROUT")
ALL_EVENTS = EVENTS + tuple("paper " + event for event in EVENTS)
# A switch hook only does CBS work when it touches the budget timer; a timer expiry is a budget
# replenishment when it moves the thread's deadline.
CBS_WORK = {"qf_port_timer_arm", "qf_port_timer_cancel"}
REPLENISH = {"qf_port_deadline_set"}
# Where the kernel reads and reprograms the hardware timer: adding a timeout that becomes the
# queue's head does, except inside the timeout processing (sys_clock_announce) -- and there too
# when the callback's timeout expires at the same tick as one before it in the queue. How many
# samples did is reported per event, because it alone moves a sample by ~180 instructions.
REPROGRAM = "sys_clock_set_timeout"
# A switch hook call that runs nothing but itself and the lock is for a thread without a control
# block (only the patch-free mode calls the hooks for those: they search the pool and leave).
LOCKING = set(HOOKS) | {"qf_port_lock", "qf_port_unlock"}


DISASSEMBLY = re.compile(r"^\s*([0-9a-f]+):\s+(?:[0-9a-f]{4}\s?){1,2}\s+(\S+)\s*(.*)$")
FILE_FORMAT = re.compile(r"file format (\S+)")


def thumb_kind(mnemonic, operands):
    """'call', 'return' or None for an Arm (Thumb) instruction."""
    mnemonic = mnemonic.split(".")[0]
    if mnemonic in ("bl", "blx"):
        return "call"
    if (mnemonic == "bx" and operands.startswith("lr")) or (
        mnemonic in ("pop", "ldmia", "ldm") and "pc" in operands
    ) or (mnemonic == "ldr" and operands.startswith("pc")):
        return "return"
    return None


def riscv_kind(mnemonic, operands):
    """'call', 'return' or None for a RISC-V instruction as GNU objdump prints it: a jump that
    links (jal, jalr; objdump prints those that do not as j, jr and ret) is a call, ret returns,
    and j/jr (tail calls, jump tables) stay at the same depth."""
    mnemonic = mnemonic.split(".")[-1]  # c.jal prints as jal, but be safe
    if mnemonic in ("jal", "jalr") and not operands.startswith("zero,"):
        return "call"
    if mnemonic == "ret" or (mnemonic == "jr" and operands == "ra"):
        return "return"
    return None


def listing_kinds(listing):
    """Maps each instruction address of an objdump -d listing to 'call', 'return' or None,
    by the instruction set its file format names (Arm or RISC-V)."""
    kinds = {}
    kind_of = thumb_kind
    for line in listing.splitlines():
        file_format = FILE_FORMAT.search(line)
        if file_format:
            kind_of = riscv_kind if "riscv" in file_format.group(1) else thumb_kind
            continue
        match = DISASSEMBLY.match(line)
        if not match:
            continue
        kind = kind_of(match.group(2), match.group(3))
        if kind:
            kinds[int(match.group(1), 16)] = kind
    return kinds


def instruction_kinds(elf, objdump):
    """Maps each instruction address of the ELF to 'call', 'return' or None."""
    listing = subprocess.run([objdump, "-d", elf], capture_output=True, text=True, check=True)
    return listing_kinds(listing.stdout)


def measure(lines, kinds):
    """Yields (event, instructions, instructions per function) for every hook call."""
    active = None  # [hook, count, depth, instructions per function]
    previous = None
    previous_pc = None
    for line in lines:
        match = TRACE.match(line)
        if not match:
            continue
        pc, symbol = int(match.group(1), 16), match.group(2)
        # QEMU logs an instruction twice when it executes it again after ending the block early
        # (icount I/O, a BASEPRI write): counting a repeated return would unnest twice.
        if pc == previous_pc:
            continue
        previous_pc = pc
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


class Classified:
    """Hook calls sorted by kind: the counted samples per event (with their per-function
    profile and whether each reprogrammed the hardware timer), and the calls left out."""

    def __init__(self):
        self.samples = collections.defaultdict(list)
        self.profiles = collections.defaultdict(collections.Counter)
        self.reprogrammed = collections.defaultdict(list)
        self.plain = collections.defaultdict(list)
        self.unowned = collections.defaultdict(list)


def classify(events):
    """Sorts the (event, instructions, per function) triples `measure` yields."""
    out = Classified()
    for event, count, per_function in events:
        work = REPLENISH if event == "B_ROUT" else CBS_WORK
        if event.startswith("paper ") or work & per_function.keys():
            out.samples[event].append(count)
            out.profiles[event].update(per_function)
            out.reprogrammed[event].append(REPROGRAM in per_function)
        elif event == "B_ROUT" or per_function.keys() - LOCKING:
            out.plain[event].append(count)
        else:
            out.unowned[event].append(count)
    return out


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
    found = classify(measure(sys.stdin, kinds))
    samples, profiles, reprogrammed = found.samples, found.profiles, found.reprogrammed
    plain, unowned = found.plain, found.unowned
    if not samples:
        sys.exit("qemu-overhead: no hook calls with CBS work found in the trace")
    print("event,samples,average,most_frequent_max,max (instructions)")
    averages = {}
    for event in ALL_EVENTS:
        if samples[event]:
            avg, freq, top = table(samples[event], args.batch)
            averages[event] = avg
            print(f"{event},{len(samples[event])},{avg:.1f},{freq},{top}")
    for event in EVENTS:
        if event in averages and "paper " + event in averages:
            print(f"# {event}: qfabric / paper's kernel work = "
                  f"{averages[event] / averages['paper ' + event]:.2f} (averages)")
    for event in ALL_EVENTS:
        with_timer = [c for c, r in zip(samples[event], reprogrammed[event]) if r]
        without = [c for c, r in zip(samples[event], reprogrammed[event]) if not r]
        if with_timer:
            rest = f"{statistics.mean(without):.1f}" if without else "-"
            print(f"# {event}: {len(with_timer)} of {len(samples[event])} samples reprogrammed"
                  f" the hardware timer ({REPROGRAM}), average {statistics.mean(with_timer):.1f};"
                  f" the others average {rest}")
    if args.profile:
        for event in ALL_EVENTS:
            for function, total in profiles[event].most_common() if samples[event] else ():
                print(f"# profile {event} {function} {total / len(samples[event]):.1f}")
    for event, counts in sorted(plain.items()):
        print(f"# {len(counts)} {event} hook calls without CBS work (no budget, or a deadline-miss"
              f" check or early expiry) not counted: average {statistics.mean(counts):.1f},"
              f" max {max(counts)}")
    for event, counts in sorted(unowned.items()):
        print(f"# {len(counts)} {event} hook calls for threads without a control block"
              f" (patch-free mode) not counted: average {statistics.mean(counts):.1f},"
              f" max {max(counts)}")


if __name__ == "__main__":
    main()
