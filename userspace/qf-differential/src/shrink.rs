//! Shrinking a failing set (greedy delta debugging, as proptest's shrinking does): try
//! smaller variants one at a time — without a task, without a CBS job, a shorter horizon,
//! smaller numbers, optional fields dropped — keep the first that `qf sim` accepts and that
//! still fails, and start over from it; stop when no variant fails (the set is then minimal
//! for these steps) or after a number of tries.

use qf_sim::TaskSet;

use crate::spec::{SetSpec, TaskSpec};

/// What shrinking found.
#[derive(Clone, Debug, PartialEq)]
pub struct Shrunk {
    /// The smallest failing set found.
    pub set: SetSpec,
    /// Predicate calls made.
    pub tries: usize,
    /// Variants accepted (each a step towards `set`).
    pub steps: usize,
    /// True when the try limit stopped the search before a minimum.
    pub limited: bool,
}

/// Smaller values than `x` worth trying, smallest first, none below `min`.
fn smaller(x: u64, min: u64) -> Vec<u64> {
    let mut out = vec![
        min,
        min + (x - min.min(x)) / 2,
        x - (x - min.min(x)) / 4,
        x.saturating_sub(1),
    ];
    out.retain(|&v| v >= min && v < x);
    out.dedup();
    out
}

/// Every one-step smaller variant of `set`, the biggest cuts first.
fn variants(set: &SetSpec) -> Vec<SetSpec> {
    let mut out = Vec::new();
    if set.task.len() > 1 {
        for k in 0..set.task.len() {
            let mut v = set.clone();
            v.task.remove(k);
            out.push(v);
        }
    }
    for (k, task) in set.task.iter().enumerate() {
        let jobs = task.jobs.as_deref().unwrap_or_default();
        if jobs.len() > 1 {
            for j in 0..jobs.len() {
                let mut v = set.clone();
                if let Some(list) = v.task[k].jobs.as_mut() {
                    list.remove(j);
                }
                out.push(v);
            }
        }
    }
    for horizon in smaller(set.horizon, 1) {
        out.push(SetSpec {
            horizon,
            ..set.clone()
        });
    }
    if set.admission_bound.is_some() {
        out.push(SetSpec {
            admission_bound: None,
            ..set.clone()
        });
    }
    for (k, task) in set.task.iter().enumerate() {
        let with = |edit: &dyn Fn(&mut TaskSpec)| {
            let mut v = set.clone();
            edit(&mut v.task[k]);
            v
        };
        if task.priority.is_some() {
            out.push(with(&|t| t.priority = None));
        }
        if task.deadline.is_some() {
            out.push(with(&|t| t.deadline = None));
        }
        if task.hard_reservation.is_some() {
            out.push(with(&|t| t.hard_reservation = None));
        }
        type Field = fn(&mut TaskSpec) -> &mut Option<u64>;
        let fields: [(Field, u64); 5] = [
            (|t| &mut t.offset, 0),
            (|t| &mut t.wcet, 1),
            (|t| &mut t.budget, 1),
            (|t| &mut t.deadline, 1),
            (|t| &mut t.period, 1),
        ];
        for (field, min) in fields {
            let mut probe = task.clone();
            if let Some(x) = *field(&mut probe) {
                for value in smaller(x, min) {
                    out.push(with(&|t| *field(t) = Some(value)));
                }
            }
        }
        for (j, job) in task.jobs.as_deref().unwrap_or_default().iter().enumerate() {
            for column in 0..2 {
                let min = if column == 0 {
                    // Arrivals must not decrease.
                    j.checked_sub(1)
                        .map_or(0, |p| task.jobs.as_deref().unwrap_or_default()[p][0])
                } else {
                    1
                };
                for value in smaller(job[column], min) {
                    out.push(with(&|t| {
                        if let Some(list) = t.jobs.as_mut() {
                            list[j][column] = value;
                        }
                    }));
                }
            }
        }
    }
    out
}

/// Shrinks `set`, which must fail (`fails` true for it), calling `fails` at most `max_tries`
/// times; `fails` sees each variant `qf sim` accepts, as written and as parsed.
pub fn shrink(
    set: &SetSpec,
    max_tries: usize,
    mut fails: impl FnMut(&SetSpec, &TaskSet) -> bool,
) -> Shrunk {
    let mut current = set.clone();
    let mut tries = 0usize;
    let mut steps = 0usize;
    'search: loop {
        for variant in variants(&current) {
            let Ok(parsed) = variant.validate() else {
                continue;
            };
            if tries == max_tries {
                return Shrunk {
                    set: current,
                    tries,
                    steps,
                    limited: true,
                };
            }
            tries += 1;
            if fails(&variant, &parsed) {
                current = variant;
                steps += 1;
                continue 'search;
            }
        }
        break;
    }
    Shrunk {
        set: current,
        tries,
        steps,
        limited: false,
    }
}
