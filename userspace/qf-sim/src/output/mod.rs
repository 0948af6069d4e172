//! What a simulation is turned into: the schedule and event CSV files, the Gantt chart and the
//! per-task summary (text or JSON).

pub mod csv;
pub mod gantt;
pub mod summary;
