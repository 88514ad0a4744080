//! What movement writes: a unit's `Transform` (the default), or, for a unit with a
//! [`DesiredVelocity`], the velocity it wants, for the game's controller (a physics body, a
//! character controller, a network predictor) to apply. The body's real position is read back
//! from its `Transform` next frame: where the controller left it short of (or past) where
//! movement wanted it, the difference is carried as a push's offset is, so the unit walks on
//! from where its body really is.

use bevy::prelude::*;

use crate::core::fmath;

use super::state::PathProgress;
use crate::plugin::map::NavMap;

/// Opt-in on a unit with a [`Mover`](super::Mover): movement leaves its `Transform` alone and
/// writes here the velocity the unit wants this frame (from its path, turns, crowd rules,
/// avoidance and pushes), for the game to apply to its body, e.g. to a physics engine's linear
/// velocity. Read it after [`TilepathSystems::Move`](crate::TilepathSystems::Move); the unit's
/// `Transform` is read back as its position on the next frame. A unit pressed in a jam may walk
/// through others for a moment (its [`MoveState`](super::MoveState) is `WalkingThrough`): a
/// physics controller should let it pass through other units then (the `avian` integration
/// disables its collider).
///
/// ```
/// use bevy::prelude::*;
/// use bevy_tilepath::prelude::*;
/// use bevy_tilepath::{DesiredVelocity, TilepathSystems};
///
/// // A kinematic controller: moves each body by its desired velocity. A physics game copies
/// // `velocity` to its body's linear velocity instead.
/// fn apply(time: Res<Time>, mut bodies: Query<(&DesiredVelocity, &mut Transform)>) {
///     for (desired, mut transform) in &mut bodies {
///         transform.translation += desired.velocity.extend(0.0) * time.delta_secs();
///     }
/// }
///
/// let mut app = App::new();
/// app.add_plugins((MinimalPlugins, TilepathPlugins::default()))
///     .add_systems(Update, apply.after(TilepathSystems::Move));
/// app.world_mut().spawn((
///     Transform::default(),
///     Mover::default(),
///     DesiredVelocity::default(),
///     PathRequest::to_cell(Cell::new(5, 0)),
/// ));
/// ```
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Reflect)]
#[reflect(Component, Default)]
pub struct DesiredVelocity {
    /// World units per second: this frame's step divided by the frame's time (zero when the
    /// unit stands, waits, or no time passed).
    pub velocity: Vec2,
    /// The way the unit wants to face (world space, normalised; zero until it first moves):
    /// movement writes no rotation either.
    pub facing: Vec2,
    /// Where (grid space) the unit's body stands at the end of this frame if the velocity is
    /// applied in full: pushes start from there, and next frame the body's real position is
    /// compared with it.
    expected: Option<Vec2>,
}

impl DesiredVelocity {
    /// Where the unit's body is this frame as movement sees it (grid space): where the
    /// controller left it, `at`. What it fell short of (or went past) the position it was to
    /// reach joins the unit's offset from its curve (as a push's does), so it walks on from
    /// where it stands.
    pub(super) fn read_back(&mut self, progress: &mut PathProgress, at: Vec2) {
        if let Some(expected) = self.expected.take()
            && progress.leg.is_some()
        {
            progress.offset += at - expected;
        }
    }

    /// The frame's output: the unit's body should move from `from` to `to` (grid space) in
    /// `dt` seconds, facing `heading` (grid space).
    pub(super) fn set(&mut self, map: &NavMap, from: Vec2, to: Vec2, heading: Vec2, dt: f32) {
        self.velocity = if dt > 0.0 {
            (map.grid_to_world(to) - map.grid_to_world(from)) / dt
        } else {
            Vec2::ZERO
        };
        self.facing = map.grid_to_world_dir(heading).normalize_or_zero();
        self.expected = Some(to);
    }

    /// The unit stands still this frame at `at` (grid space).
    pub(super) fn stand(&mut self, at: Vec2) {
        self.velocity = Vec2::ZERO;
        self.expected = Some(at);
    }

    /// Where pushes find the body (grid space): where it is to be at the end of the frame,
    /// else `at`.
    pub(super) fn expected_or(&self, at: Vec2) -> Vec2 {
        self.expected.unwrap_or(at)
    }

    /// A push moved the body by `shift` (grid space) on top of this frame's step.
    pub(super) fn pushed(&mut self, map: &NavMap, shift: Vec2, dt: f32) {
        if let Some(e) = &mut self.expected {
            *e += shift;
        }
        if dt > 0.0 {
            self.velocity += map.grid_to_world_dir(shift) / dt;
        }
    }
}

/// Writes a unit's move from `from` to `to` (grid space), facing `heading`: to its
/// [`DesiredVelocity`] if it has one, else to its `Transform`.
pub(super) fn write_move(
    map: &NavMap,
    transform: &mut Transform,
    desired: Option<&mut DesiredVelocity>,
    (from, to): (Vec2, Vec2),
    heading: Vec2,
    dt: f32,
) {
    match desired {
        Some(d) => d.set(map, from, to, heading, dt),
        None => {
            transform.translation = map.grid_to_world(to).extend(transform.translation.z);
            let facing = map.grid_to_world_dir(heading);
            transform.rotation = fmath::rotation_toward(facing);
        }
    }
}
