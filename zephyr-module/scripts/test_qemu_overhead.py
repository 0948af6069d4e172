"""Unit tests of qemu-overhead.py's trace walking and sample sorting, on synthetic QEMU exec
traces (the script's figures are the module's overhead claims, so its counting is tested here
rather than trusted). Run: python3 -m unittest discover -s zephyr-module/scripts -p 'test_*.py'
"""
import importlib.util
import pathlib
import unittest

_PATH = pathlib.Path(__file__).with_name("qemu-overhead.py")
_SPEC = importlib.util.spec_from_file_location("qemu_overhead", _PATH)
overhead = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(overhead)


def flows(kinds):
    """Unconditional Flows from {address: 'call' or 'return'}."""
    return {address: overhead.Flow(kind, None) for address, kind in kinds.items()}


def trace(*steps):
    """QEMU `-d exec,nochain` lines for (pc, symbol) steps, one executed instruction each."""
    return [f"Trace 0: 0x1 [00000000/{pc:08x}/00000000/00000000] {symbol}" for pc, symbol in steps]


class MeasureTest(unittest.TestCase):
    def test_a_hook_counts_its_callees_until_its_own_return(self):
        lines = trace(
            (0x10, "idle"),
            (0x100, "z_qf_switched_in"),
            (0x102, "z_qf_switched_in"),  # bl
            (0x200, "qf_port_timer_arm"),
            (0x202, "qf_port_timer_arm"),  # bx lr: back in the hook, not its end
            (0x104, "z_qf_switched_in"),
            (0x106, "z_qf_switched_in"),  # pop {pc}: the hook's end
            (0x10, "idle"),
        )
        kinds = {0x102: "call", 0x202: "return", 0x106: "return"}
        events = list(overhead.measure(lines, flows(kinds)))
        self.assertEqual(len(events), 1)
        event, count, per_function = events[0]
        self.assertEqual((event, count), ("SWT_TO", 6))
        self.assertEqual(per_function["qf_port_timer_arm"], 2)
        self.assertEqual(per_function["z_qf_switched_in"], 4)

    def test_a_tail_call_ends_the_hook_with_the_callee_return(self):
        lines = trace(
            (0x300, "z_qf_switched_out"),
            (0x302, "z_qf_switched_out"),  # b.w qf_port_unlock: same depth
            (0x400, "qf_port_unlock"),
            (0x402, "qf_port_unlock"),  # bx lr: returns for the hook
            (0x500, "after"),
        )
        events = list(overhead.measure(lines, flows({0x402: "return"})))
        self.assertEqual([(e, c) for e, c, _ in events], [("SWT_AY", 4)])

    def test_a_conditional_call_counts_only_when_taken(self):
        # blne qf_port_deadline_set, once not taken (the next pc follows it), once taken.
        lines = trace(
            (0x600, "qf_rs_timer_expired"),
            (0x602, "qf_rs_timer_expired"),  # blne, not taken
            (0x606, "qf_rs_timer_expired"),
            (0x602, "qf_rs_timer_expired"),  # blne, taken
            (0x700, "qf_port_deadline_set"),
            (0x702, "qf_port_deadline_set"),  # bx lr: back in the hook
            (0x606, "qf_rs_timer_expired"),
            (0x608, "qf_rs_timer_expired"),  # pop {pc}: the end
            (0x10, "after"),
        )
        lines.insert(0, lines[0].replace("qf_rs_timer_expired", "qf_timer_fired")
                     .replace("00000600", "00000500"))
        kinds = {0x602: overhead.Flow("call", 0x606), 0x702: overhead.Flow("return", None),
                 0x608: overhead.Flow("return", None)}
        events = list(overhead.measure(lines, kinds))
        self.assertEqual([(e, c) for e, c, _ in events], [("B_ROUT", 9)])
        self.assertEqual(events[0][2]["qf_port_deadline_set"], 2)

    def test_a_conditional_return_ends_the_hook_only_when_taken(self):
        lines = trace(
            (0x300, "z_qf_switched_out"),
            (0x302, "z_qf_switched_out"),  # bxeq lr, not taken
            (0x304, "z_qf_switched_out"),
            (0x302, "z_qf_switched_out"),  # bxeq lr, taken: the hook's end
            (0x10, "caller"),
            (0x12, "caller"),
        )
        kinds = {0x302: overhead.Flow("return", 0x304)}
        events = list(overhead.measure(lines, kinds))
        self.assertEqual([(e, c) for e, c, _ in events], [("SWT_AY", 4)])

    def test_an_instruction_logged_twice_is_counted_once(self):
        # QEMU logs an instruction again when it re-executes it after ending a block early.
        lines = trace(
            (0x600, "qf_timer_fired"),
            (0x602, "qf_timer_fired"),
            (0x602, "qf_timer_fired"),
            (0x604, "qf_timer_fired"),
        )
        events = list(overhead.measure(lines, flows({0x604: "return"})))
        self.assertEqual([(e, c) for e, c, _ in events], [("B_ROUT", 3)])

    def test_the_paper_callback_counts_with_its_k_timer_layer_but_not_the_harness(self):
        lines = trace(
            (0x10, "sys_clock_announce"),
            (0x700, "z_timer_expiration_handler"),
            (0x702, "z_timer_expiration_handler"),  # blx: the expiry function
            (0x800, "expiry_fired"),  # the harness: not counted
            (0x802, "expiry_fired"),  # bl
            (0x900, "paper_baseline_budget_expired"),  # counted again, and a hook of its own
            (0x902, "paper_baseline_budget_expired"),  # bl
            (0xa00, "k_reschedule"),
            (0xa02, "k_reschedule"),  # bx lr
            (0x904, "paper_baseline_budget_expired"),  # pop {pc}
            (0x804, "expiry_fired"),  # bl: restoring the deadline, not counted
            (0xb00, "z_impl_k_thread_absolute_deadline_set"),
            (0xb02, "z_impl_k_thread_absolute_deadline_set"),  # bx lr
            (0x806, "expiry_fired"),  # pop {pc}
            (0x704, "z_timer_expiration_handler"),
            (0x706, "z_timer_expiration_handler"),  # pop {pc}
            (0x12, "sys_clock_announce"),
        )
        kinds = {0x702: "call", 0x802: "call", 0x902: "call", 0xa02: "return",
                 0x904: "return", 0x804: "call", 0xb02: "return", 0x806: "return",
                 0x706: "return"}
        events = list(overhead.measure(lines, flows(kinds)))
        self.assertEqual([(e, c) for e, c, _ in events],
                         [("paper B_ROUT", 5), ("paper B_ROUT (k_timer)", 9)])
        layer = events[1][2]
        self.assertEqual(layer["z_timer_expiration_handler"], 4)
        self.assertEqual(layer["k_reschedule"], 2)
        self.assertEqual(layer["expiry_fired"], 0)
        self.assertEqual(layer["z_impl_k_thread_absolute_deadline_set"], 0)


