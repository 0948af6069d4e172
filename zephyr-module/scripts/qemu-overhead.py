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
The paper's budget callback is a k_timer expiry function, so the kernel's timeout code reaches
it through the k_timer layer (z_timer_expiration_handler), where qfabric's timeout callback is
called directly: "paper B_ROUT (k_timer)" counts that whole timeout callback, the layer with
the paper's callback inside it and without what the sample's expiry function does around it
(expiry_fired in paper_baseline.c), the same window as qfabric's B_ROUT.

Reported like Table 1 of the task-based CBS paper: average, O_f (the most frequent of the
per-batch maxima, batches of BATCH consecutive events) and O_max (the largest sample). With
--profile, also the average instructions each function contributes to an event.

With --function NAME (repeatable), every call of the named functions is counted instead of the
hooks, the same way, and reported as calls, median, average and max. NAME is a symbol as the
trace prints it, or its demangled path (`nm -C`) or the path's last components: `admit` and
`scheduler::admit` both name `_RNvNtCs..._8qf_sched9scheduler5admit` (qf_sched::scheduler::admit).
A call starts only at the function's entry address. With --until NAME, a counted call ends when
it enters NAME (its instructions before NAME count): the part of an API call under the qfabric
lock, for instance, before the thread sleeps.
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
    # Every k_timer expiry; only those around the paper's budget callback count (see below).
    "z_timer_expiration_handler": "paper B_ROUT (k_timer)",
}
EVENTS = ("SWT_TO", "SWT_AY", "B_ROUT")
ALL_EVENTS = EVENTS + tuple("paper " + event for event in EVENTS) + ("paper B_ROUT (k_timer)",)
# Inside a hook, the subtree of an `EXCLUDED` call is not counted, except the subtree of an
# `INCLUDED` call inside it: of a k_timer expiry, the sample's expiry function (the measurement
# harness: the thread check, restoring the deadline) is left out but not the paper's callback.
EXCLUDED = {"z_timer_expiration_handler": "expiry_fired"}
INCLUDED = {"z_timer_expiration_handler": "paper_baseline_budget_expired"}
# A switch hook only does CBS work when it touches the budget timer; a timer expiry is a budget
# replenishment when it moves the thread's deadline.
CBS_WORK = {"qf_port_timer_arm", "qf_port_timer_cancel"}
REPLENISH = {"qf_port_deadline_set_reschedule"}
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


# Thumb condition codes: inside an IT block a call or return carries one (blne, bxeq lr,
# popne {..., pc}) and happens only when its condition holds.
CONDITIONS = ("eq", "ne", "cs", "hs", "cc", "lo", "mi", "pl", "vs", "vc", "hi", "ls", "ge",
              "lt", "gt", "le", "al")
# Longest first, so that blxne is blx under ne, not bl under xne.
FLOW_MNEMONICS = ("ldmia", "ldm", "blx", "bl", "bx", "pop", "ldr")


def split_condition(mnemonic):
    """(mnemonic without its condition and width suffix, condition or None), for the
    mnemonics that can call or return; others come back whole with None."""
    mnemonic = mnemonic.split(".")[0]
    for base in FLOW_MNEMONICS:
        if mnemonic.startswith(base) and mnemonic[len(base):] in CONDITIONS:
            return base, mnemonic[len(base):]
    return mnemonic, None


def thumb_kind(mnemonic, operands):
    """('call' or 'return', conditional?) or None for an Arm (Thumb) instruction."""
    mnemonic, condition = split_condition(mnemonic)
    conditional = condition not in (None, "al")
    if mnemonic in ("bl", "blx"):
        return "call", conditional
    if (mnemonic == "bx" and operands.startswith("lr")) or (
        mnemonic in ("pop", "ldmia", "ldm") and "pc" in operands
    ) or (mnemonic == "ldr" and operands.startswith("pc")):
        return "return", conditional
    return None


def riscv_kind(mnemonic, operands):
    """('call' or 'return', False) or None for a RISC-V instruction as GNU objdump prints it: a jump that
    links (jal, jalr; objdump prints those that do not as j, jr and ret) is a call, ret returns,
    and j/jr (tail calls, jump tables) stay at the same depth."""
    mnemonic = mnemonic.split(".")[-1]  # c.jal prints as jal, but be safe
    if mnemonic in ("jal", "jalr") and not operands.startswith("zero,"):
        return "call", False
    if mnemonic == "ret" or (mnemonic == "jr" and operands == "ra"):
        return "return", False
    return None


class Flow(collections.namedtuple("Flow", "kind skipped_to")):
    """A call or return (`kind`); `skipped_to`, for a conditional one, is the next instruction's
    address, where execution goes on when the condition fails (None: unconditional)."""


