//! The time-sliced path queue: requests are validated (`validate`), wait in a list from which
//! a few start per frame (`policy`, `service`), advance inline within a per-frame budget and
//! resume next frame (`inline`) or run on `AsyncComputeTaskPool` and report back over a
//! `crossbeam-channel` (`workers`), and end in exactly one outcome (`delivery`). Paths that a
//! grid edit crosses are searched again (`repath`). Long requests search a region map first
//! (`regions`, kept current after edits).

pub(crate) mod delivery;
pub(crate) mod inline;
pub(crate) mod job;
pub(crate) mod path_queue;
mod policy;
pub(crate) mod refine;
pub(crate) mod regions;
pub(crate) mod repath;
pub(crate) mod service;
pub(crate) mod shared;
pub(crate) mod validate;
pub(crate) mod waiting;
pub(crate) mod workers;

pub use path_queue::PathQueue;
