//! Movement: units walk their [`NavPath`](crate::NavPath)'s smoothed waypoints at speed x delta
//! time, curve through turns with a turning radius (Pinter), claim the next few cells, and handle
//! other units in the way (Lester's notes 1 and 2). Optional: a game with its own movement leaves
//! [`MovementPlugin`](crate::MovementPlugin) out and reads the [`NavPath`](crate::NavPath)s itself.
//!
//! - `system`: the movement system and its phases.
//! - `unit`: what the phases share: the frame's context and one unit's view of it.
//! - `mover`: a unit's movement settings, its arrival, and the order movers go in.
//! - `walk`: one unit's frame on its path (tracking, the crowd's decision, the step).
//! - `walls`: the body kept off walls when pushed off its curve or held back.
//! - `errands`: the unit in the way, reactions, making way, arriving and stopping.
//! - `claiming`: a unit's claims ahead and its intent.
//! - `state`: what a unit is doing and its progress.
//! - `follow`: tracking, turn planning and advancing (pure).
//! - `crowd`: what a unit does about the unit in its way (pure).
//! - `neighbours`: the units of every map by cell, built once a frame.
//! - `avoid`: a moving unit's step turned aside for the units near (ORCA).
//! - `passage`: passages one cell wide, carrying one way at a time.
//! - `stats`: what movement cost in the last frame, by phase.
//! - `cross`: units crossing links (a wait at the entry, out at the exit).
//! - `push`: overlapping bodies pushed apart after the frame's moves.
//! - `facing`: arrived units turned toward their request's facing (a formation's).
//! - `vehicle`: units that cannot turn in place, their plans and the planning budget.
//! - `drive`: vehicles' paths planned as legal turns, and driven.
//! - `drive_links`: vehicles across links (a path driven a leg at a time).
//! - `drive_workers`: vehicles' drive searches on the async compute pool (with workers).
//! - `output`: what movement writes: the `Transform`, or a [`DesiredVelocity`] for the game's
//!   controller.

mod avoid;
pub(crate) mod claiming;
pub(crate) mod cross;
mod crowd;
pub(crate) mod drive;
mod drive_links;
mod drive_workers;
mod errands;
pub(crate) mod facing;
mod follow;
pub(crate) mod mover;
mod neighbours;
pub(crate) mod output;
mod passage;
pub(crate) mod push;
pub(crate) mod state;
mod stats;
pub(crate) mod system;
mod unit;
pub(crate) mod vehicle;
mod walk;
mod walls;

pub use cross::{EnteredLink, LeftLink};
pub use facing::FACE_TURN_RATE;
pub use mover::{Arrived, Mover};
pub use output::DesiredVelocity;
pub use state::{Errand, MoveState, PathProgress};
pub use stats::MovementFrameStats;
pub use vehicle::{DriveProgress, DriveSettings, DriveStatus, Vehicle};
