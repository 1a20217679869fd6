//! What the running bot measures about itself: the registry of counters and histograms behind
//! `GET /metrics`, and the stage observers that time each stage (for metrics, or for a terminal).

mod registry;
mod stages;

pub use registry::{LlmCall, Telemetry};
pub use stages::{MeteredStages, StageClock, StageObserver, Stages, StderrStages};