def listing_kinds(listing):
    """Maps each call or return address of an objdump -d listing to its Flow, by the
    instruction set its file format names (Arm or RISC-V)."""
    kinds = {}
    kind_of = thumb_kind
    waiting = []  # conditional flows whose next address is not known yet
    for line in listing.splitlines():
        file_format = FILE_FORMAT.search(line)
        if file_format:
            kind_of = riscv_kind if "riscv" in file_format.group(1) else thumb_kind
            continue
        match = DISASSEMBLY.match(line)
        if not match:
            continue
        address = int(match.group(1), 16)
        for earlier, kind in waiting:
            kinds[earlier] = Flow(kind, address)
        waiting = []
        found = kind_of(match.group(2), match.group(3))
        if found:
            kind, conditional = found
            if conditional:
                waiting.append((address, kind))
            else:
                kinds[address] = Flow(kind, None)
    return kinds


def instruction_kinds(elf, objdump):
    """Maps each call or return address of the ELF to its Flow."""
    listing = subprocess.run([objdump, "-d", elf], capture_output=True, text=True, check=True)
    return listing_kinds(listing.stdout)


def executed(lines):
    """(address, symbol) of each instruction of a `-d exec,nochain` trace, once: QEMU logs an
    instruction twice when it executes it again after ending the block early (icount I/O, a
    BASEPRI write), and counting a repeated return would unnest twice."""
    previous_pc = None
    for line in lines:
        match = TRACE.match(line)
        if not match:
            continue
        pc, symbol = int(match.group(1), 16), match.group(2)
        if pc == previous_pc:
            continue
        previous_pc = pc
        yield pc, symbol


class Window:
    """One hook call being counted: its instructions so far, its call depth, and the depth at
    which an excluded (or, inside that, an included again) callee was entered."""

    def __init__(self, hook):
        self.hook = hook
        self.count = 0
        self.depth = 0
        self.per_function = collections.Counter()
        self.excluded_at = None
        self.included_at = None

    def step(self, symbol, entered):
        """Counts one instruction of `symbol` (`entered`: its first after coming from another
        function)."""
        if entered and self.excluded_at is None and symbol == EXCLUDED.get(self.hook):
            self.excluded_at = self.depth
        elif entered and self.excluded_at is not None and self.included_at is None \
                and symbol == INCLUDED.get(self.hook):
            self.included_at = self.depth
        if self.excluded_at is None or self.included_at is not None:
            self.count += 1
            self.per_function[symbol] += 1
        else:
            self.per_function[symbol] += 0  # seen, not counted

    def unnest(self):
        """A return: False when it leaves the hook itself."""
        if self.depth == 0:
            return False
        self.depth -= 1
        if self.included_at is not None and self.depth < self.included_at:
            self.included_at = None
        if self.excluded_at is not None and self.depth < self.excluded_at:
            self.excluded_at = None
        return True


def elf_symbols(elf, nm):
    """(the demangled name of each symbol demangling changes, as `nm -C` prints it (Rust v0
    and legacy, C++); the address of every defined function and other text symbol)."""
    def listing(*flags):
        out = subprocess.run([nm, "-p", "--defined-only", *flags, elf], capture_output=True,
                             text=True, check=True).stdout
        return [line.split(" ", 2) for line in out.splitlines() if line.count(" ") >= 2]
    raw, pretty = listing(), listing("-C")
    demangled = {r[2]: re.sub(r"::h[0-9a-f]{16}$", "", p[2])
                 for r, p in zip(raw, pretty) if r[2] != p[2]}
    entries = {int(address, 16) & ~1 for address, kind, _ in raw if kind in "tTwW"}
    return demangled, entries


def function_matcher(names, demangled=None):
    """Maps a traced symbol to the NAME of `names` it is (see --function), or None; `demangled`
    maps mangled symbols to their demangled names."""
    demangled = demangled or {}
    cache = {}

    def label(symbol):
        if symbol not in cache:
            path = demangled.get(symbol)
            cache[symbol] = next((name for name in names if symbol == name or (
                path is not None and (path == name or path.endswith("::" + name)))), None)
        return cache[symbol]
    return label


