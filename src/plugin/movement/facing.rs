//! Facing on arrival: a unit whose request asks for a facing ([`PathRequest::facing`], a
//! formation's) turns in place toward it once it has arrived, at [`FACE_TURN_RATE`].

use bevy::prelude::*;

use crate::core::fmath;
use crate::plugin::map::NavMap;
use crate::plugin::request::PathRequest;

use super::mover::Mover;
use super::output::DesiredVelocity;
use super::state::{Errand, MoveState, PathProgress};
use super::stats::{MovementFrameStats, Stopwatch};
use super::vehicle::Vehicle;

/// Radians a second an arrived unit turns toward its facing.
pub const FACE_TURN_RATE: f32 = std::f32::consts::TAU;

/// Turns arrived units toward their request's facing (not after an errand of their own: a unit
/// that made way stands as it stopped). Only `+ - * /`, `sqrt` and [`fmath`]: the same bits on
/// every platform.
pub(crate) fn face_on_arrival(
    time: Res<Time>,
    maps: Query<&NavMap>,
    mut units: Query<
        (
            &PathRequest,
            &mut PathProgress,
            &mut Transform,
            Option<&mut DesiredVelocity>,
        ),
        (With<Mover>, Without<Vehicle>),
    >,
    mut stats: ResMut<MovementFrameStats>,
) {
    let watch = Stopwatch::start();
    let step = FACE_TURN_RATE * time.delta_secs();
    for (request, mut progress, mut transform, desired) in &mut units {
        let Some(facing) = request.facing else {
            continue;
        };
        if progress.state != MoveState::Arrived || !matches!(progress.errand, Errand::None) {
            continue;
        }
        let Some(map) = progress.map.and_then(|m| maps.get(m).ok()) else {
            continue;
        };
        let at = transform.translation.truncate();
        let (Some(want), Some(now)) = (
            (map.world_to_grid(at + facing) - map.world_to_grid(at)).try_normalize(),
            progress.heading.try_normalize(),
        ) else {
            continue;
        };
        let (across, along) = (now.perp_dot(want), now.dot(want));
        // Facing it already (most frames of an arrived unit): no turn to work out.
        if along > 0.0 && across.abs() <= 1e-4 {
            continue;
        }
        let angle = fmath::atan2(across, along);
        let turn = angle.clamp(-step, step);
        let (s, c) = (fmath::sin(turn), fmath::cos(turn));
        let heading = Vec2::new(now.x * c - now.y * s, now.x * s + now.y * c);
        progress.heading = heading;
        let world = map.grid_to_world_dir(heading);
        match desired {
            Some(mut d) => d.facing = world.normalize_or_zero(),
            None => transform.rotation = fmath::rotation_toward(world),
        }
    }
    let (wall, cpu) = watch.stop();
    stats.facing = wall;
    stats.cpu += cpu;
}
