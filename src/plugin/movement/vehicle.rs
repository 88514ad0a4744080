//! Vehicles: units that cannot turn in place ([`Vehicle`]), what one is doing on its plan
//! ([`DriveProgress`]), and how much planning a frame may do ([`DriveSettings`]).

use bevy::prelude::*;

use crate::core::{DrivePlan, PlanCells, ReverseRules, VehicleRules};

use super::mover::Mover;
use super::state::Crossing;

/// Makes a unit with a [`Mover`] a vehicle: it never turns in place. Its path is driven as a plan
/// of arcs of at least `turning_radius` and straights (Pinter's legal turns, planned by a
/// [`DriveSearch`](crate::core::DriveSearch) along the path its request found); where it
/// cannot turn round forward (a dead end, an order behind it in a narrow place) it reverses,
/// and a three-point turn comes out of the plan. It arrives facing its request's
/// [`facing`](crate::PathRequest::facing) if it has one. Its request's
/// [`PathOutcome`](crate::PathOutcome) comes with its plan: found once it has a plan to drive
/// the path by (the path itself goes to it at once), failed with
/// [`PathFailure::NoDrivableWay`](crate::PathFailure::NoDrivableWay) if no plan reaches the
/// goal. A path across links is driven a leg at a time: to a crossing's entry, across the link
/// as any unit crosses it ([`EnteredLink`](crate::EnteredLink), [`LeftLink`](crate::LeftLink)),
/// and on from its exit.
///
/// Driving, a vehicle is never pushed by infantry: it shoves them aside as a unit holding its
/// position does. Standing (arrived, idle, or waiting), it is slid aside by a vehicle driving
/// into it, a unit walking through or one holding its position, shares the push half and half
/// with another vehicle or infantry standing against it, and is not moved by infantry on their
/// way; it slides, never turns, and slides back onto its plan as it drives on (it counts as at
/// its stop within a quarter tile of it). It waits for another vehicle in its way (where two
/// wait for each other, the one first in lockstep order, or the older entity, goes), and after
/// three times its [`Mover::wait_time`] drives on through. It stops on the nearest free cell
/// where another vehicle already stands at its goal (where it stands, if no cell within 8 rings
/// of the goal is free). Standing, it occupies its cell (and those its class's footprint
/// covers) as a stopped unit does, so other units' goals and searches round units in the way
/// keep off it; it claims no cells ahead.
///
/// ```
/// use bevy::prelude::*;
/// use bevy_tilepath::prelude::*;
/// use bevy_tilepath::{Vehicle, core::NavGrid};
///
/// let mut app = App::new();
/// app.add_plugins((MinimalPlugins, TilepathPlugins::default()));
/// app.world_mut()
///     .spawn(NavMap::new(NavGrid::new(24, 24).unwrap(), Vec2::ZERO, Vec2::ONE));
/// app.world_mut().spawn((
///     Transform::from_xyz(12.5, 12.5, 0.0),
///     Mover { speed: 3.0, ..default() },
///     Vehicle::default(),
///     PathRequest::to_cell(Cell::new(4, 12)),
/// ));
/// ```
#[derive(Component, Clone, Debug, PartialEq, Reflect)]
#[require(Mover, DriveProgress)]
#[reflect(Component)]
pub struct Vehicle {
    /// The smallest radius it turns on, in tiles, at every speed (more than 0, at most 8).
    pub turning_radius: f32,
    /// Whether it may reverse, at what cost to its plans (`None`: never).
    pub reverse: Option<ReverseRules>,
    /// Its speed in reverse, as a share of its [`Mover::speed`].
    pub reverse_speed: f32,
    /// Its speed on arcs, as a share of its [`Mover::speed`] (it slows down in turns).
    pub turn_speed: f32,
}

impl Default for Vehicle {
    fn default() -> Self {
        Vehicle {
            turning_radius: 1.5,
            reverse: Some(ReverseRules::default()),
            reverse_speed: 0.5,
            turn_speed: 0.7,
        }
    }
}

impl Vehicle {
    /// The rules its searches use, for a body of `body_radius` tiles against the walls.
    pub fn rules(&self, body_radius: f32) -> VehicleRules {
        VehicleRules {
            turning_radius: self.turning_radius,
            body_radius,
            reverse: self.reverse,
        }
    }
}

/// What a [`Vehicle`] is doing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Reflect)]
pub enum DriveStatus {
    /// No path to drive.
    #[default]
    Idle,
    /// Its path came, or an edit of the map blocked its plan: its plan is being searched (it
    /// stands, or drives on to the next point of its old plan it can plan from).
    Planning,
    /// Driving its plan.
    Driving,
    /// At the end of its plan.
    Arrived,
    /// No plan it could drive reaches its path's goal (too tight to turn, even reversing): it
    /// stands until its next path. The request of a path it never had a plan for ends failed
    /// with [`PathFailure::NoDrivableWay`](crate::PathFailure::NoDrivableWay).
    NoWay,
}

