//! What follows grid edits: the region maps of long requests brought up to date
//! ([`keep_regions`]), and repath on edit and on reveal: units whose remaining path comes near a cell edited this
//! frame (through [`NavMap::set_terrain`] or [`NavMap::set_walkable`]), or a cell of their
//! class's grid that their player's units saw other than assumed (fog of war), search again for
//! the same goal; the rest keep their paths. A link that opens (a door) also sends units far from
//! it searching again when a path through it could cost less than theirs still does. A path near walls put up (and no other edit) is
//! kept while the body can still walk its waypoints: blocking cells never makes a way cheaper,
//! and in a game that edits its map all the time (`soak`: 3 cells every 10 frames) half of the
//! repaths were of such paths. How far a unit has got is read from the movement plugin's
//! [`PathProgress`] where there is one (the whole path counts otherwise).

use bevy::platform::collections::{HashMap, HashSet};

use bevy::prelude::*;

use crate::core::{BLOCKED, Cell, Link, NavGrid, cells_around, walkable};
use crate::plugin::agent::NavAgent;
use crate::plugin::classes::ClassId;
use crate::plugin::map::NavMap;
use crate::plugin::movement::state::PathProgress;
use crate::plugin::outcomes::NavPath;
use crate::plugin::request::{PathOrigin, PendingRequests, SubmitInternal};
use crate::plugin::settings::TilepathSettings;
use crate::plugin::unit_order::{LockstepKey, lockstep_order};

use super::path_queue::PathQueue;
use super::regions;

/// Cells within `reach` rings of any of `cells`.
fn near(cells: &[Cell], reach: u8) -> HashSet<Cell> {
    cells.iter().flat_map(|&c| cells_around(c, reach)).collect()
}

/// More cells blocked in one frame than this (a building placed, a map loaded) send every unit
/// whose corridor they come near to search again, without checking its waypoints first.
const CHECKED_BLOCKS: usize = 64;

/// Whether a body of `radius` walking `waypoints` (grid space) still can, every segment near
/// one of `blocked` (within `reach` cells of its ends' box) checked on `grid` as the movement
/// checks its way.
fn still_walkable(
    grid: &NavGrid,
    waypoints: &[Vec2],
    radius: f32,
    blocked: &[Cell],
    reach: u8,
) -> bool {
    let reach = i32::from(reach) + 1;
    waypoints.windows(2).all(|w| {
        let (a, b) = (grid.cell_at(w[0]), grid.cell_at(w[1]));
        let (lo, hi) = (a.min(b) - Cell::splat(reach), a.max(b) + Cell::splat(reach));
        let near = blocked
            .iter()
            .any(|x| x.x >= lo.x && x.x <= hi.x && x.y >= lo.y && x.y <= hi.y);
        !near || walkable(grid, w[0], w[1], radius)
    })
}

/// Repaths units whose remaining corridor crosses a changed cell or its neighbours (a unit's body
/// may overlap a neighbour of the corridor cell it walks through; a wide unit's, cells as many
/// rings further as its footprint), or a cell its class can no longer enter: after an edit
/// ([`PathOrigin::GridEdit`]) for every class, unless the cells near it were only blocked, none
/// of its corridor, and its waypoints from the one it walks to are still walkable for its body
/// (as smoothing and the movement check them); after a reveal ([`PathOrigin::Revealed`]), for the
/// classes whose grid it changed, a corridor near a cell found blocked or through one found
/// dearer than assumed.
pub(crate) fn repath_on_change(
    mut maps: Query<(Entity, &mut NavMap)>,
    units: Query<(Entity, &NavPath, Option<&PathProgress>, Option<&NavAgent>)>,
    book: Res<PendingRequests>,
    mut commands: Commands,
    settings: Res<TilepathSettings>,
    keys: Query<(Entity, Option<&LockstepKey>), With<NavPath>>,
    mut order: Local<Vec<Entity>>,
) {
    // In lockstep mode units ask in their lockstep order (their tickets, and so the queue's
    // order among equals, follow it).
    let lockstep = settings.lockstep.is_some();
    order.clear();
    for (map_entity, mut map) in &mut maps {
        // A map with no edits to take is not written (its change ticks say when it changed).
        let Some(mut edits) = Edits::take(map.bypass_change_detection()) else {
            continue;
        };
        map.set_changed();
        if lockstep && order.is_empty() {
            lockstep_order(keys.iter(), &mut order);
        }
        let items: Box<dyn Iterator<Item = _>> = if lockstep {
            Box::new(units.iter_many(&*order))
        } else {
            Box::new(units.iter())
        };
        for (entity, path, progress, agent) in items {
            if path.map != map_entity || book.contains(entity) {
                continue;
            }
            if let Some(origin) = edits.origin_of(&map, path, progress, agent) {
                commands.queue(SubmitInternal {
                    entity,
                    request: path.request.clone(),
                    origin,
                });
            }
        }
    }
}

