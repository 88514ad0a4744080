//! [`NavAgent`]: what the queue and movement both need to know of a unit's body.

use bevy::prelude::*;

/// A unit's body as pathfinding sees it: smoothing keeps a body of this radius clear of walls,
/// and movement keeps it off blocked cells. Required by [`Mover`](crate::Mover); add it alone to
/// units you move yourself.
#[derive(Component, Clone, Copy, Debug, PartialEq, Reflect)]
#[reflect(Component)]
pub struct NavAgent {
    /// Body radius in tiles.
    pub radius: f32,
}

impl Default for NavAgent {
    fn default() -> Self {
        NavAgent { radius: 0.3 }
    }
}
