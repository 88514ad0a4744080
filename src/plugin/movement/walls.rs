//! Walls: a unit pushed off its curve, or pressed back behind it, never has its body put on a
//! blocked cell; if it would be, its curve is given up where it stands.

use bevy::prelude::*;

use crate::core::{fmath, overlaps_blocked};

use super::state::PathProgress;
use super::unit::Unit;

/// Seconds in which a push's offset from a unit's curve fades to a third (see
/// [`PathProgress`]'s `offset`).
const OFFSET_FADE: f32 = 0.5;

/// How far (tiles) a unit pressed back by the crowd may fall behind the point of its curve before
/// that point waits for it (see [`PathProgress`]'s `offset`): it never runs on ahead through a
/// gap the body has not reached.
const TETHER: f32 = 1.0;

/// Where a unit pushed off its curve stands when the curve puts it at `on_curve`: its offset
/// faded by this frame's walk (or, if that would put the body on a blocked cell, kept). If both
/// would, its curve is given up where it stands, at `pos`, and a new one starts there next frame:
/// a body never jumps onto its curve.
pub(super) fn pushed_off(
    unit: &Unit,
    progress: &mut PathProgress,
    pos: Vec2,
    on_curve: Vec2,
    dt: f32,
) -> Vec2 {
    let faded = progress.offset * fmath::exp(-dt / OFFSET_FADE);
    for offset in [faded, progress.offset] {
        let at = on_curve + offset;
        if !overlaps_blocked(unit.grid, at, unit.wall_radius) {
            progress.offset = offset;
            return at;
        }
    }
    start_again_at(progress, pos)
}

/// Whether the unit's body is held back more than [`TETHER`] behind the point of its curve.
pub(super) fn held_back(progress: &PathProgress) -> bool {
    progress.offset.dot(progress.heading) < -TETHER
}

/// A unit pressed back more than [`TETHER`] off its curve (whose point waits for it) walks
/// toward that point; if a wall is in the way, its curve is given up and starts again at `pos`.
pub(super) fn catch_up(unit: &Unit, progress: &mut PathProgress, pos: Vec2, distance: f32) -> Vec2 {
    let step = (-progress.offset).clamp_length_max(distance);
    let at = pos + step;
    if overlaps_blocked(unit.grid, at, unit.wall_radius) {
        return start_again_at(progress, pos);
    }
    progress.offset += step;
    at
}

/// Gives up the unit's curve: it stays at `pos`, and its next leg is planned from there.
fn start_again_at(progress: &mut PathProgress, pos: Vec2) -> Vec2 {
    progress.offset = Vec2::ZERO;
    progress.leg = None;
    pos
}