/// A [`Vehicle`]'s plan and where it is on it (added with the vehicle).
#[derive(Component, Clone, Debug, Default, Reflect)]
#[reflect(Component)]
pub struct DriveProgress {
    /// What it is doing.
    pub status: DriveStatus,
    /// The plan it drives (grid space), if it has one (saved with a game: a loaded vehicle
    /// drives on along it).
    pub plan: Option<DrivePlan>,
    /// Tiles driven along the plan.
    pub along: f32,
    /// The path (ticket) it drives or plans for.
    pub(crate) ticket: Option<u64>,
    /// A new path came, or an edit blocked the plan: plan again from the next state of the
    /// plan reached.
    pub(crate) replan: bool,
    /// The grid version its plan was made on, or last checked against after an edit.
    pub(crate) version: u64,
    /// Tries made for the current plan (a band round the path, then the whole map).
    pub(crate) tries: u8,
    /// Seconds it has waited for another vehicle in its way.
    pub(crate) waited: f32,
    /// The vehicle it waits for.
    pub(crate) blocked_by: Option<Entity>,
    /// The vehicle it drives through, having waited for it long enough.
    pub(crate) passing: Option<Entity>,
    /// The cells its body covers driving `plan`, to check the plan against edits (made when
    /// first needed; `None` whenever `plan` is replaced).
    #[reflect(ignore)]
    pub(crate) covered: Option<PlanCells>,
    /// Where the leg it drives starts in its path's cells: 0, or the exit of the last link it
    /// crossed (a path across links is driven a leg at a time).
    pub(crate) leg_from: usize,
    /// The link it is crossing.
    #[reflect(ignore)]
    pub(crate) crossing: Option<Crossing>,
    /// The cell its last plan to its path's end stops at (its path's goal, or the free cell
    /// nearest it): another vehicle looking for a free cell keeps clear of it, so two do not
    /// chase the same one.
    pub(crate) stop_at: Option<crate::core::Cell>,
}

impl DriveProgress {
    /// Gives it `plan` to drive (or none), dropping what it knew of the old one.
    pub(crate) fn set_plan(&mut self, plan: Option<DrivePlan>) {
        self.plan = plan;
        self.covered = None;
    }

    /// Tiles along its plan it drives to before it stops: the plan's end, or where it plans
    /// again, the next state it can plan from.
    pub(crate) fn stopping_at(&self) -> Option<f32> {
        let end = self.plan.as_ref()?.length();
        Some(if self.replan {
            self.next_state().map_or(end, |(at, _)| at)
        } else {
            end
        })
    }

    /// The next point of the plan it can stop at and plan from (a state of its search): its
    /// distance along the plan and the state's index.
    pub(crate) fn next_state(&self) -> Option<(f32, usize)> {
        let plan = self.plan.as_ref()?;
        plan.distances
            .iter()
            .position(|&d| d >= self.along - 1e-4)
            .map(|k| (plan.distances[k], k))
    }
}

/// How vehicles plan: how much of their search runs on the main thread a frame (inline: with
/// workers, [`WorkerMode::Async`](crate::WorkerMode), the searches run on the async compute
/// pool and this budget is not used), the band round the path they keep to first, and their
/// limit.
#[derive(Resource, Clone, Debug, Reflect)]
#[reflect(Resource)]
pub struct DriveSettings {
    /// Inline: states a frame's vehicle searches expand on the main thread, all vehicles
    /// together (a count, not a time: the same on every lockstep client). A state costs about
    /// 0.3-0.5 us.
    pub expansions_per_frame: u32,
    /// Cells either side of the path a vehicle's search keeps to first (0: the whole map at once).
    pub band: u32,
    /// No vehicle search expands more states than this.
    pub max_expansions: u32,
    /// Seconds ahead a vehicle driving looks along its plan for other vehicles driving across
    /// its way, and waits for one it would otherwise meet: of two whose ways cross, the one
    /// whose stopping keeps them apart, else the later in order (head-on, the other then shoves
    /// it aside). 0, the default: a vehicle waits only for one going its way ahead of it (it
    /// follows), and drives through the others. Vehicles overlap far less when they look
    /// ahead, but a packed group of them setting out at once takes longer to untangle.
    pub look_ahead: f32,
}

impl Default for DriveSettings {
    fn default() -> Self {
        DriveSettings {
            expansions_per_frame: 8_000,
            band: 3,
            max_expansions: 400_000,
            look_ahead: 0.0,
        }
    }
}
