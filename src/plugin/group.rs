//! Group orders: one request per unit, each to its own cell around the target, all sharing one
//! search to the target.

use bevy::platform::collections::HashMap;
use bevy::prelude::*;

use crate::core::{GoalPolicy, assign_slots, group_center, spread_slots};

use super::map::NavMap;
use super::request::{PathGoal, PathRequest};

/// The requests of an RTS group order: `units` (entity, world position) sent to the world point
/// `target` on `map`. Each unit gets its own slot, a walkable cell of a compact blob around the
/// target on the group's island (never a blocked cell or another island), units nearest the
/// target choosing first, each the free slot nearest to it. The requests are
/// [`PathGoal::Slot`]s: the queue serves them with one search shared from the target, and each
/// unit plans only its last tiles on its own.
///
/// Units standing off the map or on another island than most of the group get a plain request
/// to the target (with [`GoalPolicy::NearestReachable`]). Insert the requests (and
/// [`PathRequest::on_map`] when there are several maps).
///
/// ```
/// use bevy::prelude::*;
/// use bevy_tilepath::{group_order, prelude::*};
///
/// let map = NavMap::new(NavGrid::new(32, 32).unwrap(), Vec2::ZERO, Vec2::splat(16.0));
/// let units: Vec<(Entity, Vec2)> = (0..9u32)
///     .map(|i| (Entity::from_raw_u32(i + 1).unwrap(), Vec2::new(40.0 + 16.0 * i as f32, 40.0)))
///     .collect();
/// let requests = group_order(&map, Vec2::new(400.0, 400.0), &units);
/// assert_eq!(requests.len(), 9);
/// for (_, request) in &requests {
///     assert!(matches!(request.goal, PathGoal::Slot { .. }));
/// }
/// ```
pub fn group_order(
    map: &NavMap,
    target: Vec2,
    units: &[(Entity, Vec2)],
) -> Vec<(Entity, PathRequest)> {
    let grid = map.grid();
    let fallback = || PathRequest::to_world(target).with_policy(GoalPolicy::NearestReachable);
    let islands: Vec<Option<u32>> = units
        .iter()
        .map(|&(_, p)| map.world_to_cell(p).and_then(|c| grid.island(c)))
        .collect();
    let mut counts: HashMap<u32, usize> = HashMap::default();
    for i in islands.iter().flatten() {
        *counts.entry(*i).or_default() += 1;
    }
    let island = counts
        .into_iter()
        .max_by_key(|&(i, n)| (n, i))
        .map(|(i, _)| i);
    let center = match (target.is_finite(), map.world_to_cell(target)) {
        (true, Some(t)) if island.is_some() => group_center(grid, t, island),
        _ => None,
    };
    let Some(center) = center else {
        return units.iter().map(|&(e, _)| (e, fallback())).collect();
    };
    let members: Vec<usize> = (0..units.len())
        .filter(|&k| islands[k].is_some() && islands[k] == island)
        .collect();
    let slots = spread_slots(grid, center, members.len());
    let positions: Vec<Vec2> = members
        .iter()
        .map(|&k| map.world_to_grid(units[k].1))
        .collect();
    let taken = assign_slots(grid, &positions, &slots, center);
    let mut requests: Vec<(Entity, PathRequest)> =
        units.iter().map(|&(e, _)| (e, fallback())).collect();
    for (m, slot) in members.iter().zip(taken) {
        if let Some(s) = slot {
            requests[*m].1 = PathRequest::new(PathGoal::Slot {
                slot: slots[s],
                target: center,
            })
            .with_policy(GoalPolicy::NearestReachable);
        }
    }
    requests
}
