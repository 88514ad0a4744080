//! The big-battle preset of the stress runner (`--battle`): armies placed round the map, each
//! given one group order to where the army opposite stands, so that they cross and meet in the
//! middle. A unit that comes within range of an enemy (5 tiles) engages: it stops and holds its
//! position (`hold_position`), as a unit does that fights, and then falls now and then (it is
//! despawned), as in combat. The units behind walk on until they are in range too.

use std::collections::HashMap;

use bevy::prelude::*;
use bevy_tilepath::core::{Cell, NavGrid, group_center, spread_slots};
use bevy_tilepath::prelude::*;
use bevy_tilepath::{PathStatus, PendingRequests, group_order, hold_position, stop};

use super::Rng;

/// The army a unit fights in.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Army(pub u8);

/// A unit that has met an enemy and holds its position to fight.
#[derive(Component)]
struct Engaged;

/// Armies in a battle.
pub const ARMIES: u32 = 8;

/// A unit with an enemy within this many tiles is in range of it (most units of an RTS army
/// fire from a distance) ...
const CONTACT: f32 = 5.0;

/// ... and, once engaged, falls with odds of one in this many each frame (about 4 s of contact
/// at 60 Hz).
const CONTACT_ODDS: u32 = 240;

/// The largest island of `grid` (most cells), if it has a walkable cell.
pub fn largest_island(grid: &NavGrid) -> Option<u32> {
    let mut sizes: HashMap<u32, u32> = HashMap::new();
    for island in grid.cells().filter_map(|c| grid.island(c)) {
        *sizes.entry(island).or_default() += 1;
    }
    sizes
        .into_iter()
        .max_by_key(|&(i, n)| (n, i))
        .map(|(i, _)| i)
}

/// Tiles from the map's middle to the armies' homes at most: they meet there after about
/// 15 s at the stress runner's 6 tiles a second.
const RING: f32 = 96.0;

/// Where army `k` of [`ARMIES`] gathers on a map of `size` cells a side: on a ring round its
/// middle.
fn home(grid: &NavGrid, size: u32, k: u32, island: Option<u32>) -> Option<Cell> {
    let angle = k as f32 * std::f32::consts::TAU / ARMIES as f32;
    let (mid, radius) = (size as f32 / 2.0, (size as f32 * 0.38).min(RING));
    let at = Vec2::splat(mid) + Vec2::from_angle(angle) * radius;
    group_center(grid, at.floor().as_ivec2(), island)
}

/// The battle's orders, per unit: its start, its request (its army's group order to the home of
/// the army opposite) and its army. `units` are shared out among the armies.
pub fn orders(map: &NavMap, size: u32, units: u32) -> Vec<(Cell, PathRequest, Army)> {
    let grid = map.grid();
    let island = largest_island(grid);
    let homes: Vec<Cell> = (0..ARMIES)
        .map(|k| home(grid, size, k, island).expect("a main island"))
        .collect();
    let mut out = Vec::new();
    for k in 0..ARMIES {
        let n = units / ARMIES + u32::from(k < units % ARMIES);
        let starts = spread_slots(grid, homes[k as usize], n as usize);
        let target = map.cell_to_world(homes[((k + ARMIES / 2) % ARMIES) as usize]);
        let placed: Vec<(Entity, Vec2)> = starts
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                let id = Entity::from_raw_u32(i as u32 + 1).expect("small index");
                (id, map.cell_to_world(c))
            })
            .collect();
        let requests = group_order(map, target, &placed);
        out.extend(
            starts
                .into_iter()
                .zip(requests)
                .map(|(start, (_, request))| (start, request, Army(k as u8))),
        );
    }
    out
}

/// Combat: each frame, units in range of an enemy engage, and engaged ones may fall.
pub struct Combat {
    rng: Rng,
    /// World units a tile.
    tile: f32,
    /// Units fallen so far, and units engaged.
    pub fallen: u32,
    pub engaged: u32,
    /// The most units in range of an enemy in one frame.
    pub most_in_range: u32,
}

impl Combat {
    /// Combat on a map of `tile` world units a tile.
    pub fn new(seed: u64, tile: f32) -> Self {
        Combat {
            rng: Rng::new(seed ^ 0x00BA_771E),
            tile,
            fallen: 0,
            engaged: 0,
            most_in_range: 0,
        }
    }

    /// The end of the battle: every unit still standing stops where it is (its order, or a
    /// search of the crowd's still waiting, ends cancelled), so the queue drains and the runner
    /// can check every request's one outcome.
    /// Returns the requests still waiting then, by who asked (`(origin, count)`, most first).
    pub fn ceasefire(&mut self, world: &mut World) -> Vec<(String, usize)> {
        let waiting = waiting(world);
        let units: Vec<Entity> = world
            .query_filtered::<Entity, With<Army>>()
            .iter(world)
            .collect();
        for entity in units {
            stop(world.entity_mut(entity));
        }
        waiting
    }

    /// One frame of combat: units in range of an enemy engage, and engaged ones fall with
    /// odds of one in [`CONTACT_ODDS`]; a unit whose order has no outcome yet is not in the
    /// fight yet (the runner checks that every order it gave gets one).
    pub fn frame(&mut self, world: &mut World) {
        let mut units = world.query::<(Entity, &Transform, &Army, &PathStatus, Has<Engaged>)>();
        let reach = CONTACT * self.tile;
        let square = |p: Vec2| (p / reach).floor().as_ivec2();
        let mut by_square: HashMap<IVec2, Vec<(Vec2, Army)>> = HashMap::new();
        for (_, transform, &army, ..) in units.iter(world) {
            let p = transform.translation.truncate();
            by_square.entry(square(p)).or_default().push((p, army));
        }
        let mut in_contact = 0;
        let (mut falling, mut engaging) = (Vec::new(), Vec::new());
        for (entity, transform, &army, status, engaged) in units.iter(world) {
            if matches!(status, PathStatus::Queued | PathStatus::Searching) {
                continue;
            }
            let p = transform.translation.truncate();
            let s = square(p);
            let enemy_near = (-1..=1).any(|dy| {
                (-1..=1).any(|dx| {
                    by_square
                        .get(&(s + IVec2::new(dx, dy)))
                        .is_some_and(|near| {
                            near.iter()
                                .any(|&(q, a)| a != army && q.distance_squared(p) <= reach * reach)
                        })
                })
            });
            if enemy_near {
                in_contact += 1;
                if !engaged {
                    engaging.push(entity);
                } else if self.rng.below(CONTACT_ODDS) == 0 {
                    falling.push(entity);
                }
            }
        }
        self.most_in_range = self.most_in_range.max(in_contact);
        for entity in engaging {
            let mut unit = world.entity_mut(entity);
            unit.insert(Engaged);
            hold_position(unit);
            self.engaged += 1;
        }
        for entity in falling {
            world.despawn(entity);
            self.fallen += 1;
        }
    }
}

/// The armies' requests waiting for an outcome, by who asked (`(origin, count)`, most first).
pub fn waiting(world: &mut World) -> Vec<(String, usize)> {
    let units: Vec<Entity> = world
        .query_filtered::<Entity, With<Army>>()
        .iter(world)
        .collect();
    let book = world.resource::<PendingRequests>();
    let mut waiting: HashMap<String, usize> = HashMap::new();
    for origin in units.iter().filter_map(|&e| book.origin(e)) {
        *waiting.entry(format!("{origin:?}")).or_default() += 1;
    }
    let mut waiting: Vec<(String, usize)> = waiting.into_iter().collect();
    waiting.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    waiting
}
