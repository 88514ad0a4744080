//! The pure pathfinding core: no ECS, usable and benchmarked without an `App`.
//!
//! - [`NavGrid`]: walkability, terrain cost, penalty layer, move rules, islands; square or
//!   hexagonal cells ([`Topology`]).
//! - [`ClassGrid`]: a unit class's own grid (its [`TerrainCosts`] per terrain kind, and the
//!   clearance its footprint needs), derived from the shared one and kept up to date.
//! - [`AStar`]: resumable A* / Dijkstra with reusable scratch; [`find_path`], [`find_nearest`].
//! - [`GoalTree`]: one backward search from a goal shared by every unit going there.
//! - [`RegionMap`]: hierarchical search for long paths; [`find_path_hierarchical`], resumable
//!   as [`HierarchicalSearch`].
//! - [`passage_crossings`]: the passages one cell wide a path crosses, and which way.
//! - [`avoid_velocity`]: local avoidance (ORCA) between units and against walls.
//! - [`movingai`]: the MovingAI benchmark file formats.
//! - [`fmath`]: transcendental float math with the same bits on every platform (lockstep).

mod avoidance;
mod classes;
mod cost;
pub mod fmath;
mod goal_tree;
mod grid;
mod heuristic;
mod hex;
mod hierarchy;
mod islands;
mod jps;
mod jump_table;
mod lanes;
mod line;
pub mod movingai;
mod passages;
mod path;
mod search;
mod slots;
mod smooth;
#[cfg(test)]
mod test_rng;
mod turn;
mod zeroed;

pub use avoidance::{AvoidanceParams, Body, avoid_velocity, wall_points};
pub(crate) use classes::wall_radius;
pub use classes::{
    ClassError, ClassGrid, Knowledge, MAX_CLEARANCE, MIN_WALL_RADIUS, MoveClass, TerrainCosts,
};
pub use cost::CostModel;
pub use goal_tree::{GoalTree, TreeStep};
pub(crate) use grid::cells_around;
pub use grid::{BLOCKED, Cell, CornerRule, GridError, MoveRules, NORMAL, NavGrid, Topology};
pub use heuristic::Heuristic;
pub use hierarchy::{HierarchicalSearch, RegionMap, find_path_hierarchical};
pub use lanes::{Lane, LaneWalk, Lanes};
pub use line::{
    cell_at, cell_center, overlaps_blocked, polyline_cells, traverse, walkable, walkable_sampled,
};
#[cfg(test)]
pub(crate) use passages::gate_in_a_wall;
pub use passages::{Crossing, passage_crossings};
pub use path::{Path, PathError, cells_length, count_turns};
pub use search::{
    AStar, CellOverlay, GoalPolicy, SearchConfig, SearchStep, find_nearest, find_path,
    nearest_on_island,
};
pub(crate) use search::{check_nearest, resolve_ends};
pub use slots::{Formation, assign_slots, formation_slots, group_center, spread_slots};
pub use smooth::{Smoother, count_turns_f, polyline_length, smooth_path, smooth_path_in_steps};
pub use turn::TurnPlan;