/// Whether one of `opened` (links that just became crossable) may shorten what is left of
/// `path` from its corridor cell `from`: the least a path through it could cost on `grid` is
/// below the most the rest of the path costs (its whole cost less the least its walked part
/// could have cost).
fn shortened_by(grid: &NavGrid, path: &NavPath, from: usize, opened: &[Link]) -> bool {
    let (Some(&start), Some(&at)) = (path.cells.first(), path.corridor.get(from)) else {
        return false;
    };
    if !grid.in_bounds(at) || !grid.in_bounds(path.goal) {
        return false;
    }
    let rest = path.cost.saturating_sub(grid.cost_bound(start, at));
    let to_goal = grid.cost_bound_to(path.goal);
    opened.iter().flat_map(Link::crossings).any(|(a, b)| {
        grid.crossing(a, b)
            .is_some_and(|(_, cost)| grid.cost_bound(at, a) + cost + to_goal(b) < rest)
    })
}

/// One map's edits and reveals of this frame, and the cells near them (worked out once per
/// reach or class, as units need them).
struct Edits {
    changed: Vec<Cell>,
    /// Links that became crossable (added open, or opened).
    opened_links: Vec<Link>,
    /// The edited cells now blocked on the map's grid.
    blocked: Vec<Cell>,
    /// The others: opened, or of new terrain.
    opened: Vec<Cell>,
    /// By class: cells found blocked, and cells found dearer than assumed.
    revealed: HashMap<ClassId, (Vec<Cell>, HashSet<Cell>)>,
    /// Cells within `reach` rings of a change, by reach; of a reveal, by class.
    near_changed: HashMap<u8, HashSet<Cell>>,
    near_opened: HashMap<u8, HashSet<Cell>>,
    near_revealed: HashMap<ClassId, HashSet<Cell>>,
}

impl Edits {
    /// Takes `map`'s edits and reveals; `None` if it has neither.
    fn take(map: &mut NavMap) -> Option<Edits> {
        let changed = map.take_changed();
        let opened_links = map.take_opened_links();
        let (blocked, opened): (Vec<Cell>, Vec<Cell>) =
            changed.iter().partition(|&&c| !map.grid().is_walkable(c));
        let mut revealed: HashMap<ClassId, (Vec<Cell>, HashSet<Cell>)> = HashMap::new();
        for (class, cell, terrain) in map.take_revealed() {
            let (blocked, dearer) = revealed.entry(class).or_default();
            if terrain == BLOCKED {
                blocked.push(cell);
            } else {
                dearer.insert(cell);
            }
        }
        if changed.is_empty() && revealed.is_empty() {
            return None;
        }
        Some(Edits {
            changed,
            opened_links,
            blocked,
            opened,
            revealed,
            near_changed: HashMap::new(),
            near_opened: HashMap::new(),
            near_revealed: HashMap::new(),
        })
    }

