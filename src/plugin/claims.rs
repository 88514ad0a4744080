//! Claimed and occupied cells (Lester's implementation notes 1 and 2), per map: moving units
//! claim the next few cells of their path so other units' searches avoid them a little (groups
//! spread out, but single file through a pass still works); stopped units occupy their cell,
//! which nearby searches treat as blocked.

use bevy::platform::collections::HashMap;

use bevy::ecs::entity::EntityHashMap;
use bevy::prelude::*;
use smallvec::SmallVec;

use crate::core::{Cell, CellOverlay, LinkId, cells_around};

/// The largest [`TilepathSettings::claim_radius`](crate::TilepathSettings::claim_radius) used:
/// one search never scans more than a 129 x 129 window of claims.
pub const MAX_CLAIM_RADIUS: f32 = 64.0;

/// Who claims and who occupies which cells of each map (the movement plugin keeps it up to
/// date; searches read it for their overlay). Read-only outside the plugin.
#[derive(Resource, Default, Debug)]
pub struct Claims {
    maps: EntityHashMap<MapClaims>,
    /// Footprints of wide stopped units (rings of cells their bodies cover around their own).
    footprints: EntityHashMap<u8>,
    intents: EntityHashMap<Intent>,
    make_way: EntityHashMap<Entity>,
    /// The free cell each unit whose goal was taken goes to instead, `(map, cell)`, kept
    /// while its search there waits (see [`Claims::reserve`]).
    reservations: EntityHashMap<(Entity, Cell)>,
    /// The units inside links (crossing them): `(map, link, unit)`, in the order they entered.
    in_links: Vec<(Entity, LinkId, Entity)>,
}

/// The claims on one map.
#[derive(Default, Debug)]
struct MapClaims {
    /// Claimants by cell (most claimed cells have one or two: no allocation for those).
    claimed: HashMap<Cell, SmallVec<[Entity; 2]>>,
    stopped: HashMap<Cell, Entity>,
    moving_at: HashMap<Cell, Entity>,
    /// Free cells units go to instead of their taken goals, by cell.
    reserved: HashMap<Cell, Entity>,
}

/// Moves `entity`'s entry in a cell -> unit map from `old` to `new` (the first unit on a cell
/// keeps it).
fn relocate(map: &mut HashMap<Cell, Entity>, entity: Entity, old: Option<Cell>, new: Option<Cell>) {
    if let Some(c) = old
        && map.get(&c) == Some(&entity)
    {
        map.remove(&c);
    }
    if let Some(c) = new {
        map.entry(c).or_insert(entity);
    }
}

/// Where a moving unit is and where it goes next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Reflect)]
pub struct Intent {
    /// The cell it stands on.
    pub here: Cell,
    /// The next cell of its path, if any.
    pub next: Option<Cell>,
    /// Whether it is waiting for another unit.
    pub waiting: bool,
    /// Whether it waits for a one-way passage to open, or queued behind a unit that does
    /// (see [`CrowdSettings::one_way_turn`](crate::CrowdSettings::one_way_turn)).
    pub patient: bool,
    /// Rings of cells its body covers around its own (0: one cell; see
    /// [`MoveClass::footprint`](crate::core::MoveClass::footprint)).
    pub footprint: u8,
}

impl Claims {
    fn on(&self, map: Entity) -> Option<&MapClaims> {
        self.maps.get(&map)
    }

    fn on_mut(&mut self, map: Entity) -> &mut MapClaims {
        self.maps.entry(map).or_default()
    }

    /// `entity` claims `cell` of `map`.
    pub(crate) fn claim(&mut self, map: Entity, cell: Cell, entity: Entity) {
        let v = self.on_mut(map).claimed.entry(cell).or_default();
        if !v.contains(&entity) {
            v.push(entity);
        }
    }

    /// `entity` releases its claim on `cell` of `map`.
    pub(crate) fn release(&mut self, map: Entity, cell: Cell, entity: Entity) {
        let claimed = &mut self.on_mut(map).claimed;
        if let Some(v) = claimed.get_mut(&cell) {
            v.retain(|e| *e != entity);
            if v.is_empty() {
                claimed.remove(&cell);
            }
        }
    }

    /// Units claiming `cell` of `map`.
    pub fn claimants(&self, map: Entity, cell: Cell) -> &[Entity] {
        self.on(map)
            .and_then(|m| m.claimed.get(&cell))
            .map_or(&[], |v| v.as_slice())
    }

