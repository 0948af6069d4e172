//! `qf sim --golden-c`: the task set and its simulated schedule as a C header, so a test on the
//! real kernel (zephyr-module/tests/paper-cases) can run the same task set and compare its
//! schedule slice by slice and event by event with what the simulator computed.
//!
//! Every time, budget and deadline is in nanoseconds of simulated time from time zero; the test
//! scales them to its own time unit with `unit_ns` (the schedule of a task set whose times are
//! whole ticks does not depend on the unit's length).

use std::fmt::Write as _;

use crate::clock::Clock;
use crate::engine::Outcome;
use crate::taskset::{TaskKind, TaskSet};

/// The type definitions, shared by every generated header (guarded: two headers may be included
/// by one file).
const TYPES: &str = "\
#ifndef QF_GOLDEN_TYPES_
#define QF_GOLDEN_TYPES_

#include <stdbool.h>
#include <stdint.h>

/* Each file that includes a header gets its own copy of the data; it may use only part of it. */
#if defined(__GNUC__) || defined(__clang__)
#define QF_GOLDEN_DATA static const __attribute__((unused))
#else
#define QF_GOLDEN_DATA static const
#endif

enum qf_golden_kind { QF_GOLDEN_PERIODIC, QF_GOLDEN_CBS };

/** One job of a CBS task: it arrives at arrival_ns and needs work_ns of CPU time. */
struct qf_golden_job {
\tuint64_t arrival_ns;
\tuint64_t work_ns;
};

/** One task as the task-set file describes it (unused fields are 0). */
struct qf_golden_task {
\tconst char *name;
\tenum qf_golden_kind kind;
\tint priority;
\t/* periodic: k_thread_period_set(period), then deadline_set(deadline) + wcet of work */
\tuint64_t wcet_ns;
\tuint64_t period_ns;
\tuint64_t deadline_ns;
\tuint64_t offset_ns;
\t/* cbs: budget Q, server period T (its relative deadline), the jobs it serves */
\tuint64_t budget_ns;
\tbool hard_reservation;
\tconst struct qf_golden_job *jobs;
\tuint16_t n_jobs;
};

/** One maximal stretch of execution [start_ns, end_ns) of tasks[task] (idle omitted). */
struct qf_golden_slice {
\tuint64_t start_ns;
\tuint64_t end_ns;
\tuint16_t task;
};

/** One scheduler event, as `qf sim --events` lists it. */
struct qf_golden_event {
\tuint64_t time_ns;
\tuint16_t task;
\tconst char *kind;
\tuint64_t budget_ns;
\tuint64_t deadline_ns;
};

/** A task set and the schedule qf sim computed for it up to horizon_ns. */
struct qf_golden {
\tconst char *source;
\tuint64_t unit_ns;
\tuint64_t horizon_ns;
\tuint32_t tick_hz;
\tconst struct qf_golden_task *tasks;
\tuint16_t n_tasks;
\tconst struct qf_golden_slice *slices;
\tuint16_t n_slices;
\tconst struct qf_golden_event *events;
\tuint16_t n_events;
};

#endif /* QF_GOLDEN_TYPES_ */
";

/// Most slices, and most events, one header can hold (its counts are `uint16_t`).
pub const MAX_ROWS: usize = u16::MAX as usize;

/// C keywords (C89 to C23): names a header's object cannot take.
const C_KEYWORDS: [&str; 60] = [
    "auto",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    "alignas",
    "alignof",
    "bool",
    "constexpr",
    "false",
    "nullptr",
    "static_assert",
    "thread_local",
    "true",
    "typeof",
    "typeof_unqual",
    "_Alignas",
    "_Alignof",
    "_Atomic",
    "_BitInt",
    "_Bool",
    "_Complex",
    "_Decimal128",
    "_Decimal32",
    "_Decimal64",
    "_Generic",
    "_Imaginary",
    "_Noreturn",
    "_Pragma",
    "_Static_assert",
    "_Thread_local",
];

