//! Search results and errors.

use super::cell::Cell;

/// A path found by a search.
#[derive(Clone, Debug, PartialEq)]
pub struct Path {
    /// The cells from the start to the goal, both included.
    pub cells: Vec<Cell>,
    /// Total fixed-point cost (steps times terrain plus penalties, see
    /// [`CostModel`](super::CostModel)).
    pub cost: u64,
    /// Length in tiles: straight steps count 1, diagonal steps exactly sqrt 2.
    pub length: f64,
    /// Nodes expanded by the search.
    pub expansions: u32,
    /// The goal reached (differs from the one asked for under
    /// [`GoalPolicy::NearestReachable`](super::GoalPolicy::NearestReachable)).
    pub goal: Cell,
    /// For nearest-of-several-goals searches: the index of the goal reached in the list given.
    pub goal_index: Option<usize>,
}

/// Why no path was produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PathError {
    /// The start cell is outside the grid.
    StartOutOfBounds(Cell),
    /// The goal cell is outside the grid.
    GoalOutOfBounds(Cell),
    /// The start cell is blocked.
    StartBlocked(Cell),
    /// The goal cell is blocked (and the goal policy says fail).
    GoalBlocked(Cell),
    /// The goal is on another island than the start (known without searching).
    Unreachable,
    /// The search exhausted every reachable cell without reaching the goal (possible when
    /// per-search overlays block the way).
    NoPath,
    /// The search gave up at its expansion limit, or at its cost limit (every path left would
    /// cost more: [`SearchConfig::max_cost`](super::SearchConfig::max_cost)).
    LimitExceeded {
        /// Expansions made.
        expansions: u32,
    },
    /// A nearest-goal search was given no goals.
    NoGoals,
    /// [`AStar::step`](super::AStar::step) was called without a search in progress.
    NotStarted,
    /// The search cannot run on this grid (a vehicle's search on hexagonal cells, or on a grid
    /// too large for its states).
    Unsupported(&'static str),
}

impl std::fmt::Display for PathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PathError::StartOutOfBounds(c) => {
                write!(f, "start ({}, {}) is out of bounds", c.x, c.y)
            }
            PathError::GoalOutOfBounds(c) => write!(f, "goal ({}, {}) is out of bounds", c.x, c.y),
            PathError::StartBlocked(c) => write!(f, "start ({}, {}) is blocked", c.x, c.y),
            PathError::GoalBlocked(c) => write!(f, "goal ({}, {}) is blocked", c.x, c.y),
            PathError::Unreachable => write!(f, "goal is not reachable from the start"),
            PathError::NoPath => write!(f, "no path exists"),
            PathError::LimitExceeded { expansions } => {
                write!(f, "search limit exceeded after {expansions} expansions")
            }
            PathError::NoGoals => write!(f, "no goals were given"),
            PathError::NotStarted => write!(f, "no search in progress"),
            PathError::Unsupported(why) => write!(f, "unsupported: {why}"),
        }
    }
}

impl std::error::Error for PathError {}

impl Path {
    /// Number of direction changes along the path.
    pub fn turns(&self) -> usize {
        count_turns(&self.cells)
    }
}

/// Number of direction changes along a polyline of cells.
pub fn count_turns(cells: &[Cell]) -> usize {
    cells
        .windows(3)
        .filter(|w| {
            let a = w[1] - w[0];
            let b = w[2] - w[1];
            // Parallel and same direction: cross product zero and dot positive.
            !(a.x as i64 * b.y as i64 == a.y as i64 * b.x as i64 && a.dot(b) > 0)
        })
        .count()
}
