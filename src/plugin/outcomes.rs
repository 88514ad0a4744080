//! What a request ends in: a [`PathOutcome`] (a [`Message`] and an [`EntityEvent`]) and, when a
//! path was found, the unit's [`NavPath`] component.

use bevy::prelude::*;

use crate::core::Cell;

use super::classes::ClassId;
use super::request::{PathFailure, PathOrigin, PathRequest};

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Reflect)]
pub enum OutcomeKind {
    /// A path was found and is in the unit's [`NavPath`].
    Found {
        /// Length in tiles.
        length: f64,
        /// Which search found it.
        search: SearchKind,
    },
    /// The request failed.
    Failed(PathFailure),
    /// The request was removed or replaced first.
    Cancelled,
}

/// Which search found a path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Reflect)]
pub enum SearchKind {
    /// The unit's own A* (or Dijkstra for nearest-of goals).
    #[default]
    Own,
    /// The unit's own jump point search: exact, as A* (on eight-way grids of one terrain without
    /// penalties, with [`SearchConfig::jump_points`](crate::core::SearchConfig::jump_points), to
    /// a goal more than 16 tiles away: nearer ones run A*, faster there).
    JumpPoints,
    /// A search shared with other units going to the same goal or group target, grown in this
    /// request's frames or earlier and kept in the cache
    /// ([`TilepathSettings::share_searches`](crate::TilepathSettings::share_searches)).
    Shared,
    /// A search through the map's region map first, its route refined leg by leg (long
    /// requests: [`TilepathSettings::hierarchical_beyond`](crate::TilepathSettings::hierarchical_beyond)).
    Hierarchical,
}

/// The one outcome of one request: read it with a `MessageReader<PathOutcome>` or observe it on
/// the unit with `On<PathOutcome>`. Outcomes of the plugin's own searches (repaths after grid
/// edits, units making way) come too; filter on [`PathOutcome::origin`] to see only yours.
#[derive(Message, EntityEvent, Clone, Copy, Debug, PartialEq, Reflect)]
pub struct PathOutcome {
    /// The unit.
    pub entity: Entity,
    /// The request's ticket (unique, increasing).
    pub ticket: u64,
    /// Who asked: [`PathOrigin::User`] for the game's [`PathRequest`].
    pub origin: PathOrigin,
    /// How it ended.
    pub kind: OutcomeKind,
    /// Frames between the request and this outcome.
    pub latency_frames: u32,
}

/// The path found for a unit: grid cells and smoothed world-space waypoints.
#[derive(Component, Clone, Debug, PartialEq, Reflect)]
#[reflect(Component)]
pub struct NavPath {
    /// The A* cells, start to goal.
    pub cells: Vec<Cell>,
    /// Smoothed waypoints in world space, start to goal (the cells' centers if smoothing is off).
    pub waypoints: Vec<Vec2>,
    /// The cells a unit's center passes through walking the waypoints, in order (8-connected;
    /// what movement claims and checks for other units, and what grid edits are tested against).
    pub corridor: Vec<Cell>,
    /// Total fixed-point cost.
    pub cost: u64,
    /// Length of the cell path in tiles.
    pub length: f64,
    /// The goal reached (may differ from the one asked for under
    /// [`GoalPolicy::NearestReachable`](crate::core::GoalPolicy::NearestReachable)).
    pub goal: Cell,
    /// The map it was found on.
    #[entities]
    pub map: Entity,
    /// The class it was planned for: its cells are on [`NavMap::grid_of`](crate::NavMap::grid_of)
    /// this class.
    pub class: ClassId,
    /// Who asked for it.
    pub origin: PathOrigin,
    /// Which search found it.
    pub search: SearchKind,
    /// The ticket of the request it answers (as in its [`PathOutcome`]).
    pub ticket: u64,
    /// The request it answers (searched again when an edit crosses the path).
    pub request: PathRequest,
}
