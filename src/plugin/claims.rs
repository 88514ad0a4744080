//! Claimed and occupied cells (Lester's implementation notes 1 and 2): moving units claim the
//! next few cells of their path so other units' searches avoid them a little (groups spread out,
//! but single file through a pass still works); stopped units occupy their cell, which nearby
//! searches treat as blocked.

use std::collections::HashMap;

use bevy::ecs::entity::EntityHashMap;
use bevy::prelude::*;

use crate::core::{Cell, CellOverlay};

/// Who claims and who occupies which cells (one map; the plugin keeps it up to date).
#[derive(Resource, Default, Debug)]
pub struct Claims {
    claimed: HashMap<Cell, Vec<Entity>>,
    stopped: HashMap<Cell, Entity>,
    moving_at: HashMap<Cell, Entity>,
    intents: EntityHashMap<Intent>,
    make_way: EntityHashMap<Entity>,
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Intent {
    /// The cell it stands on.
    pub here: Cell,
    /// The next cell of its path, if any.
    pub next: Option<Cell>,
    /// Whether it is waiting for another unit.
    pub waiting: bool,
}

impl Claims {
    /// `entity` claims `cell`.
    pub fn claim(&mut self, cell: Cell, entity: Entity) {
        let v = self.claimed.entry(cell).or_default();
        if !v.contains(&entity) {
            v.push(entity);
        }
    }

    /// `entity` releases its claim on `cell`.
    pub fn release(&mut self, cell: Cell, entity: Entity) {
        if let Some(v) = self.claimed.get_mut(&cell) {
            v.retain(|&e| e != entity);
            if v.is_empty() {
                self.claimed.remove(&cell);
            }
        }
    }

    /// Units claiming `cell`.
    pub fn claimants(&self, cell: Cell) -> &[Entity] {
        self.claimed.get(&cell).map_or(&[], |v| v.as_slice())
    }

    /// Every claimed cell with its claimants.
    pub fn iter_claimed(&self) -> impl Iterator<Item = (Cell, &[Entity])> {
        self.claimed.iter().map(|(c, v)| (*c, v.as_slice()))
    }

    /// Number of claimed cells.
    pub fn claimed_len(&self) -> usize {
        self.claimed.len()
    }

    /// `entity` stopped on `cell` (or `None`: it started moving).
    pub fn set_stopped(&mut self, entity: Entity, old: Option<Cell>, new: Option<Cell>) {
        relocate(&mut self.stopped, entity, old, new);
    }

    /// The stopped unit on `cell`, if any.
    pub fn stopped_at(&self, cell: Cell) -> Option<Entity> {
        self.stopped.get(&cell).copied()
    }

    /// A moving `entity` moved from cell `old` into `new`.
    pub fn set_moving_at(&mut self, entity: Entity, old: Option<Cell>, new: Option<Cell>) {
        relocate(&mut self.moving_at, entity, old, new);
    }

    /// A moving unit standing on `cell`, if any.
    pub fn moving_at(&self, cell: Cell) -> Option<Entity> {
        self.moving_at.get(&cell).copied()
    }

    /// Records where a moving unit is and where it goes next (`None`: it is not moving).
    pub fn set_intent(&mut self, entity: Entity, intent: Option<Intent>) {
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
    pub fn ask_to_make_way(&mut self, stopped: Entity, by: Entity) {
        self.make_way.insert(stopped, by);
    }

    /// Takes the request for `entity` to make way, if any: the unit that asked.
    pub fn take_make_way(&mut self, entity: Entity) -> Option<Entity> {
        self.make_way.remove(&entity)
    }

    /// Forgets every claim and occupancy of `entity` (it despawned or stopped being a mover).
    pub fn forget_entity(&mut self, entity: Entity) {
        self.claimed.retain(|_, v| {
            v.retain(|&e| e != entity);
            !v.is_empty()
        });
        self.stopped.retain(|_, e| *e != entity);
        self.moving_at.retain(|_, e| *e != entity);
        self.intents.remove(&entity);
        self.make_way.remove(&entity);
    }

    /// The search overlay for `entity` starting at `start`: a penalty on cells claimed by other
    /// units and, if `block_stopped`, a block on cells of other stopped units, within `radius`
    /// tiles (Chebyshev) of the start.
    pub fn overlay_for(
        &self,
        entity: Entity,
        start: Cell,
        radius: f32,
        penalty: u32,
        block_stopped: bool,
    ) -> Vec<(Cell, CellOverlay)> {
        let r = if radius.is_finite() {
            radius.clamp(0.0, 64.0) as i32
        } else {
            0
        };
        let mut out = Vec::new();
        let window = ((2 * r + 1) * (2 * r + 1)) as usize;
        let near = |c: Cell| (c - start).abs().max_element() <= r;
        if penalty > 0 {
            if self.claimed.len() < window {
                for (c, v) in &self.claimed {
                    if near(*c) && v.iter().any(|&e| e != entity) {
                        out.push((*c, CellOverlay::Penalty(penalty)));
                    }
                }
            } else {
                for dy in -r..=r {
                    for dx in -r..=r {
                        let c = start + Cell::new(dx, dy);
                        if self.claimants(c).iter().any(|&e| e != entity) {
                            out.push((c, CellOverlay::Penalty(penalty)));
                        }
                    }
                }
            }
        }
        if block_stopped {
            for (c, &e) in &self.stopped {
                if e != entity && near(*c) {
                    out.push((*c, CellOverlay::Blocked));
                }
            }
        }
        out
    }
}