    /// Every claimed cell of `map` with its claimants.
    pub fn iter_claimed(&self, map: Entity) -> impl Iterator<Item = (Cell, &[Entity])> {
        self.on(map)
            .into_iter()
            .flat_map(|m| m.claimed.iter().map(|(c, v)| (*c, v.as_slice())))
    }

    /// Number of claimed cells on every map.
    pub fn claimed_len(&self) -> usize {
        self.maps.values().map(|m| m.claimed.len()).sum()
    }

    /// `entity` stopped on `new` of `map` (or `None`: it started moving), its body covering
    /// `footprint` rings of cells around it (searches block them all).
    pub(crate) fn set_stopped(
        &mut self,
        map: Entity,
        entity: Entity,
        old: Option<Cell>,
        new: Option<Cell>,
        footprint: u8,
    ) {
        relocate(&mut self.on_mut(map).stopped, entity, old, new);
        if new.is_some() && footprint > 0 {
            self.footprints.insert(entity, footprint);
        } else {
            self.footprints.remove(&entity);
        }
    }

    /// The stopped unit on `cell` of `map`, if any.
    pub fn stopped_at(&self, map: Entity, cell: Cell) -> Option<Entity> {
        self.on(map).and_then(|m| m.stopped.get(&cell).copied())
    }

    /// A moving `entity` moved from cell `old` into `new` of `map`.
    pub(crate) fn set_moving_at(
        &mut self,
        map: Entity,
        entity: Entity,
        old: Option<Cell>,
        new: Option<Cell>,
    ) {
        relocate(&mut self.on_mut(map).moving_at, entity, old, new);
    }

    /// A moving unit standing on `cell` of `map`, if any.
    pub fn moving_at(&self, map: Entity, cell: Cell) -> Option<Entity> {
        self.on(map).and_then(|m| m.moving_at.get(&cell).copied())
    }

    /// Records where a moving unit is and where it goes next (`None`: it is not moving).
    pub(crate) fn set_intent(&mut self, entity: Entity, intent: Option<Intent>) {
        match intent {
            Some(i) => {
                self.intents.insert(entity, i);
            }
            None => {
                self.intents.remove(&entity);
            }
        }
    }

    /// Where a moving unit is and goes next.
    pub fn intent(&self, entity: Entity) -> Option<Intent> {
        self.intents.get(&entity).copied()
    }

    /// Asks the stopped unit `stopped` to step off its cell for the moving unit `by` (it does so
    /// the next time movement runs, if it is still idle).
    pub(crate) fn ask_to_make_way(&mut self, stopped: Entity, by: Entity) {
        self.make_way.insert(stopped, by);
    }

    /// Whether a unit asked `entity` to make way (and it has not yet).
    pub(crate) fn asked_to_make_way(&self, entity: Entity) -> bool {
        !self.make_way.is_empty() && self.make_way.contains_key(&entity)
    }

    /// Takes the request for `entity` to make way, if any: the unit that asked.
    pub(crate) fn take_make_way(&mut self, entity: Entity) -> Option<Entity> {
        self.make_way.remove(&entity)
    }

    /// `entity`, whose goal was taken, goes to the free `cell` of `map` instead: until its
    /// search there comes back, no other unit picks that cell. In a crowd pressed together
    /// (a melee) the units on one cell all look for the same nearest free cell: without this,
    /// all of them went, all but one found it taken, and searched again.
    pub(crate) fn reserve(&mut self, map: Entity, cell: Cell, entity: Entity) {
        self.unreserve(entity);
        self.on_mut(map).reserved.entry(cell).or_insert(entity);
        self.reservations.insert(entity, (map, cell));
    }

    /// Drops `entity`'s reservation, if it has one.
    fn unreserve(&mut self, entity: Entity) {
        if let Some((map, cell)) = self.reservations.remove(&entity) {
            relocate(&mut self.on_mut(map).reserved, entity, Some(cell), None);
        }
    }

    /// Keeps only the reservations of units that `waiting` says still wait for their search
    /// to the reserved cell.
    pub(crate) fn keep_reservations(&mut self, waiting: impl Fn(Entity) -> bool) {
        let gone: Vec<Entity> = self
            .reservations
            .keys()
            .copied()
            .filter(|&e| !waiting(e))
            .collect();
        for entity in gone {
            self.unreserve(entity);
        }
    }

