//! Helpers the integration tests share.

use bevy::prelude::*;

/// Where `unit` stands (world space).
pub fn position(app: &App, unit: Entity) -> Vec2 {
    app.world()
        .get::<Transform>(unit)
        .unwrap()
        .translation
        .truncate()
}
