//! Components a unit carries: its request, the status of it, and the path found.

use bevy::prelude::*;

use crate::core::{Cell, GoalPolicy};

use super::queue::{on_request_despawn, on_request_insert, on_request_remove};

/// Where a unit wants to go.
#[derive(Clone, Debug, PartialEq)]
pub enum PathGoal {
    /// A world position (the cell containing it).
    World(Vec2),
    /// A cell of the map.
    Cell(Cell),
    /// The cheapest to reach of several cells (Dijkstra; Lester's nearest resource).
    NearestOf(Vec<Cell>),
}

/// Ask for a path: insert this on a unit (an entity with a `Transform`). Inserting a new one
/// replaces the old request (which ends as cancelled); removing it cancels; despawning the unit
/// drops its search without a trace. Every request ends in exactly one
/// [`PathOutcome`](crate::PathOutcome).
#[derive(Component, Clone, Debug, PartialEq)]
#[component(on_insert = on_request_insert, on_remove = on_request_remove, on_despawn = on_request_despawn)]
#[require(PathStatus, Transform)]
pub struct PathRequest {
    /// The goal.
    pub goal: PathGoal,
    /// What to do if the goal is blocked or unreachable.
    pub policy: GoalPolicy,
    /// Higher goes first; waiting requests age upward so nothing starves.
    pub priority: i32,
    /// The map to search (`None`: the only [`NavMap`](crate::NavMap) there is).
    pub map: Option<Entity>,
}

impl PathRequest {
    /// A request to a world position.
    pub fn to_world(goal: Vec2) -> Self {
        Self::new(PathGoal::World(goal))
    }

    /// A request to a cell.
    pub fn to_cell(goal: Cell) -> Self {
        Self::new(PathGoal::Cell(goal))
    }

    /// A request to the nearest of several cells.
    pub fn to_nearest(goals: Vec<Cell>) -> Self {
        Self::new(PathGoal::NearestOf(goals))
    }

    fn new(goal: PathGoal) -> Self {
        PathRequest {
            goal,
            policy: GoalPolicy::Fail,
            priority: 0,
            map: None,
        }
    }

    /// With a goal policy.
    pub fn with_policy(mut self, policy: GoalPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// With a priority.
    pub fn with_priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }

    /// On a given map.
    pub fn on_map(mut self, map: Entity) -> Self {
        self.map = Some(map);
        self
    }
}

/// Why a request failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PathFailure {
    /// There is no [`NavMap`](crate::NavMap), or several and the request named none.
    NoMap,
    /// The goal is not a finite number.
    GoalNotFinite,
    /// The goal lies outside the map.
    GoalOutOfBounds,
    /// The unit stands outside the map.
    StartOutOfBounds,
    /// The unit stands on a blocked cell.
    StartBlocked,
    /// The goal cell is blocked.
    GoalBlocked,
    /// The goal is on another island (answered without searching).
    Unreachable,
    /// Every reachable cell was searched without reaching the goal (cells occupied by other
    /// units can cause this).
    NoPath,
    /// The search hit its expansion limit.
    SearchLimitExceeded,
    /// A nearest-of request had no goals.
    NoGoals,
}

/// Where a unit's request stands.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PathStatus {
    /// No request yet.
    #[default]
    Idle,
    /// Waiting in the queue.
    Queued,
    /// Being searched.
    Searching,
    /// A [`Path`] was found.
    Found,
    /// The request failed.
    Failed(PathFailure),
    /// The request was removed or replaced before it finished.
    Cancelled,
}

/// The path found for a unit: grid cells and smoothed world-space waypoints.
#[derive(Component, Clone, Debug, PartialEq)]
pub struct Path {
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
    /// [`GoalPolicy::NearestReachable`]).
    pub goal: Cell,
    /// The map it was found on.
    pub map: Entity,
}