class FunctionTest(unittest.TestCase):
    ADMIT = "_RNvNtCsdjsp1rtm5EZ_8qf_sched9scheduler5admit"
    READMIT = "_RNvNtCsdjsp1rtm5EZ_8qf_sched9scheduler7readmit"
    DEMANGLED = {ADMIT: "qf_sched::scheduler::admit", READMIT: "qf_sched::scheduler::readmit"}

    def test_a_name_matches_the_symbol_or_the_end_of_its_demangled_path(self):
        label = overhead.function_matcher(["admit", "z_qf_switched_in"], self.DEMANGLED)
        self.assertEqual(label(self.ADMIT), "admit")
        self.assertEqual(label("z_qf_switched_in"), "z_qf_switched_in")
        self.assertEqual(label(self.READMIT), None)
        self.assertEqual(label("admit_not"), None)
        self.assertEqual(overhead.function_matcher(["scheduler::admit"], self.DEMANGLED)(
            self.ADMIT), "scheduler::admit")

    def test_every_call_of_a_named_function_counts(self):
        lines = trace(
            (0x10, "caller"),
            (0x100, self.ADMIT),
            (0x102, self.ADMIT),  # bl
            (0x200, "__aeabi_uldivmod"),
            (0x202, "__aeabi_uldivmod"),  # bx lr
            (0x104, self.ADMIT),  # pop {pc}
            (0x12, "caller"),
            (0x100, self.ADMIT),
            (0x104, self.ADMIT),
            (0x14, "caller"),
        )
        kinds = {0x102: "call", 0x202: "return", 0x104: "return"}
        label = overhead.function_matcher(["admit"], self.DEMANGLED)
        events = list(overhead.measure(lines, flows(kinds), label))
        self.assertEqual([(e, c) for e, c, _ in events], [("admit", 5), ("admit", 2)])

    def test_until_ends_a_call_where_it_enters_the_named_function(self):
        lines = trace(
            (0x100, "qf_thread_deadline_set"),
            (0x102, "qf_thread_deadline_set"),  # bl qf_port_unlock
            (0x200, "qf_port_unlock"),
            (0x202, "qf_port_unlock"),  # bx lr
            (0x104, "qf_thread_deadline_set"),  # bl k_sleep: the thread sleeps
            (0x300, "other_thread"),
            (0x106, "qf_thread_deadline_set"),  # woken: not a new call
            (0x108, "qf_thread_deadline_set"),  # pop {pc}
            (0x400, "thread_loop"),
            (0x100, "qf_thread_deadline_set"),  # the next call
            (0x102, "qf_thread_deadline_set"),
            (0x200, "qf_port_unlock"),
        )
        kinds = {0x102: "call", 0x202: "return", 0x104: "call", 0x108: "return"}
        events = list(overhead.measure(
            lines, flows(kinds), overhead.function_matcher(["qf_thread_deadline_set"]),
            overhead.function_matcher(["qf_port_unlock"]), entries={0x100, 0x200, 0x300, 0x400}))
        self.assertEqual([(e, c) for e, c, _ in events], [("qf_thread_deadline_set", 2)] * 2)


