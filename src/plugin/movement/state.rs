//! What a moving unit is doing ([`MoveState`], [`Errand`]) and its progress along its path
//! ([`PathProgress`]).

use std::collections::VecDeque;

use bevy::ecs::entity::{EntityMapper, MapEntities};
use bevy::prelude::*;

use crate::core::{Cell, LinkId, TurnPlan};
use crate::plugin::claims::Intent;
use crate::plugin::request::PathRequest;

/// What a mover is doing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Reflect)]
pub enum MoveState {
    /// No path to follow.
    #[default]
    Idle,
    /// Following its path.
    Moving,
    /// Waiting: for a unit in the way, or for a new path.
    Waiting {
        /// Seconds waited so far.
        seconds: f32,
        /// Where it started walking through other units, if it was doing so (it goes on once
        /// it moves again).
        through_from: Option<Vec2>,
    },
    /// Following its path through other units (never walls): the last resort of a unit kept in
    /// place too long, until it has walked
    /// [`CrowdSettings::walk_through_for`](crate::CrowdSettings::walk_through_for) tiles.
    WalkingThrough {
        /// Where it started (grid space).
        from: Vec2,
    },
    /// Reached the end of its path.
    Arrived,
}

impl MoveState {
    /// Whether the unit is on its way (moving, waiting or walking through).
    pub fn is_underway(self) -> bool {
        matches!(
            self,
            MoveState::Moving | MoveState::Waiting { .. } | MoveState::WalkingThrough { .. }
        )
    }

    /// Seconds waited so far (0 unless waiting).
    pub fn waited(self) -> f32 {
        match self {
            MoveState::Waiting { seconds, .. } => seconds,
            _ => 0.0,
        }
    }

    /// Where the unit started walking through other units, if it is doing so.
    pub fn walking_through_from(self) -> Option<Vec2> {
        match self {
            MoveState::WalkingThrough { from } => Some(from),
            MoveState::Waiting { through_from, .. } => through_from,
            _ => None,
        }
    }

    /// Waiting `seconds` so far, still walking through others if it was.
    pub(crate) fn wait(self, seconds: f32) -> MoveState {
        MoveState::Waiting {
            seconds,
            through_from: self.walking_through_from(),
        }
    }

    /// Done walking through others: moving or waiting as before.
    pub(crate) fn stop_walking_through(self) -> MoveState {
        match self {
            MoveState::WalkingThrough { .. } => MoveState::Moving,
            MoveState::Waiting { seconds, .. } => MoveState::Waiting {
                seconds,
                through_from: None,
            },
            other => other,
        }
    }

    /// Moving again after waiting (through others if it was walking through).
    pub(crate) fn go(self) -> MoveState {
        match self {
            MoveState::Waiting {
                through_from: Some(from),
                ..
            } => MoveState::WalkingThrough { from },
            MoveState::Waiting { .. } => MoveState::Moving,
            other => other,
        }
    }
}

/// A short trip a unit makes for others, off its own order.
#[derive(Clone, Debug, Default, PartialEq, Reflect)]
pub enum Errand {
    /// None: the unit follows its order.
    #[default]
    None,
    /// Stepping aside to `to` for a unit met head-on; `resume` is then searched again.
    SteppingAside {
        /// The cell it steps to.
        to: Cell,
        /// The order it resumes there.
        resume: PathRequest,
    },
    /// An idle unit asked to make way steps to `to` and stays (no [`Arrived`](crate::Arrived)).
    MakingWay {
        /// The cell it steps to.
        to: Cell,
    },
}

impl MapEntities for Errand {
    fn map_entities<E: EntityMapper>(&mut self, mapper: &mut E) {
        if let Errand::SteppingAside { resume, .. } = self {
            resume.map_entities(mapper);
        }
    }
}

impl Errand {
    /// The cell of the errand, if any.
    pub fn cell(&self) -> Option<Cell> {
        match self {
            Errand::None => None,
            Errand::SteppingAside { to, .. } | Errand::MakingWay { to } => Some(*to),
        }
    }
}

