//! Local avoidance in movement: a moving unit with other units near turns its step along its
//! curve into the velocity [`avoid_velocity`] (ORCA) allows, split into how far it goes on along
//! its curve and how far it moves aside of it (an offset that fades, like a push's). See
//! [`CrowdSettings::avoidance`].

use bevy::prelude::*;

use crate::core::{AvoidanceParams, Body, NavGrid, avoid_velocity, wall_points};
use crate::plugin::settings::CrowdSettings;

use super::neighbours::Neighbours;

/// A unit's step turned aside by avoidance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Avoided {
    /// The share of its step along the curve it takes (0 to 1).
    pub(super) along: f32,
    /// How far it moves aside of the curve (grid space).
    pub(super) aside: Vec2,
    /// The velocity avoidance chose (tiles per second), for the debug overlay.
    pub(super) velocity: Vec2,
}

/// The step of `me` (the index's unit `entity` on `map`), whose curve takes it by `step` this
/// frame of `dt` seconds, turned aside for the units within
/// [`CrowdSettings::neighbour_radius`]; `None` if it takes its step unchanged (nobody near, or
/// nobody in the way).
#[allow(clippy::too_many_arguments)]
pub(super) fn avoid(
    index: &Neighbours,
    crowd: &CrowdSettings,
    grid: &NavGrid,
    map: Entity,
    entity: Entity,
    me: Body,
    step: Vec2,
    max_speed: f32,
    dt: f32,
    scratch: &mut Vec<Body>,
) -> Option<Avoided> {
    let length = step.length();
    if dt <= 0.0 || length < 1e-6 {
        return None;
    }
    let reach = crowd.neighbour_radius;
    scratch.clear();
    scratch.extend(
        index
            .near(map, me.position, reach)
            .map(|i| index.members()[i])
            .filter(|m| {
                m.entity != entity && m.body.position.distance_squared(me.position) <= reach * reach
            })
            .map(|m| m.body),
    );
    if scratch.is_empty() {
        return None;
    }
    let preferred = step / dt;
    let params = AvoidanceParams {
        time_horizon: crowd.avoidance_horizon,
        obstacle_time_horizon: crowd.avoidance_horizon / 3.0,
        max_speed: max_speed.max(preferred.length()),
        time_step: dt,
    };
    let walls = wall_points(
        grid,
        me.position,
        me.radius + params.max_speed * params.obstacle_time_horizon,
    );
    let v = avoid_velocity(&me, preferred, scratch, &walls, &params);
    if v.distance_squared(preferred) < 1e-4 * preferred.length_squared() {
        return None;
    }
    let dir = step / length;
    let moved = v * dt;
    let along = moved.dot(dir).clamp(0.0, length);
    Some(Avoided {
        along: along / length,
        aside: moved - dir * along,
        velocity: v,
    })
}
