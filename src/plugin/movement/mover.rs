//! A unit's movement settings ([`Mover`]), its arrival ([`Arrived`]), and the order movers are
//! handled in.

use bevy::prelude::*;

use crate::core::Cell;

use super::super::agent::NavAgent;
use super::super::settings::TilepathSettings;
use super::super::unit_order::{LockstepKey, lockstep_order};
use super::state::PathProgress;
use super::stats::{MovementFrameStats, Stopwatch};

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

/// In lockstep mode, the movers in their lockstep order, sorted once a tick for the movement
/// systems (claims, errands, repaths and pushes go to the first to ask); empty otherwise.
#[derive(Resource, Default)]
pub(crate) struct MoverOrder(pub(crate) Vec<Entity>);

/// Sorts the movers into [`MoverOrder`] (lockstep mode only).
pub(crate) fn order_movers(
    settings: Res<TilepathSettings>,
    keys: Query<(Entity, Option<&LockstepKey>), With<Mover>>,
    mut order: ResMut<MoverOrder>,
    mut stats: ResMut<MovementFrameStats>,
) {
    let mut watch = Stopwatch::start();
    if settings.lockstep.is_some() {
        lockstep_order(keys.iter(), &mut order.0);
    } else {
        order.0.clear();
    }
    stats.release += watch.lap();
}
