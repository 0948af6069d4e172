//! A task set as one line of text, the form the Zephyr differential app
//! (`zephyr-module/tests/differential`) reads at run time, so that one image runs any set.
//! Space-separated fields, every time in nanoseconds:
//!
//! ```text
//! qfset1 tick_hz=T unit_ns=U horizon_ns=H admission_ppm=A|none
//!        task=NAME,periodic,PRIO,WCET,PERIOD,DEADLINE,OFFSET
//!        task=NAME,cbs,PRIO,BUDGET,PERIOD,HARD,ARRIVAL:WORK;ARRIVAL:WORK...
//! ```
//!
//! `HARD` is 0 or 1; the jobs of a CBS task are separated by `;`. Names are what `qf sim`
//! accepts; the app takes up to 15 bytes and priorities 0 to 8 ([`line_of`] refuses more).

use qf_sim::taskset::{TaskKind, TaskSet};

/// Longest task name the app keeps.
pub const MAX_NAME: usize = 15;
/// Largest priority the app accepts.
pub const MAX_PRIORITY: i32 = 8;
/// Most tasks the app runs (its `SET_LINE_MAX_TASKS`).
pub const MAX_TASKS: usize = 8;
/// Most jobs of one CBS task the app keeps (its `SET_LINE_MAX_JOBS`).
pub const MAX_JOBS: usize = 64;

/// `set` as one line (no newline), or why the app could not read it.
pub fn line_of(set: &TaskSet) -> Result<String, String> {
    let admission = match set.admission_bound_ppm {
        Some(ppm) => ppm.to_string(),
        None => "none".into(),
    };
    let mut line = format!(
        "qfset1 tick_hz={} unit_ns={} horizon_ns={} admission_ppm={admission}",
        set.tick_hz, set.unit_ns, set.horizon_ns
    );
    if set.tasks.len() > MAX_TASKS {
        return Err(format!(
            "{} tasks: the app runs at most {MAX_TASKS}",
            set.tasks.len()
        ));
    }
    for task in &set.tasks {
        if task.name.len() > MAX_NAME
            || task.name.is_empty()
            || task
                .name
                .bytes()
                .any(|b| b == b',' || b.is_ascii_whitespace() || !b.is_ascii_graphic())
        {
            let cut: String = task.name.chars().take(MAX_NAME + 1).collect();
            return Err(format!(
                "task {cut:?}: a name of 1 to {MAX_NAME} printable ASCII characters without \
                 ',' or spaces is needed"
            ));
        }
        if !(0..=MAX_PRIORITY).contains(&task.priority) {
            return Err(format!(
                "task {}: priority {} outside 0..={MAX_PRIORITY}",
                task.name, task.priority
            ));
        }
        let fields = match &task.kind {
            TaskKind::Periodic {
                wcet_ns,
                period_ns,
                deadline_ns,
                offset_ns,
            } => format!(
                "periodic,{},{wcet_ns},{period_ns},{deadline_ns},{offset_ns}",
                task.priority
            ),
            TaskKind::Cbs {
                budget_ns,
                period_ns,
                jobs,
                hard_reservation,
            } => {
                if jobs.is_empty() || jobs.len() > MAX_JOBS {
                    return Err(format!(
                        "task {}: {} jobs, the app serves 1 to {MAX_JOBS}",
                        task.name,
                        jobs.len()
                    ));
                }
                let jobs: Vec<String> = jobs.iter().map(|(a, w)| format!("{a}:{w}")).collect();
                format!(
                    "cbs,{},{budget_ns},{period_ns},{},{}",
                    task.priority,
                    u8::from(*hard_reservation),
                    jobs.join(";")
                )
            }
        };
        line.push_str(&format!(" task={},{fields}", task.name));
    }
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn parse(text: &str) -> TaskSet {
        qf_sim::taskset::parse(Path::new("t.toml"), text).expect("valid set")
    }

    const HEAD: &str = "unit = \"1ms\"\ntick_hz = 10000\nhorizon = 35\n";

    #[test]
    fn the_paper_set_as_a_line() {
        let set = parse(&format!(
            "{HEAD}[[task]]\nname = \"hard1\"\nkind = \"periodic\"\nwcet = 4\nperiod = 7\n\
             deadline = 6\noffset = 1\n[[task]]\nname = \"cbs1\"\nkind = \"cbs\"\nbudget = 3\n\
             period = 8\njobs = [[3, 4], [13, 3]]\nhard_reservation = true\n"
        ));
        assert_eq!(
            line_of(&set).unwrap(),
            "qfset1 tick_hz=10000 unit_ns=1000000 horizon_ns=35000000 admission_ppm=none \
             task=hard1,periodic,0,4000000,7000000,6000000,1000000 \
             task=cbs1,cbs,0,3000000,8000000,1,3000000:4000000;13000000:3000000"
        );
    }

    #[test]
    fn what_the_app_cannot_hold_is_refused_by_name() {
        let long = parse(&format!(
            "{HEAD}admission_bound = 0.9\n[[task]]\nname = \"a_name_of_twenty_chars\"\n\
             kind = \"periodic\"\nwcet = 1\nperiod = 7\n"
        ));
        let why = line_of(&long).unwrap_err();
        assert!(why.contains("a_name_of_twenty"), "{why}");
        let mut tasks = String::new();
        for i in 0..=MAX_TASKS {
            tasks.push_str(&format!(
                "[[task]]\nname = \"t{i}\"\nkind = \"periodic\"\nwcet = 1\nperiod = 70\n"
            ));
        }
        let why = line_of(&parse(&format!("{HEAD}{tasks}"))).unwrap_err();
        assert!(why.contains("9 tasks"), "{why}");
    }
}
