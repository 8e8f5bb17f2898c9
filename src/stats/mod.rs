//! Counting and reporting: per-thread operation counters read once a second by the main thread,
//! the C suite's report lines, JSON lines, and latency summaries.

mod cycles;
mod json;
mod latency;
mod report;
mod sample;
mod stability;

pub use cycles::{CycleClock, Stamp};
pub use json::JsonObject;
pub use latency::LatencySummary;
pub use report::{Counters, Reporter, RunInfo, Summary, Tally};
pub use sample::{drift_first_last_tenth, t95, SampleStats};
pub use stability::{StabilityLog, CV_LIMIT, DRIFT_LIMIT, STABILITY_CSV_HEADER};
