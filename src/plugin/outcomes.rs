//! Outcomes of requests, delivered as a [`Message`] and as an [`EntityEvent`].

use bevy::prelude::*;

use super::components::PathFailure;

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OutcomeKind {
    /// A path was found and is in the unit's [`Path`](crate::Path).
    Found {
        /// Length in tiles.
        length: f64,
    },
    /// The request failed.
    Failed(PathFailure),
    /// The request was removed or replaced first.
    Cancelled,
}

/// The one outcome of one [`PathRequest`](crate::PathRequest): read it with a
/// `MessageReader<PathOutcome>` or observe it on the unit with `On<PathOutcome>`.
#[derive(Message, EntityEvent, Clone, Copy, Debug, PartialEq)]
pub struct PathOutcome {
    /// The unit.
    pub entity: Entity,
    /// The request's ticket (unique, increasing).
    pub ticket: u64,
    /// How it ended.
    pub kind: OutcomeKind,
    /// Frames between the request and this outcome.
    pub latency_frames: u32,
}
