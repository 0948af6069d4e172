//! The Gantt chart of a simulation as SVG, drawn like the paper's Figure 2: one lane per
//! thread with its execution slices, job releases (up arrows) and absolute deadlines (down
//! arrows; dashed for CBS postponements), deadline misses (red crosses), and under each CBS
//! thread its budget over time with the B_COND / B_ROUT events marked.

use std::fmt::Write as _;

use qf_sched::EventKind;

use crate::clock::Clock;
use crate::engine::{Outcome, TraceEvent};
use crate::taskset::{TaskKind, TaskSet};

const LEFT: f64 = 96.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 44.0;
const LANE: f64 = 56.0;
const BUDGET_LANE: f64 = 64.0;
const BAR: f64 = 22.0;
const COLOURS: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f",
];

struct Scale {
    px_per_unit: f64,
    clock: Clock,
}

impl Scale {
    fn x(&self, ns: u64) -> f64 {
        LEFT + self.clock.ns_to_units_f64(ns) * self.px_per_unit
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Renders the chart; `title` goes on top (e.g. the task-set file name).
pub fn svg(set: &TaskSet, clock: &Clock, outcome: &Outcome, title: &str) -> String {
    let horizon_units = clock.ns_to_units_f64(set.horizon_ns);
    let px_per_unit = (1400.0 / horizon_units).min(40.0);
    let scale = Scale {
        px_per_unit,
        clock: *clock,
    };
    let lanes: f64 = set
        .tasks
        .iter()
        .map(|t| match t.kind {
            TaskKind::Periodic { .. } => LANE,
            TaskKind::Cbs { .. } => LANE + BUDGET_LANE,
        })
        .sum();
    let width = LEFT + horizon_units * px_per_unit + RIGHT;
    let height = TOP + lanes + 40.0;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<defs><marker id="arrow" markerWidth="8" markerHeight="8" refX="4" refY="4" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="black"/></marker></defs>"#
    );
    let _ = writeln!(
        svg,
        r#"<text x="{LEFT}" y="20" font-size="14" font-weight="bold">{} — unit {}, tick {} Hz</text>"#,
        escape(title),
        escape(&set.unit_name),
        set.tick_hz
    );

    let mut y = TOP;
    for (index, task) in set.tasks.iter().enumerate() {
        let colour = COLOURS[index % COLOURS.len()];
        let base = y + LANE - 12.0;
        lane(
            &mut svg, &scale, set, outcome, index, &task.name, colour, base,
        );
        y += LANE;
        if let TaskKind::Cbs { budget_ns, .. } = task.kind {
            budget(&mut svg, &scale, set, outcome, index, budget_ns, colour, y);
            y += BUDGET_LANE;
        }
    }
    axis(&mut svg, &scale, horizon_units, y + 4.0);
    svg.push_str("</svg>\n");
    svg
}

#[allow(clippy::too_many_arguments)]
fn lane(
    svg: &mut String,
    scale: &Scale,
    set: &TaskSet,
    outcome: &Outcome,
    index: usize,
    name: &str,
    colour: &str,
    base: f64,
) {
    let right = scale.x(set.horizon_ns);
    let _ = writeln!(
        svg,
        r#"<text x="8" y="{:.1}">{}</text><line x1="{LEFT}" y1="{base:.1}" x2="{right:.1}" y2="{base:.1}" stroke="black"/>"#,
        base - 4.0,
        escape(name)
    );
    for slice in outcome.slices.iter().filter(|s| s.task == index) {
        let (x0, x1) = (scale.x(slice.start_ns), scale.x(slice.end_ns));
        let _ = writeln!(
            svg,
            r#"<rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="{BAR}" fill="{colour}" stroke="black" stroke-width="0.5"/>"#,
            base - BAR,
            x1 - x0
        );
    }
    let mut deadlines: Vec<(u64, bool)> = Vec::new();
    for TraceEvent { time_ns, event } in outcome
        .events
        .iter()
        .filter(|e| e.event.thread.index() == index)
    {
        let deadline_ns = scale.clock.ns_of_tick(event.deadline);
        match event.kind {
            EventKind::Release | EventKind::Arrival if *time_ns < set.horizon_ns => {
                let x = scale.x(*time_ns);
                let _ = writeln!(
                    svg,
                    r#"<line x1="{x:.1}" y1="{base:.1}" x2="{x:.1}" y2="{:.1}" stroke="black" marker-end="url(#arrow)"/>"#,
                    base - BAR - 10.0
                );
                deadlines.push((deadline_ns, false));
            }
            EventKind::BudgetCondition => deadlines.push((deadline_ns, false)),
            EventKind::BudgetReplenish | EventKind::Throttle => deadlines.push((deadline_ns, true)),
            EventKind::DeadlineMiss => {
                let x = scale.x(*time_ns);
                let _ = writeln!(
                    svg,
                    r#"<path d="M{:.1},{:.1} l8,8 m0,-8 l-8,8" stroke="red" stroke-width="2"/>"#,
                    x - 4.0,
                    base + 2.0
                );
            }
            _ => {}
        }
    }
    deadlines.sort_unstable();
    deadlines.dedup_by_key(|d| d.0);
    for (deadline_ns, postponed) in deadlines {
        if deadline_ns > set.horizon_ns {
            continue;
        }
        let x = scale.x(deadline_ns);
        let dash = if postponed {
            r#" stroke-dasharray="3,2""#
        } else {
            ""
        };
        let _ = writeln!(
            svg,
            r#"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="black"{dash} marker-end="url(#arrow)"/>"#,
            base - BAR - 10.0,
            base - 1.0
        );
    }
}

/// The budget of CBS task `index` over time: linear descent while its clock runs, jumps at
/// replenishments.
#[allow(clippy::too_many_arguments)]
fn budget(
    svg: &mut String,
    scale: &Scale,
    set: &TaskSet,
    outcome: &Outcome,
    index: usize,
    budget_ns: u64,
    colour: &str,
    top: f64,
) {
    let base = top + BUDGET_LANE - 16.0;
    let height = BUDGET_LANE - 28.0;
    let max_units = scale
        .clock
        .ns_to_units_f64(budget_ns)
        .max(f64::MIN_POSITIVE);
    let y_of = |units: f64| base - height * (units / max_units).min(1.0);
    let right = scale.x(set.horizon_ns);
    let _ = writeln!(
        svg,
        r#"<text x="8" y="{:.1}" font-size="11">budget</text><line x1="{LEFT}" y1="{base:.1}" x2="{right:.1}" y2="{base:.1}" stroke="grey"/>"#,
        base - 4.0
    );
    let (mut t, mut c, mut running) = (0u64, 0.0f64, false);
    let mut points = vec![(scale.x(0), y_of(0.0))];
    let mut marks = String::new();
    for TraceEvent { time_ns, event } in outcome
        .events
        .iter()
        .filter(|e| e.event.thread.index() == index)
    {
        let now = (*time_ns).min(set.horizon_ns);
        let before = if running {
            (c - scale.clock.ns_to_units_f64(now.saturating_sub(t))).max(0.0)
        } else {
            c
        };
        points.push((scale.x(now), y_of(before)));
        c = scale.clock.ticks_to_units_f64(event.budget);
        t = now;
        points.push((scale.x(now), y_of(c)));
        running = match event.kind {
            EventKind::SwitchedTo => true,
            EventKind::SwitchedAway | EventKind::Complete | EventKind::Throttle => false,
            _ => running,
        };
        let label = match event.kind {
            EventKind::BudgetCondition => "B_COND",
            EventKind::BudgetReplenish => "B_ROUT",
            _ => continue,
        };
        if *time_ns < set.horizon_ns {
            let x = scale.x(*time_ns);
            let _ = writeln!(
                marks,
                r#"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{base:.1}" stroke="{colour}" stroke-dasharray="2,2"/><text x="{:.1}" y="{:.1}" font-size="10" fill="{colour}">{label}</text>"#,
                base - height - 4.0,
                x + 2.0,
                base - height - 2.0
            );
        }
    }
    let end = set.horizon_ns;
    let last = if running {
        (c - scale.clock.ns_to_units_f64(end.saturating_sub(t))).max(0.0)
    } else {
        c
    };
    points.push((scale.x(end), y_of(last)));
    let path: Vec<String> = points
        .iter()
        .map(|(x, y)| format!("{x:.1},{y:.1}"))
        .collect();
    let _ = writeln!(
        svg,
        r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
        path.join(" ")
    );
    svg.push_str(&marks);
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">Q={}</text>"#,
        LEFT - 4.0,
        base - height + 4.0,
        scale.clock.ns_in_units(budget_ns)
    );
}

fn axis(svg: &mut String, scale: &Scale, horizon_units: f64, y: f64) {
    let right = LEFT + horizon_units * scale.px_per_unit;
    let _ = writeln!(
        svg,
        r#"<line x1="{LEFT}" y1="{y:.1}" x2="{right:.1}" y2="{y:.1}" stroke="black"/>"#
    );
    // A label every 1, 2, 5, 10, ... units so they stay at least 24 px apart.
    let mut step = 1.0;
    for factor in [2.0, 2.5, 2.0].iter().cycle() {
        if step * scale.px_per_unit >= 24.0 {
            break;
        }
        step *= factor;
    }
    let mut tick = 0.0;
    while tick <= horizon_units + 1e-9 {
        let x = LEFT + tick * scale.px_per_unit;
        let _ = writeln!(
            svg,
            r#"<line x1="{x:.1}" y1="{y:.1}" x2="{x:.1}" y2="{:.1}" stroke="black"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" font-size="10">{tick}</text>"#,
            y + 4.0,
            y + 16.0
        );
        tick += step;
    }
}
