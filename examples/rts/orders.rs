//! Orders: a group sent to a point spreads over the cells around it; failed requests retry.

use bevy::prelude::*;
use bevy_tilepath::ClassId;
use bevy_tilepath::core::{Cell, GoalPolicy};
use bevy_tilepath::prelude::*;

/// Priority of the player's orders over the red script's (the game's AI): with the queue busy,
/// a player's order starts first and stops a less urgent search on a worker for its slot.
pub const PLAYER_PRIORITY: i32 = 10;

/// Tiles from its target a unit ordered to follow one stops at (its weapon's range, say).
pub const FOLLOW_RANGE: f32 = 3.0;

/// Orders `units` (entity, grid position, class) to `target` through the plugin's
/// [`GroupOrder`]: a cell each in `formation` (for formations other than a blob, one its class
/// can stand on), facing the world direction given or the way the group goes, one search shared
/// by the whole group, at `priority`; a formation other than a blob at the pace given (its
/// slowest unit's speed).
pub fn order_group(
    commands: &mut Commands,
    map: &NavMap,
    units: &[(Entity, Vec2, ClassId)],
    (target, priority): (Cell, i32),
    (formation, facing): (Formation, Option<Vec2>),
    pace: Option<f32>,
) {
    let world: Vec<(Entity, Vec2, ClassId)> = units
        .iter()
        .map(|&(e, p, c)| (e, map.grid_to_world(p), c))
        .collect();
    let mut order = GroupOrder::new(map.cell_to_world(target)).with_formation(formation);
    if let Some(direction) = facing {
        order = order.facing(direction);
    }
    if let Some(speed) = pace.filter(|_| formation != Formation::Blob) {
        order = order.at_pace(speed);
    }
    // A formation's places on each unit's class grid; a blob's on the shared grid (picked on
    // class grids, the tanks of mixed armies jammed more: 131 units stuck at the end of four
    // headless runs against 94).
    let requests = if formation == Formation::Blob {
        let plain: Vec<(Entity, Vec2)> = world.iter().map(|u| (u.0, u.1)).collect();
        order.requests(map, &plain)
    } else {
        order.requests_by_class(map, &world)
    };
    for (entity, request) in requests {
        // A new order replaces queued ones, and a hold.
        commands
            .entity(entity)
            .remove::<(bevy_tilepath::OrderQueue, bevy_tilepath::HoldPosition)>()
            .insert(request.with_priority(priority));
    }
}

/// A unit whose request failed (e.g. every way was blocked by stopped units) tries its order
/// again; not a follow order (the plugin tries those again itself while the target lives).
pub fn retry_failed(
    mut commands: Commands,
    units: Query<(Entity, &PathStatus, &PathRequest), Changed<PathStatus>>,
) {
    for (entity, status, request) in &units {
        if matches!(status, PathStatus::Failed(_))
            && !matches!(request.goal, PathGoal::Entity { .. })
        {
            commands
                .entity(entity)
                .insert(request.clone().with_policy(GoalPolicy::NearestReachable));
        }
    }
}