class ListingKindsTest(unittest.TestCase):
    """Calls and returns as binutils' objdump -d prints them, per instruction set."""

    def test_thumb_calls_and_returns(self):
        listing = """
zephyr.elf:     file format elf32-littlearm
10004df8 <qf_rs_timer_expired>:
10004df8:\tb5f0      \tpush\t{r4, r5, r6, r7, lr}
10004e08:\tf7ff fa0e \tbl\t10004228 <qf_port_lock>
10004e1a:\tf7ff ba0d \tb.w\t10004238 <qf_port_unlock>
10004fa6:\t4788      \tblx\tr1
10004fb0:\tbdf0      \tpop\t{r4, r5, r6, r7, pc}
10004fb2:\t4770      \tbx\tlr
"""
        self.assertEqual(overhead.listing_kinds(listing), flows({
            0x10004e08: "call", 0x10004fa6: "call", 0x10004fb0: "return",
            0x10004fb2: "return"}))

    def test_thumb_conditional_calls_and_returns_name_where_they_are_skipped_to(self):
        listing = """
zephyr.elf:     file format elf32-littlearm
10005132:\tbf18      \tit\tne
10005134:\tf7ff fb00 \tblne\t10004738 <qf_port_deadline_set>
10005138:\tbf08      \tit\teq
1000513a:\t4770      \tbxeq\tlr
1000513c:\tbf18      \tit\tne
1000513e:\tbdf0      \tpopne\t{r4, r5, r6, r7, pc}
10005140:\tbfb8      \tit\tlt
10005142:\tbd10      \tldmialt.w\tsp!, {r4, pc}
10005146:\tdb02      \tblt.n\t1000514e <elsewhere>
10005148:\td902      \tbls.n\t10005150 <elsewhere>
"""
        self.assertEqual(overhead.listing_kinds(listing), {
            0x10005134: overhead.Flow("call", 0x10005138),
            0x1000513a: overhead.Flow("return", 0x1000513c),
            0x1000513e: overhead.Flow("return", 0x10005140),
            0x10005142: overhead.Flow("return", 0x10005146)})

    def test_riscv_calls_returns_and_jumps_that_stay(self):
        listing = """
zephyr.elf:     file format elf32-littleriscv
80000232:\t5fa050ef          \tjal\t8000582c <z_thread_mark_switched_in>
800019b6:\t9482                \tjalr\ts1
80000abc:\t7d8080e7          \tjalr\t2008(ra) # 80001290 <k_sched_lock>
80000ac0:\t0300006f          \tj\t80000af0 <next>
8000195a:\t8782                \tjr\ta5
8000027a:\t8282                \tjr\tt0
80000ac8:\t8082                \tret
"""
        self.assertEqual(overhead.listing_kinds(listing), flows({
            0x80000232: "call", 0x800019b6: "call", 0x80000abc: "call",
            0x80000ac8: "return"}))