/// The C identifier a header named `stem` (its file name without extension) defines: other
/// characters than letters, digits and `_` become `_`, and a leading digit gets a `_` before
/// it. Refused (with the reason) when the result is a C keyword or a name reserved to the C
/// implementation (`__x`, `_X`), which no compiler would accept as the object's name.
pub fn identifier(stem: &str) -> Result<String, String> {
    let mut id: String = stem
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if id.is_empty() || id.starts_with(|c: char| c.is_ascii_digit()) {
        id.insert(0, '_');
    }
    if C_KEYWORDS.contains(&id.as_str()) {
        return Err(format!(
            "the C object would be named `{id}`, a C keyword; name the file after a valid C \
             identifier (e.g. golden_{id}.h)"
        ));
    }
    let mut chars = id.chars();
    if chars.next() == Some('_')
        && chars
            .next()
            .is_some_and(|c| c == '_' || c.is_ascii_uppercase())
    {
        return Err(format!(
            "the C object would be named `{id}`, a name reserved to the C implementation \
             (`__` or `_` and a capital); name the file after a valid C identifier"
        ));
    }
    Ok(id)
}

/// The header text: the task set `source` and its simulated schedule, as the C object `name`.
pub fn header(source: &str, name: &str, set: &TaskSet, clock: &Clock, outcome: &Outcome) -> String {
    let guard = format!("{}_H_", name.to_ascii_uppercase());
    let mut text = format!(
        "/*\n * Golden schedule of {source}: the task set and what `qf sim` (qf-sched under the\n \
         * simulated Zephyr scheduler) makes of it. Generated by\n \
         *   qf sim {source} --golden-c <this file>\n \
         * Do not edit: `scripts/zephyr-check golden` (tier 60) fails when this differs from what\n \
         * qf sim produces now. Times in ns from time zero; one unit = unit_ns.\n */\n\
         #ifndef {guard}\n#define {guard}\n\n{TYPES}\n"
    );
    for (i, task) in set.tasks.iter().enumerate() {
        if let TaskKind::Cbs { jobs, .. } = &task.kind {
            let _ = writeln!(
                text,
                "QF_GOLDEN_DATA struct qf_golden_job {name}_jobs_{i}[] = {{"
            );
            for (arrival, work) in jobs {
                let _ = writeln!(text, "\t{{{arrival}ULL, {work}ULL}},");
            }
            text.push_str("};\n\n");
        }
    }
    let _ = writeln!(
        text,
        "QF_GOLDEN_DATA struct qf_golden_task {name}_tasks[] = {{"
    );
    for (i, task) in set.tasks.iter().enumerate() {
        let fields = match &task.kind {
            TaskKind::Periodic {
                wcet_ns,
                period_ns,
                deadline_ns,
                offset_ns,
            } => format!(
                ".kind = QF_GOLDEN_PERIODIC, .wcet_ns = {wcet_ns}ULL, .period_ns = {period_ns}ULL,\n\t \
                 .deadline_ns = {deadline_ns}ULL, .offset_ns = {offset_ns}ULL"
            ),
            TaskKind::Cbs {
                budget_ns,
                period_ns,
                jobs,
                hard_reservation,
            } => format!(
                ".kind = QF_GOLDEN_CBS, .budget_ns = {budget_ns}ULL, .period_ns = {period_ns}ULL,\n\t \
                 .hard_reservation = {hard_reservation}, .jobs = {name}_jobs_{i}, .n_jobs = {}",
                jobs.len()
            ),
        };
        let _ = writeln!(
            text,
            "\t{{.name = \"{}\", .priority = {},\n\t {fields}}},",
            task.name, task.priority
        );
    }
    text.push_str("};\n\n");

    let _ = writeln!(
        text,
        "/* start,end,task in units */\nQF_GOLDEN_DATA struct qf_golden_slice {name}_slices[] = {{"
    );
    for slice in &outcome.slices {
        let _ = writeln!(
            text,
            "\t{{{}ULL, {}ULL, {}}}, /* {},{},{} */",
            slice.start_ns,
            slice.end_ns,
            slice.task,
            clock.ns_in_units(slice.start_ns),
            clock.ns_in_units(slice.end_ns),
            set.tasks[slice.task].name
        );
    }
    text.push_str("};\n\n");

    let _ = writeln!(
        text,
        "/* time,task,event,budget,deadline in units (qf sim --events) */\n\
         QF_GOLDEN_DATA struct qf_golden_event {name}_events[] = {{"
    );
    for row in &outcome.events {
        let e = row.event;
        let _ = writeln!(
            text,
            "\t{{{}ULL, {}, \"{}\", {}ULL, {}ULL}}, /* {},{},{},{},{} */",
            row.time_ns,
            e.thread.index(),
            e.kind.name(),
            // A budget is a tick count: its length is the time of that tick past the origin.
            clock.ns_of_tick(e.budget.saturating_add(clock.origin_ticks)),
            clock.ns_of_tick(e.deadline),
            clock.ns_in_units(row.time_ns),
            set.tasks[e.thread.index()].name,
            e.kind.name(),
            clock.ticks_in_units(e.budget),
            clock.ns_in_units(clock.ns_of_tick(e.deadline))
        );
    }
    text.push_str("};\n\n");

    let _ = write!(
        text,
        "QF_GOLDEN_DATA struct qf_golden {name} = {{\n\
         \t.source = \"{source}\",\n\
         \t.unit_ns = {}ULL,\n\
         \t.horizon_ns = {}ULL,\n\
         \t.tick_hz = {},\n\
         \t.tasks = {name}_tasks,\n\
         \t.n_tasks = {},\n\
         \t.slices = {name}_slices,\n\
         \t.n_slices = {},\n\
         \t.events = {name}_events,\n\
         \t.n_events = {},\n\
         }};\n\n#endif /* {guard} */\n",
        set.unit_ns,
        set.horizon_ns,
        set.tick_hz,
        set.tasks.len(),
        outcome.slices.len(),
        outcome.events.len(),
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{simulate, Options};
    use crate::taskset::parse;
    use std::path::Path;

    const TEST_CASE_1: &str = include_str!("../../../../examples/test-case-1.toml");

    fn golden_of(text: &str) -> String {
        let set = parse(Path::new("tc1.toml"), text).expect("valid task set");
        let clock = Clock {
            tick_hz: set.tick_hz,
            unit_ns: set.unit_ns,
            origin_ticks: 0,
        };
        let outcome = simulate(&set, Options::default());
        header(
            "examples/test-case-1.toml",
            "golden_tc1",
            &set,
            &clock,
            &outcome,
        )
    }

    #[test]
    fn identifiers_are_made_valid_for_c() {
        assert_eq!(identifier("golden_tc1").as_deref(), Ok("golden_tc1"));
        assert_eq!(identifier("golden-tc.1").as_deref(), Ok("golden_tc_1"));
        assert_eq!(identifier("1st").as_deref(), Ok("_1st"));
        assert_eq!(identifier("integer").as_deref(), Ok("integer"));
    }

    #[test]
    fn keywords_and_reserved_names_are_refused() {
        for stem in ["int", "struct", "_Bool", "static_assert"] {
            let why = identifier(stem).expect_err(stem);
            assert!(why.contains(&format!("`{stem}`, a C keyword")), "{why}");
        }
        for stem in ["__golden", "_Golden", "-Golden"] {
            let why = identifier(stem).expect_err(stem);
            assert!(why.contains("reserved to the C implementation"), "{why}");
        }
    }

    #[test]
    fn test_case_1_header_lists_its_tasks_slices_and_cbs_events_in_nanoseconds() {
        let text = golden_of(TEST_CASE_1);
        // hard1 (4, 7) and the CBS (3, 8) with J1 (C = 4) at 3 and J2 (C = 3) at 13.
        assert!(text.contains(".name = \"hard1\", .priority = 0"));
        assert!(text.contains(".wcet_ns = 4000000ULL, .period_ns = 7000000ULL"));
        assert!(text.contains(".budget_ns = 3000000ULL, .period_ns = 8000000ULL"));
        assert!(text.contains("\t{3000000ULL, 4000000ULL},\n\t{13000000ULL, 3000000ULL},"));
        // The first slice is hard1 from 0 to 4; J1's budget is exhausted at 7 (deadline 19).
        assert!(text.contains("\t{0ULL, 4000000ULL, 0}, /* 0,4,hard1 */"));
        assert!(text.contains(
            "\t{7000000ULL, 1, \"B_ROUT\", 3000000ULL, 19000000ULL}, /* 7,cbs1,B_ROUT,3,19 */"
        ));
        assert!(text.contains(".horizon_ns = 35000000ULL"));
        assert!(text.ends_with("#endif /* GOLDEN_TC1_H_ */\n"));
    }

    #[test]
    fn the_header_follows_the_task_set() {
        let longer = TEST_CASE_1.replace("wcet = 4", "wcet = 5");
        assert_ne!(golden_of(TEST_CASE_1), golden_of(&longer));
    }
}
