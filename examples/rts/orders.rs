//! Orders: a group sent to a point spreads over the cells around it; failed requests retry.

use bevy::prelude::*;
use bevy_tilepath::core::{Cell, GoalPolicy, NavGrid, nearest_on_island};
use bevy_tilepath::prelude::*;

use crate::DemoConfig;
use crate::map::main_island;

/// A unit of the demo: its army.
#[derive(Component, Clone, Copy, PartialEq, Eq, Debug)]
pub enum Team {
    Blue,
    Red,
}

/// A unit's mover with the demo's settings.
pub fn mover(config: &DemoConfig) -> Mover {
    Mover {
        speed: 5.0,
        turning_radius: config.turning_radius,
        ..Default::default()
    }
}

/// Goal cells for a group: the walkable cells nearest the target on its island, breadth first,
/// one per unit, so a group spreads around the point instead of fighting for one cell.
fn spread_goals(grid: &NavGrid, target: Cell, n: usize) -> Vec<Cell> {
    let start = if grid.is_walkable(target) {
        target
    } else {
        match nearest_on_island(grid, target, main_island(grid)) {
            Some(c) => c,
            None => return Vec::new(),
        }
    };
    grid.cells_outward(start, u32::MAX).take(n).collect()
}

/// Orders `units` (entity, grid position) to spread around `target`: each unit, nearest first,
/// takes the closest free goal cell.
pub fn order_group(
    commands: &mut Commands,
    grid: &NavGrid,
    units: &[(Entity, Vec2)],
    target: Cell,
) {
    let mut goals = spread_goals(grid, target, units.len());
    let mut order: Vec<&(Entity, Vec2)> = units.iter().collect();
    let tc = target.as_vec2() + 0.5;
    order.sort_by(|a, b| {
        a.1.distance_squared(tc)
            .total_cmp(&b.1.distance_squared(tc))
    });
    for (entity, pos) in order {
        if goals.is_empty() {
            break;
        }
        let (k, _) = goals
            .iter()
            .enumerate()
            .map(|(k, g)| (k, (g.as_vec2() + 0.5).distance_squared(*pos)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .expect("non-empty");
        let goal = goals.swap_remove(k);
        commands
            .entity(*entity)
            .insert(PathRequest::to_cell(goal).with_policy(GoalPolicy::NearestReachable));
    }
}

/// A unit whose request failed (e.g. every way was blocked by stopped units) tries its order
/// again.
pub fn retry_failed(
    mut commands: Commands,
    units: Query<(Entity, &PathStatus, &PathRequest), Changed<PathStatus>>,
) {
    for (entity, status, request) in &units {
        if matches!(status, PathStatus::Failed(_)) {
            commands
                .entity(entity)
                .insert(request.clone().with_policy(GoalPolicy::NearestReachable));
        }
    }
}