/// A mover's progress along its path (managed by the plugin).
///
/// Turning: from its position and heading the unit follows the shorter arc-then-line curve to
/// the next waypoint ([`TurnPlan`]). When the waypoint lies inside both turning circles or the arc
/// would touch a blocked cell, it falls back, in order, to half then a quarter of its turning
/// radius, then to turning in place; it slows to 70 %, 50 % and 35 % of its speed through those
/// tighter turns (Pinter's speed restriction). Units here are infantry-like: a unit that must never
/// turn in place is a [`Vehicle`](crate::Vehicle), which drives legal turns and three-point turns.
#[derive(Component, Clone, Debug, Default, Reflect)]
#[reflect(Component)]
// Laid out as written: what every unit's frame reads (to see whether it sleeps, to index it for
// pushing) comes first, in the component's first cache lines; the rest is read while it walks.
#[repr(C)]
pub struct PathProgress {
    /// The map its claims and occupancy are on.
    #[entities]
    pub(crate) map: Option<Entity>,
    /// Facing (grid space, normalised).
    pub heading: Vec2,
    /// Loaded from a saved game with the path of this ticket: that path is not new to the unit
    /// (see [`crate::save_with`]); taken by its first move.
    #[reflect(ignore)]
    pub(crate) restored: Option<u64>,
    /// Found asleep by the movement system's last run (a standing unit with nothing to do):
    /// while nothing it depends on changes, it is asleep still, without a look at the rest.
    /// Not part of the game's state: set and cleared without change detection.
    #[reflect(ignore)]
    pub(crate) asleep: bool,
    /// What the unit is doing.
    pub state: MoveState,
    /// What it last told [`Claims`](crate::Claims) of where it is and goes (written only when it
    /// changes).
    pub(crate) intent: Option<Intent>,
    /// The cell it occupies as a stopped unit, and the one it is on as a moving unit.
    pub(crate) stopped_cell: Option<Cell>,
    pub(crate) moving_cell: Option<Cell>,
    /// The next corridor cell (kept so the path is read only when something changes).
    pub(crate) next: Option<Cell>,
    /// Seconds since its body was last a tile away from `stall_anchor`, where it stood then
    /// (or set off: a new path on its way keeps the clock).
    pub(crate) stalled: f32,
    /// Current speed factor (below 1 in tight turns).
    pub speed_factor: f32,
    /// It waits for a one-way passage to open, or queued behind a unit that does: the crowd's
    /// last resort waits longer for it.
    pub(crate) patient: bool,
    /// Index of the waypoint being walked to.
    pub waypoint: usize,
    /// Index of the next cell of the path's [`corridor`](crate::NavPath::corridor) (cells before
    /// it are passed).
    pub cell_index: usize,
    /// The grid version its current leg was planned on (an edit since: the leg is planned
    /// again, with its line checked against the new grid).
    pub(crate) grid_version: u64,
    /// The cells it claims, oldest first.
    pub(crate) claimed: VecDeque<Cell>,
    /// The trip it makes for others, if any.
    #[entities]
    pub errand: Errand,
    /// The curve being walked and how far along it, and whether it leads to the center of the
    /// unit's cell (a detour before a line that would clip a wall) instead of the waypoint.
    #[reflect(ignore)]
    pub(crate) leg: Option<Leg>,
    /// How far pushes moved the unit off the curve it walks (grid space): added to the curve's
    /// position, fading as the unit walks on (so it drifts back to its smoothed path, which is
    /// clear of walls), and dropped when a new curve is planned from where it is.
    pub(crate) offset: Vec2,
    /// The velocity local avoidance chose this frame (grid space, tiles per second), if it
    /// turned the unit's step aside (the debug overlay draws it).
    pub avoidance: Option<Vec2>,
    /// Repaths since the unit last got a tile closer to its goal (capped: in a crowd, repeated
    /// repaths flip between routes instead of getting anywhere).
    pub(crate) stuck_repaths: u32,
    /// Searches it asked for since it last got a tile closer to its goal because a wall
    /// blocked its way. A plan its body cannot follow (through a gap narrower than it) comes
    /// back the same each time: the one after [`MAX_WALL_REPLANS`] fails with
    /// [`PathFailure::UnitTooWide`](crate::PathFailure::UnitTooWide) instead of looping.
    pub(crate) wall_replans: u8,
    /// Seconds spent waiting since the unit last got a tile closer to its goal.
    pub(crate) blocked: f32,
    /// The goal of the path it follows and the closest it has been to it.
    pub(crate) goal: Option<Cell>,
    pub(crate) closest: f32,
    /// The path's last waypoint (grid space), kept so the path is read only when something
    /// changes.
    pub(crate) end: Vec2,
    /// Times it stepped aside since it last reached a goal (it stops yielding after a few).
    pub(crate) yields: u32,
    /// Where it stood when `stalled` last started counting.
    pub(crate) stall_anchor: Vec2,
    /// The link it is crossing, if any (see `cross`).
    #[reflect(ignore)]
    pub(crate) crossing: Option<Crossing>,
}

/// A link being crossed: which, between which cells, the index of the exit's waypoint (a
/// vehicle's: of the exit's cell in its path's cells), the seconds left of how many, and whether the unit walks it (see
/// [`Link::walked`](crate::core::Link::walked)).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Crossing {
    pub(crate) link: LinkId,
    pub(crate) from: Cell,
    pub(crate) to: Cell,
    pub(crate) exit_waypoint: usize,
    pub(crate) left: f32,
    pub(crate) seconds: f32,
    pub(crate) walked: bool,
}

/// Searches a unit may ask for, its way blocked by a wall, without getting a tile closer to its
/// goal (see [`PathProgress`]'s `wall_replans`).
pub(crate) const MAX_WALL_REPLANS: u8 = 3;

/// One curve of a unit's walk: the plan, the distance along it, how much of it is walked slowly
/// (a tight turn), and whether it is a detour to the unit's cell center.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Leg {
    pub(crate) plan: TurnPlan,
    pub(crate) travelled: f32,
    /// The distance from the start walked at the leg's speed factor (below 1 in a tight turn):
    /// the arc, or what stands for a turn in place; the rest, a straight line, at full speed.
    pub(crate) slow_for: f32,
    pub(crate) detour: bool,
}

impl PathProgress {
    /// Loaded from a saved game: what it claimed and occupied is claimed anew by its next move
    /// (the claims themselves are not saved), walking on along its path `(map, ticket)`.
    pub(crate) fn restore(&mut self, path: Option<(Entity, u64)>) {
        (self.map, self.restored) = (path.map(|p| p.0), path.map(|p| p.1));
        self.claimed.clear();
        (self.stopped_cell, self.moving_cell, self.intent) = (None, None, None);
    }

    /// Cells this unit claims now.
    pub fn claimed(&self) -> impl Iterator<Item = Cell> + '_ {
        self.claimed.iter().copied()
    }
}
