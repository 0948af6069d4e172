//! What a simulation is turned into: the schedule and event CSV files, the Gantt chart, the
//! per-task summary (text or JSON) and the golden-schedule C header for the Zephyr tests.

pub mod csv;
pub mod gantt;
pub mod golden_c;
pub mod summary;
