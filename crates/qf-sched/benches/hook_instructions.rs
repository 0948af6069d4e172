//! Counted loops over each scheduler hook, each behind its own non-inlined function, for
//! instruction counting: `valgrind --tool=callgrind` on this binary, then each function's
//! inclusive instruction count divided by `CALLS` is the cost of one call as a port's entry
//! point pays it, the wrapper's own call, return, thread-id and result traffic included (under
//! 10 instructions where the hook is inlined into the wrapper, as `deadline_set` always is;
//! about 12 where it stays a call of its own). `scripts/bench-sched` does exactly that, for
//! the traced scheduler (`EVENTS = 64`) and with tracing compiled out (`EVENTS = 0`). Run
//! plainly (as `cargo bench` does) it only executes the loops.

mod common;

use common::{
    admitted_cbs_thread_with, running_cbs_thread_with, StoreKernel, BUDGET, PERIOD, THREAD,
};
use qf_sched::{Bandwidth, Scheduler};
use std::hint::black_box;

/// Calls per hook.
const CALLS: u64 = 100_000;

/// One set of counted hook loops for a ring of `$events` entries, in its own module so each
/// wrapper has a distinct symbol for callgrind.
macro_rules! hook_loops {
    ($module:ident, $events:expr) => {
        mod $module {
            use super::*;

            type Sched = Scheduler<8, $events>;

            #[inline(never)]
            pub fn hook_switched_in(sched: &mut Sched, kernel: &mut StoreKernel) {
                let _ = black_box(sched.switched_in(kernel, black_box(THREAD)));
            }

            #[inline(never)]
            pub fn hook_switched_out(sched: &mut Sched, kernel: &mut StoreKernel) {
                let _ = black_box(sched.switched_out(kernel, black_box(THREAD)));
            }

            #[inline(never)]
            pub fn hook_deadline_set(sched: &mut Sched, kernel: &mut StoreKernel) {
                let _ = black_box(sched.deadline_set(kernel, black_box(THREAD), PERIOD));
            }

            /// `deadline_set` with admission control on: the release path of an admitted thread.
            #[inline(never)]
            pub fn hook_deadline_set_admitted(sched: &mut Sched, kernel: &mut StoreKernel) {
                // The relative deadline through black_box (one store and load more than
                // hook_deadline_set) so the two wrappers are not folded into one symbol.
                let _ = black_box(sched.deadline_set(kernel, black_box(THREAD), black_box(PERIOD)));
            }

            /// A budget change with admission control on, and the next cycle edge: where the
            /// admission test runs, and what it costs with the release that follows.
            #[inline(never)]
            pub fn hook_budget_change_admitted(
                sched: &mut Sched,
                kernel: &mut StoreKernel,
                budget: u64,
            ) {
                let _ = black_box(sched.cbs_budget_set(black_box(THREAD), black_box(budget)));
                let _ = black_box(sched.deadline_set(kernel, black_box(THREAD), PERIOD));
            }

            /// The reservation's bandwidth `Q/T` in fixed point, the admission test's division.
            #[inline(never)]
            pub fn hook_bandwidth_ratio(budget: u64, period: u64) -> Option<Bandwidth> {
                black_box(Bandwidth::ratio(black_box(budget), black_box(period)))
            }

            #[inline(never)]
            pub fn hook_replenish(sched: &mut Sched, kernel: &mut StoreKernel) {
                let _ = black_box(sched.timer_expired(kernel, black_box(THREAD)));
            }

            pub fn run() {
                // Preemptions: a CBS thread switched out and back in every 2 units, budget
                // never running out (its job ends every 10 units via cycle_end + deadline_set,
                // outside the counted calls).
                let (mut sched, mut kernel) = running_cbs_thread_with::<$events>();
                for _ in 0..CALLS {
                    kernel.now += 1;
                    hook_switched_out(&mut sched, &mut kernel);
                    kernel.now += 1;
                    hook_switched_in(&mut sched, &mut kernel);
                    if kernel.now % 10 == 0 {
                        let _ = sched.cycle_end(&mut kernel, THREAD);
                        let _ = sched.deadline_set(&mut kernel, THREAD, PERIOD);
                    }
                }

                // Cycle ends: deadline_set 10 units into each period (charge, suspend, CBS
                // arrival).
                let (mut sched, mut kernel) = running_cbs_thread_with::<$events>();
                kernel.now = 10;
                for _ in 0..CALLS {
                    hook_deadline_set(&mut sched, &mut kernel);
                    kernel.now += PERIOD;
                }

                // The same cycle ends with admission control on.
                let (mut sched, mut kernel) = admitted_cbs_thread_with::<$events>();
                kernel.now = 10;
                for _ in 0..CALLS {
                    hook_deadline_set_admitted(&mut sched, &mut kernel);
                    kernel.now += PERIOD;
                }

                // A budget changed every cycle (30 and 29 alternately), admission on.
                let (mut sched, mut kernel) = admitted_cbs_thread_with::<$events>();
                kernel.now = 10;
                for call in 0..CALLS {
                    hook_budget_change_admitted(&mut sched, &mut kernel, BUDGET - call % 2);
                    kernel.now += PERIOD;
                }
                for call in 0..CALLS {
                    black_box(hook_bandwidth_ratio(BUDGET + call % 7, PERIOD * 1000));
                }

                // Budget exhaustions with work left (B_ROUT).
                let (mut sched, mut kernel) = running_cbs_thread_with::<$events>();
                for _ in 0..CALLS {
                    kernel.now += BUDGET;
                    hook_replenish(&mut sched, &mut kernel);
                }
                black_box(sched.events().len());
            }
        }
    };
}

hook_loops!(traced, 64);
hook_loops!(untraced, 0);

fn main() {
    traced::run();
    untraced::run();
    println!("hook_instructions: {CALLS} calls per hook and configuration done");
}