    /// The unit going to `cell` of `map` instead of its taken goal (see [`Claims::reserve`]).
    pub(crate) fn reserved_at(&self, map: Entity, cell: Cell) -> Option<Entity> {
        self.on(map).and_then(|m| m.reserved.get(&cell).copied())
    }

    /// Forgets every claim and occupancy of `entity` (it despawned or stopped being a mover).
    pub(crate) fn forget_entity(&mut self, entity: Entity) {
        self.unreserve(entity);
        for m in self.maps.values_mut() {
            m.claimed.retain(|_, v| {
                v.retain(|e| *e != entity);
                !v.is_empty()
            });
            m.stopped.retain(|_, e| *e != entity);
            m.moving_at.retain(|_, e| *e != entity);
        }
        self.intents.remove(&entity);
        self.make_way.remove(&entity);
        self.footprints.remove(&entity);
        self.leave_link(entity);
    }

    /// How many units are inside `link` of `map` (crossing it).
    pub fn units_in_link(&self, map: Entity, link: LinkId) -> usize {
        self.in_links
            .iter()
            .filter(|&&(m, l, _)| m == map && l == link)
            .count()
    }

    /// `unit` entered `link` of `map`.
    pub(crate) fn enter_link(&mut self, map: Entity, link: LinkId, unit: Entity) {
        self.in_links.push((map, link, unit));
    }

    /// `unit` left the link it was in (if any).
    pub(crate) fn leave_link(&mut self, unit: Entity) {
        self.in_links.retain(|&(_, _, u)| u != unit);
    }

    /// The search overlay for `entity` starting at `start` on `map`: `penalty` on cells claimed
    /// by other units and, if `block_stopped`, a block on cells of other stopped units (every
    /// cell a wide one's body covers), within `radius` tiles (Chebyshev, at most
    /// [`MAX_CLAIM_RADIUS`]) of the start.
    pub fn overlay_for(
        &self,
        map: Entity,
        entity: Entity,
        start: Cell,
        radius: f32,
        penalty: u32,
        block_stopped: bool,
    ) -> Vec<(Cell, CellOverlay)> {
        self.overlay_around(
            map,
            |e| e == entity,
            (start, start),
            radius,
            penalty,
            block_stopped,
        )
    }

    /// The overlay of a search shared by several units (see [`Claims::overlay_for`]): claims and
    /// stopped cells of units for which `is_member` is false, within `radius` tiles of the box
    /// `area` (inclusive corners) of their starts.
    pub fn overlay_around(
        &self,
        map: Entity,
        is_member: impl Fn(Entity) -> bool,
        area: (Cell, Cell),
        radius: f32,
        penalty: u32,
        block_stopped: bool,
    ) -> Vec<(Cell, CellOverlay)> {
        let mut out = Vec::new();
        let Some(m) = self.on(map) else {
            return out;
        };
        if radius > MAX_CLAIM_RADIUS {
            warn_once!(
                "bevy_tilepath: claim_radius {radius} is above the maximum {MAX_CLAIM_RADIUS}; using {MAX_CLAIM_RADIUS}"
            );
        }
        let r = if radius.is_finite() {
            radius.clamp(0.0, MAX_CLAIM_RADIUS) as i32
        } else {
            0
        };
        let (lo, hi) = (area.0 - Cell::splat(r), area.1 + Cell::splat(r));
        let window = ((hi.x - lo.x + 1) as i64 * (hi.y - lo.y + 1) as i64).max(0) as usize;
        let near = |c: Cell| c.x >= lo.x && c.y >= lo.y && c.x <= hi.x && c.y <= hi.y;
        let others = |v: &[Entity]| v.iter().any(|&e| !is_member(e));
        if penalty > 0 {
            if m.claimed.len() < window {
                for (c, v) in &m.claimed {
                    if near(*c) && others(v) {
                        out.push((*c, CellOverlay::Penalty(penalty)));
                    }
                }
            } else {
                for y in lo.y..=hi.y {
                    for x in lo.x..=hi.x {
                        let c = Cell::new(x, y);
                        if m.claimed.get(&c).is_some_and(|v| others(v)) {
                            out.push((c, CellOverlay::Penalty(penalty)));
                        }
                    }
                }
            }
        }
        if block_stopped {
            for (c, &e) in &m.stopped {
                if !is_member(e) && near(*c) {
                    let f = self.footprints.get(&e).copied().unwrap_or(0);
                    out.extend(cells_around(*c, f).map(|n| (n, CellOverlay::Blocked)));
                }
            }
        }
        out
    }
}
