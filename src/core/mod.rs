//! The pure pathfinding core: no ECS, usable and benchmarked without an `App`.
//!
//! From the bottom up (a module names only those above it in this list): cells (`cell`: the
//! [`Cell`] coordinate, the terrain constants, square geometry) and hexagons' geometry (`hex`);
//! the grid and what it keeps (islands, jump tables); line checks; the search kernel; the
//! searches; then smoothing, slots, lanes and avoidance.
//!
//! - [`NavGrid`]: walkability, terrain cost, penalty layer, move rules, islands; square or
//!   hexagonal cells ([`Topology`]).
//! - [`Link`]: links between cells that are not neighbours (doors, one-way drops,
//!   teleporters), kept on the grid; the grid searches cross them (a vehicle's does not).
//! - [`WaypointGraph`]: a map that is a graph (designer waypoints anywhere, ways between them),
//!   built into a grid whose only moves are its ways.
//! - [`ClassGrid`]: a unit class's own grid (its [`TerrainCosts`] per terrain kind, and the
//!   clearance its footprint needs), derived from the shared one and kept up to date.
//! - The search kernel (`kernel`): the one best-first loop, node records, the open list and
//!   generation stamps, which the searches below use.
//! - [`AStar`]: resumable A* / Dijkstra with reusable scratch; [`find_path`], [`find_nearest`];
//!   jump point search (`jps`) behind [`SearchConfig::jump_points`].
//! - [`GoalTree`]: one backward search from a goal shared by every unit going there.
//! - [`RegionMap`]: hierarchical search for long paths; [`find_path_hierarchical`], resumable
//!   as [`HierarchicalSearch`].
//! - [`DriveSearch`]: legal turns in the search for vehicles that cannot turn in place (states
//!   of cell, heading and gear; moves from a [`VehicleModel`]); its [`DrivePlan`] of arcs and
//!   straights, forward and in reverse.
//! - [`passage_crossings`]: the passages one cell wide a path crosses, and which way.
//! - [`avoid_velocity`]: local avoidance (ORCA) between units and against walls.
//! - [`movingai`]: the MovingAI benchmark file formats.
//! - [`fmath`]: transcendental float math with the same bits on every platform (lockstep).

mod avoidance;
mod cell;
mod classes;
mod cost;
mod drive;
mod drive_plan;
pub mod fmath;
mod goal_tree;
mod grid;
mod heuristic;
mod hex;
mod hierarchy;
mod islands;
mod jps;
mod jump_table;
mod kernel;
mod lanes;
mod line;
mod links;
pub mod movingai;
mod passages;
mod path;
mod search;
mod slots;
mod smooth;
#[cfg(test)]
mod test_rng;
mod turn;
mod vehicle;
mod waypoints;
mod zeroed;

pub use avoidance::{AvoidanceParams, Body, avoid_velocity, wall_points};
pub(crate) use cell::cells_around;
pub use cell::{BLOCKED, Cell, NORMAL, cell_at, cell_center, cells_length};
pub(crate) use classes::wall_radius;
pub use classes::{
    ClassError, ClassGrid, HEX_CORNER_GRAZE, HEX_GAP_CLEARANCE, Knowledge, MAX_CLEARANCE,
    MIN_WALL_RADIUS, MoveClass, TerrainCosts,
};
pub use cost::CostModel;
pub use drive::{DriveQuery, DriveSearch, DriveStep, band_around, find_drive};
pub use drive_plan::{DrivePlan, DriveSegment, DriveShape, PlanCells, Pose};
pub use goal_tree::{GoalTree, TreeStep};
pub(crate) use grid::BuiltJumpTable;
pub use grid::{CornerRule, GridError, MoveRules, NavGrid, Topology};
pub use heuristic::Heuristic;
pub use hierarchy::{HierarchicalSearch, RegionMap, find_path_hierarchical};
pub use kernel::CellOverlay;
pub use lanes::{Lane, LaneWalk, Lanes};
pub use line::{overlaps_blocked, polyline_cells, traverse, walkable, walkable_sampled};
pub use links::{Link, LinkError, LinkId, LinkKeys};
#[cfg(test)]
pub(crate) use passages::gate_in_a_wall;
pub use passages::{Crossing, passage_crossings};
pub use path::{Path, PathError, count_turns};
pub use search::{
    AStar, GoalPolicy, SearchConfig, SearchStep, find_nearest, find_path, nearest_on_island,
};
pub(crate) use search::{check_nearest, resolve_ends};
pub use slots::{Formation, assign_slots, formation_slots, group_center, spread_slots};
pub use smooth::{Smoother, count_turns_f, polyline_length, smooth_path, smooth_path_in_steps};
pub use turn::TurnPlan;
pub use vehicle::{
    HEADINGS, ReverseRules, VehicleError, VehicleModel, VehicleRules, heading_vector,
    nearest_heading,
};
pub use waypoints::{BuiltWaypoints, WaypointError, WaypointGraph, WaypointId};
