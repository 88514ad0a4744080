//! Group orders: one request per unit, each to its own cell around the target, all sharing one
//! search to the target.

use bevy::platform::collections::{HashMap, HashSet};
use bevy::prelude::*;

use crate::core::{Cell, Formation, GoalPolicy, formation_slots, group_center};

use super::classes::ClassId;
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
    GroupOrder::new(target).requests(map, units)
}

/// How many steps from its formation place a slot its unit's class cannot stand on moves at
/// most ([`GroupOrder::requests_by_class`]; beyond, the place stays, and the unit's request
/// goes to the nearest cell it can reach).
pub const CLASS_SLOT_REACH: u32 = 8;

/// A group order with a [`Formation`]: where the group goes (`target`, a world point), how it
/// stands there, and which way it faces. [`group_order`] is `GroupOrder::new(target)` with the
/// default [`Formation::Blob`].
///
/// On the way, the group walks side by side in lanes (see
/// [`TilepathSettings::lanes`](crate::TilepathSettings::lanes)), each unit on the side its slot
/// is: a [`Formation::KeepShape`] or [`Formation::Line`] group keeps its width in the open and
/// shares a road's lanes in its own left-to-right order.
///
/// ```
/// use bevy::prelude::*;
/// use bevy_tilepath::{Formation, GroupOrder, prelude::*};
///
/// let map = NavMap::new(NavGrid::new(64, 32).unwrap(), Vec2::ZERO, Vec2::ONE);
/// let units: Vec<(Entity, Vec2)> = (0..12u32)
///     .map(|i| (Entity::from_raw_u32(i + 1).unwrap(), Vec2::new(4.5 + (i % 4) as f32, 10.5 + (i / 4) as f32)))
///     .collect();
/// // A line facing north, its centre on the target.
/// let order = GroupOrder::new(Vec2::new(40.5, 16.5))
///     .with_formation(Formation::Line)
///     .facing(Vec2::Y);
/// let requests = order.requests(&map, &units);
/// assert_eq!(requests.len(), 12);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GroupOrder {
    /// The world point the group goes to.
    pub target: Vec2,
    /// How it stands there.
    pub formation: Formation,
    /// The way a [`Formation::Line`] or [`Formation::Box`] faces (a world direction); `None`:
    /// the way the group goes, from its centre to the target. Units turn to face it once they
    /// have arrived ([`PathRequest::facing`]); given, units of any formation do.
    pub facing: Option<Vec2>,
    /// The group's pace, in tiles a second: every unit walks at most this fast
    /// ([`PathRequest::pace`]; `None`: each at its own speed).
    pub pace: Option<f32>,
}

impl GroupOrder {
    /// An order to `target` in a [`Formation::Blob`].
    pub fn new(target: Vec2) -> Self {
        GroupOrder {
            target,
            formation: Formation::Blob,
            facing: None,
            pace: None,
        }
    }

    /// The same order in `formation`.
    pub fn with_formation(self, formation: Formation) -> Self {
        GroupOrder { formation, ..self }
    }

    /// The same order facing `direction` (a world direction; a zero or not finite direction
    /// leaves the facing to the way the group goes).
    pub fn facing(self, direction: Vec2) -> Self {
        GroupOrder {
            facing: Some(direction),
            ..self
        }
    }

    /// The same order walked at `speed` tiles a second at most: give the speed of the group's
    /// slowest unit, and the formation keeps together on the way (a speed that is not a
    /// positive finite number: each unit at its own speed).
    pub fn at_pace(self, speed: f32) -> Self {
        GroupOrder {
            pace: (speed.is_finite() && speed > 0.0).then_some(speed),
            ..self
        }
    }