def call(event, count, *functions):
    return event, count, {function: 1 for function in functions}


class ClassifyTest(unittest.TestCase):
    def test_samples_are_hook_calls_with_cbs_work(self):
        found = overhead.classify([
            call("SWT_TO", 100, "z_qf_switched_in", "qf_port_timer_arm"),
            call("SWT_TO", 40, "z_qf_switched_in", "qf_port_now"),  # no timer work
            call("SWT_TO", 20, "z_qf_switched_in", "qf_port_lock", "qf_port_unlock"),
            call("B_ROUT", 300, "qf_timer_fired", "qf_port_deadline_set_reschedule"),
            call("B_ROUT", 30, "qf_timer_fired", "qf_port_timer_arm"),  # early expiry
            call("paper B_ROUT", 250, "paper_baseline_budget_expired"),
        ])
        self.assertEqual(found.samples["SWT_TO"], [100])
        self.assertEqual(found.plain["SWT_TO"], [40])
        self.assertEqual(found.unowned["SWT_TO"], [20])
        self.assertEqual(found.samples["B_ROUT"], [300])
        self.assertEqual(found.plain["B_ROUT"], [30])
        self.assertEqual(found.samples["paper B_ROUT"], [250])

    def test_only_k_timer_expiries_around_the_paper_callback_are_samples(self):
        found = overhead.classify([
            ("paper B_ROUT (k_timer)", 300,
             {"z_timer_expiration_handler": 40, "expiry_fired": 0,
              "paper_baseline_budget_expired": 27}),
            ("paper B_ROUT (k_timer)", 50, {"z_timer_expiration_handler": 40,
                                            "expiry_fired": 0}),  # another thread ran
        ])
        self.assertEqual(found.samples["paper B_ROUT (k_timer)"], [300])
        self.assertEqual(dict(found.plain), {})

    def test_a_sample_that_ran_the_timer_reprogramming_is_marked(self):
        found = overhead.classify([
            call("SWT_TO", 350, "qf_port_timer_arm", "sys_clock_set_timeout"),
            call("SWT_TO", 120, "qf_port_timer_arm"),
            call("paper SWT_AY", 289, "z_abort_timeout", "sys_clock_set_timeout"),
        ])
        self.assertEqual(found.reprogrammed["SWT_TO"], [True, False])
        self.assertEqual(found.reprogrammed["paper SWT_AY"], [True])
        # Reprogramming only in an excluded subtree (the harness around the paper's callback)
        # is not the sample's.
        found = overhead.classify([
            ("paper B_ROUT (k_timer)", 288,
             {"z_timer_expiration_handler": 35, "paper_baseline_budget_expired": 253,
              "expiry_fired": 0, "sys_clock_set_timeout": 0}),
        ])
        self.assertEqual(found.reprogrammed["paper B_ROUT (k_timer)"], [False])


class TableTest(unittest.TestCase):
    def test_average_most_frequent_batch_maximum_and_maximum(self):
        # Batches of 2: maxima 5, 7, 5: O_f is 5, O_max 7.
        average, most_frequent, top = overhead.table([1, 5, 7, 2, 5, 4], 2)
        self.assertAlmostEqual(average, 4.0)
        self.assertEqual((most_frequent, top), (5, 7))


if __name__ == "__main__":
    unittest.main()
