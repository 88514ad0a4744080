//! Movement: units walk their [`NavPath`](crate::NavPath)'s smoothed waypoints at speed x delta
//! time, curve through turns with a turning radius (Pinter), claim the next few cells, and handle
//! other units in the way (Lester's notes 1 and 2). Optional: a game with its own movement leaves
//! [`MovementPlugin`] out and reads the [`NavPath`](crate::NavPath)s itself.
//!
//! - `system`: the movement system and its phases, and the per-frame context.
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
//! - `push`: overlapping bodies pushed apart after the frame's moves.
//! - `facing`: arrived units turned toward their request's facing (a formation's).
//! - `output`: what movement writes: the `Transform`, or a [`DesiredVelocity`] for the game's
//!   controller.

mod avoid;
mod claiming;
mod crowd;
mod errands;
mod facing;
mod follow;
mod neighbours;
mod output;
mod passage;
mod push;
mod state;
mod system;
mod walk;
mod walls;

pub use facing::FACE_TURN_RATE;
pub use output::DesiredVelocity;
pub use state::{Errand, MoveState, PathProgress};
pub(crate) use system::{move_units, release_departed};

use bevy::prelude::*;

use crate::core::Cell;

use super::agent::NavAgent;
use super::claims::Claims;
use super::lockstep::{LockstepKey, lockstep_order};
use super::request::PendingRequests;
use super::schedule::{TilepathSchedule, TilepathSystems};
use super::settings::TilepathSettings;

/// Makes a unit follow its [`NavPath`](crate::NavPath). Speeds and distances are in tiles; the
/// body's radius is its [`NavAgent`]'s.
#[derive(Component, Clone, Debug, PartialEq, Reflect)]
#[require(Transform, PathProgress, NavAgent)]
#[reflect(Component)]
pub struct Mover {
    /// Tiles per second.
    pub speed: f32,
    /// Turning radius in tiles; 0 turns in place (infantry). See [`PathProgress`] for the
    /// fallbacks when an arc is impossible or would touch a wall.
    pub turning_radius: f32,
    /// Distance to the final waypoint counted as arrived.
    pub arrival_tolerance: f32,
    /// How many cells ahead a moving unit claims.
    pub claim_ahead: usize,
    /// Seconds to wait for a unit in the way before repathing or yielding.
    pub wait_time: f32,
}

impl Default for Mover {
    fn default() -> Self {
        Mover {
            speed: 4.0,
            turning_radius: 0.0,
            arrival_tolerance: 0.05,
            claim_ahead: 3,
            wait_time: 0.4,
        }
    }
}

/// A unit reached the end of its path: a [`Message`] and an [`EntityEvent`].
#[derive(Message, EntityEvent, Clone, Copy, Debug, PartialEq, Reflect)]
pub struct Arrived {
    /// The unit.
    pub entity: Entity,
    /// The cell it stopped on.
    pub cell: Cell,
}

/// Moves units with a [`Mover`] along their paths, with claims and crowd handling; part of
/// [`TilepathPlugins`](crate::TilepathPlugins).
#[derive(Default)]
pub struct MovementPlugin {
    /// The schedule of the plugin group.
    pub schedule: TilepathSchedule,
}

impl Plugin for MovementPlugin {
    fn build(&self, app: &mut App) {
        let schedule = self.schedule.configure(app);
        app.init_resource::<TilepathSettings>()
            .init_resource::<Claims>()
            .init_resource::<crate::plugin::traffic::PassageTraffic>()
            .init_resource::<PendingRequests>()
            .add_message::<Arrived>()
            .register_type::<Mover>()
            .register_type::<PathProgress>()
            .register_type::<MoveState>()
            .register_type::<Errand>()
            .register_type::<Arrived>()
            .register_type::<DesiredVelocity>()
            .init_resource::<MoverOrder>()
            .add_systems(
                schedule,
                (
                    release_departed,
                    order_movers,
                    move_units,
                    push::push_apart,
                    facing::face_on_arrival,
                )
                    .chain()
                    .in_set(TilepathSystems::Move),
            );
    }
}

/// In lockstep mode, the movers in their lockstep order, sorted once a tick for the movement
/// systems (claims, errands, repaths and pushes go to the first to ask); empty otherwise.
#[derive(Resource, Default)]
pub(crate) struct MoverOrder(pub(crate) Vec<Entity>);

/// Sorts the movers into [`MoverOrder`] (lockstep mode only).
fn order_movers(
    settings: Res<TilepathSettings>,
    keys: Query<(Entity, Option<&LockstepKey>), With<Mover>>,
    mut order: ResMut<MoverOrder>,
) {
    if settings.lockstep.is_some() {
        lockstep_order(keys.iter(), &mut order.0);
    } else {
        order.0.clear();
    }
}