    /// The requests for `units` (entity, world position) on `map`. Each unit gets its own slot,
    /// a walkable cell of the formation on the group's island (never a blocked cell or another
    /// island; where the formation's place is blocked or taken, the nearest free cell). The
    /// requests are [`PathGoal::Slot`]s: the queue serves them with one search shared from the
    /// target, and each unit plans only its last tiles on its own.
    ///
    /// Units standing off the map or on another island than most of the group get a plain
    /// request to the target (with [`GoalPolicy::NearestReachable`]). Insert the requests (and
    /// [`PathRequest::on_map`] when there are several maps).
    pub fn requests(&self, map: &NavMap, units: &[(Entity, Vec2)]) -> Vec<(Entity, PathRequest)> {
        self.formation_requests(map, units)
    }

    /// The requests for `units` (entity, world position, class: the [`ClassId`] the plugin
    /// puts on each unit) on `map`, each slot one its unit's class can stand on: a slot on a
    /// cell its class's grid blocks (a tank's next to a wall or in a forest), or on another
    /// island of that grid than the unit, moves to the nearest cell within
    /// [`CLASS_SLOT_REACH`] steps the class can stand on and no other unit's slot takes. Units
    /// of the default class keep the slots [`GroupOrder::requests`] gives.
    pub fn requests_by_class(
        &self,
        map: &NavMap,
        units: &[(Entity, Vec2, ClassId)],
    ) -> Vec<(Entity, PathRequest)> {
        let plain: Vec<(Entity, Vec2)> = units.iter().map(|u| (u.0, u.1)).collect();
        let mut requests = self.formation_requests(map, &plain);
        let slot_of = |r: &PathRequest| match r.goal {
            PathGoal::Slot { slot, .. } => Some(slot),
            _ => None,
        };
        let mut taken: HashSet<Cell> = requests.iter().filter_map(|r| slot_of(&r.1)).collect();
        for ((_, request), &(_, at, class)) in requests.iter_mut().zip(units) {
            let PathGoal::Slot { slot, target } = request.goal else {
                continue;
            };
            if class == ClassId::DEFAULT {
                continue;
            }
            let grid = map.grid_of(class);
            let island = map.world_to_cell(at).and_then(|c| grid.island(c));
            let fits =
                |c: Cell| island.is_some() && grid.is_walkable(c) && grid.island(c) == island;
            if fits(slot) {
                continue;
            }
            let free = map
                .grid()
                .cells_outward(slot, CLASS_SLOT_REACH)
                .find(|&c| fits(c) && !taken.contains(&c));
            if let Some(free) = free {
                taken.remove(&slot);
                taken.insert(free);
                request.goal = PathGoal::Slot { slot: free, target };
            }
        }
        requests
    }

    /// The requests with every unit's slot picked on the shared grid.
    fn formation_requests(
        &self,
        map: &NavMap,
        units: &[(Entity, Vec2)],
    ) -> Vec<(Entity, PathRequest)> {
        let target = self.target;
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
        let positions: Vec<Vec2> = members
            .iter()
            .map(|&k| map.world_to_grid(units[k].1))
            .collect();
        // The facing in grid space (tiles may be scaled or flipped).
        let facing = self
            .facing
            .filter(|d| d.is_finite() && *d != Vec2::ZERO)
            .map(|d| map.world_to_grid(target + d) - map.world_to_grid(target));
        let slots = formation_slots(grid, center, &positions, self.formation, facing);
        // Where the units face once there: the facing given, or for ranks the way the group goes.
        let centre =
            members.iter().map(|&k| units[k].1).sum::<Vec2>() / members.len().max(1) as f32;
        let face = self.facing.or(match self.formation {
            Formation::Line | Formation::Box => Some(target - centre),
            Formation::Blob | Formation::KeepShape => None,
        });
        let mut requests: Vec<(Entity, PathRequest)> =
            units.iter().map(|&(e, _)| (e, fallback())).collect();
        for (m, slot) in members.iter().zip(slots) {
            if let Some(slot) = slot {
                let mut request = PathRequest::new(PathGoal::Slot {
                    slot,
                    target: center,
                })
                .with_policy(GoalPolicy::NearestReachable);
                if let Some(face) = face {
                    request = request.facing(face);
                }
                requests[*m].1 = request;
            }
        }
        for (_, request) in &mut requests {
            request.pace = self.pace;
        }
        requests
    }
}