    /// Why the unit walking `path` searches again, if it does (see [`repath_on_change`]).
    fn origin_of(
        &mut self,
        map: &NavMap,
        path: &NavPath,
        progress: Option<&PathProgress>,
        agent: Option<&NavAgent>,
    ) -> Option<PathOrigin> {
        let seen = self.revealed.get(&path.class);
        if self.changed.is_empty() && seen.is_none() {
            return None;
        }
        let grid = map.grid_of(path.class);
        let reach = 1 + map.footprint_of(path.class);
        // The cells still ahead of the unit's body: its corridor and their neighbours.
        let from = progress.map_or(0, |p| p.cell_index.saturating_sub(1));
        let rest = &path.corridor[from.min(path.corridor.len())..];
        let changed = &self.changed;
        let near_edit = !changed.is_empty() && {
            let near = self
                .near_changed
                .entry(reach)
                .or_insert_with(|| near(changed, reach));
            rest.iter()
                .any(|c| !grid.is_walkable(*c) || near.contains(c))
        };
        // Near walls put up only (no cell opened or its terrain changed, where a cheaper way
        // may have appeared, none on the corridor itself), a path whose waypoints the body can
        // still walk is kept: no search would find a cheaper way.
        let edited = near_edit
            && (rest.iter().any(|c| !grid.is_walkable(*c))
                || !self.opened.is_empty() && {
                    let opened = &self.opened;
                    let near = self
                        .near_opened
                        .entry(reach)
                        .or_insert_with(|| near(opened, reach));
                    rest.iter().any(|c| near.contains(c))
                }
                || self.blocked.len() > CHECKED_BLOCKS
                || {
                    let radius = map.wall_radius_of(path.class, agent.map_or(0.0, |a| a.radius));
                    let ahead = progress.map_or(0, |p| p.waypoint.saturating_sub(1));
                    let points: Vec<Vec2> = path.waypoints[ahead.min(path.waypoints.len())..]
                        .iter()
                        .map(|&w| map.world_to_grid(w))
                        .collect();
                    !still_walkable(grid, &points, radius, &self.blocked, reach)
                });
        if edited
            || !self.opened_links.is_empty() && shortened_by(grid, path, from, &self.opened_links)
        {
            return Some(PathOrigin::GridEdit);
        }
        let (blocked, dearer) = seen?;
        let near_revealed = &mut self.near_revealed;
        rest.iter()
            .any(|c| {
                // A wall near enough for the body, or dearer ground on the way itself.
                dearer.contains(c)
                    || near_revealed
                        .entry(path.class)
                        .or_insert_with(|| near(blocked, reach))
                        .contains(c)
            })
            .then_some(PathOrigin::Revealed)
    }
}

/// Keeps the region map of every map and class (without fog) current: builds it when the map
/// or class appears (or the cluster size setting changes), applies the cells edited this frame
/// (before the repath system takes them), and drops those of removed maps. A grid edited
/// without its cells marked (see [`NavMap::grid_mut`]) gets a new build.
pub(crate) fn keep_regions(
    mut queue: ResMut<PathQueue>,
    settings: Res<TilepathSettings>,
    book: Res<PendingRequests>,
    maps: Query<(Entity, &NavMap)>,
) {
    let (frame, lockstep) = (book.frame, settings.lockstep.as_ref());
    let due = lockstep.map(|l| frame + u64::from(l.region_ticks));
    let regions = &mut queue.regions;
    if settings.hierarchical_beyond == 0 {
        regions.maps.clear();
        return;
    }
    let cluster = settings.region_cluster.max(4);
    // Hexagonal maps are searched flat (region maps know square moves only).
    regions.maps.retain(|(e, class), _| {
        maps.get(*e)
            .is_ok_and(|(_, m)| !m.grid().is_hex() && m.classes_without_fog().any(|c| c == *class))
    });
    for (entity, map) in &maps {
        if map.grid().is_hex() {
            continue;
        }
        for class in map.classes_without_fog() {
            regions::keep_one(regions, map, (entity, class), cluster, (frame, due));
        }
    }
}