def measure(lines, kinds, label=HOOKS.get, until=lambda symbol: None, entries=None):
    """Yields (event, instructions, instructions per function) for every hook call (`label`
    names a hook's event, None for other symbols); the functions of an excluded subtree appear
    with 0 instructions. A hook may run inside another (the paper's callback inside a k_timer
    expiry): both are counted. A conditional call or return takes effect only if the next
    instruction traced is not the one after it. A call ends early when it enters a function
    `until` names (not None). With `entries` (function addresses), a call starts only at one:
    coming back into a function whose call ended early is not a new call."""
    active = []
    previous = None
    pending = None  # the conditional Flow of the previous instruction

    def take(kind):
        for window in list(active):
            if kind == "call":
                window.depth += 1
            elif kind == "return" and not window.unnest():
                active.remove(window)
                yield label(window.hook), window.count, window.per_function

    for pc, symbol in executed(lines):
        if pending is not None and pc != pending.skipped_to:
            yield from take(pending.kind)
        pending = None
        entered = previous != symbol
        if entered and active and until(symbol) is not None:
            for window in active:
                yield label(window.hook), window.count, window.per_function
            active = []
        if entered and label(symbol) is not None and all(w.hook != symbol for w in active) \
                and (entries is None or pc in entries):
            active.append(Window(symbol))
        for window in active:
            window.step(symbol, entered)
        flow = kinds.get(pc)
        if flow is not None and flow.skipped_to is not None:
            pending = flow
        elif flow is not None:
            yield from take(flow.kind)
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
        if event == "paper B_ROUT (k_timer)":
            # Only the k_timer expiries that ran the paper's callback; the others (none in the
            # sample, whose budget timer is always stopped before it expires) are not its work.
            counted = INCLUDED["z_timer_expiration_handler"] in per_function
            if not counted:
                continue
        else:
            work = REPLENISH if event == "B_ROUT" else CBS_WORK
            counted = event.startswith("paper ") or bool(work & per_function.keys())
        if counted:
            out.samples[event].append(count)
            out.profiles[event].update(per_function)
            out.reprogrammed[event].append(per_function.get(REPROGRAM, 0) > 0)
        elif event == "B_ROUT" or per_function.keys() - LOCKING:
            out.plain[event].append(count)
        else:
            out.unowned[event].append(count)
    return out


def table(samples, batch):
    maxima = [max(samples[i:i + batch]) for i in range(0, len(samples), batch)]
    most_frequent = collections.Counter(maxima).most_common(1)[0][0]
    return statistics.mean(samples), most_frequent, max(samples)


def functions(events, names, profile):
    """Prints calls, median, average and max instructions of each function of `names` (with
    `profile`: every sample in order and the average instructions per function under it)."""
    samples = collections.defaultdict(list)
    profiles = collections.defaultdict(collections.Counter)
    for name, count, per_function in events:
        samples[name].append(count)
        profiles[name].update(per_function)
    if not samples:
        sys.exit("qemu-overhead: no call of " + ", ".join(names) + " found in the trace")
    print("function,calls,median,average,max (instructions)")
    for name in names:
        counts = samples[name]
        if counts:
            print(f"{name},{len(counts)},{statistics.median(counts):g},"
                  f"{statistics.mean(counts):.1f},{max(counts)}")
        else:
            print(f"{name},0,-,-,-")
    for name in [name for name in names if samples[name]] if profile else ():
        print(f"# samples {name} " + " ".join(map(str, samples[name])))
        for function, total in profiles[name].most_common():
            print(f"# profile {name} {function} {total / len(samples[name]):.1f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("elf", help="the traced image (zephyr.elf)")
    parser.add_argument("--objdump", default="arm-none-eabi-objdump")
    parser.add_argument("--batch", type=int, default=10, help="events per batch for O_f")
    parser.add_argument("--profile", action="store_true",
                        help="also print the average instructions per function of each event")
    parser.add_argument("--function", action="append", metavar="NAME",
                        help="count every call of this function instead of the hooks"
                        " (repeatable; a symbol, or a demangled path or its last components)")
    parser.add_argument("--until", action="append", metavar="NAME", default=[],
                        help="with --function: end a call when it enters this function")
    parser.add_argument("--nm", help="with --function: the nm that demangles the ELF's symbols"
                        " (default: the --objdump's nm)")
    args = parser.parse_args()
    kinds = instruction_kinds(args.elf, args.objdump)
    if args.function:
        nm = args.nm or re.sub(r"objdump$", "nm", args.objdump)
        demangled, entries = elf_symbols(args.elf, nm)
        functions(measure(sys.stdin, kinds, function_matcher(args.function, demangled),
                          function_matcher(args.until, demangled), entries),
                  args.function, args.profile)
        return
    if args.until:
        parser.error("--until needs --function")
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
    if "B_ROUT" in averages and "paper B_ROUT (k_timer)" in averages:
        print("# B_ROUT: qfabric / paper's kernel work with its k_timer expiry layer = "
              f"{averages['B_ROUT'] / averages['paper B_ROUT (k_timer)']:.2f} (averages)")
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
                if total == 0:
                    continue  # only seen in an excluded subtree
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
