//! Traffic through passages one cell wide: which wide units' paths cross which passages, and
//! which way (see [`passage_crossings`]). A wide unit's search prices a passage by the wide
//! units that will cross it against it ([`CrowdSettings::passage_traffic`]), so two armies of
//! tanks ordered past each other take different bridges instead of meeting on one, where they
//! would take turns and jam the ground between two passages. Narrow units are not counted nor
//! priced: they step beside a tank on a bridge one cell wide only on its grid, and through
//! gates one tile wide they take turns as before.
//!
//! The queue records a path's crossings when it delivers it, so a path searched in the same
//! frame as another coming the other way, delivered after it, sees it then (and is searched
//! again); movement records them again when a path changes and drops each one its unit has
//! walked past. Only units the plugin's movement walks (with a [`Mover`](crate::Mover)) are
//! recorded, as nothing else would drop their crossings; a despawned unit's are forgotten.

use bevy::ecs::entity::EntityHashMap;
use bevy::prelude::*;

use crate::core::{Cell, Crossing, NavGrid, passage_crossings};

#[cfg(doc)]
use super::settings::CrowdSettings;

/// The passages wide units' paths still cross, kept by the queue and movement. Read-only
/// outside the plugin.
#[derive(Resource, Default, Debug)]
pub struct PassageTraffic {
    units: EntityHashMap<UnitTraffic>,
}

/// One unit's crossings still ahead on its path.
#[derive(Debug)]
struct UnitTraffic {
    map: Entity,
    /// The ticket of the path they are on.
    ticket: u64,
    /// Frame they were first recorded for this ticket.
    since: u64,
    crossings: Vec<Crossing>,
}

impl PassageTraffic {
    /// Records the crossings of `entity`'s path (`corridor`, on its class's `grid` of `map`,
    /// answering request `ticket`) at `frame`. A path of the same ticket (its rest smoothed)
    /// keeps the frame it was first recorded at. A path crossing nothing records nothing.
    pub(crate) fn record(
        &mut self,
        entity: Entity,
        (map, grid): (Entity, &NavGrid),
        ticket: u64,
        corridor: &[Cell],
        frame: u64,
    ) {
        self.record_crossings(
            entity,
            map,
            ticket,
            passage_crossings(grid, corridor),
            frame,
        );
    }

    /// [`PassageTraffic::record`] with the path's crossings already found.
    pub(crate) fn record_crossings(
        &mut self,
        entity: Entity,
        map: Entity,
        ticket: u64,
        crossings: Vec<Crossing>,
        frame: u64,
    ) {
        if crossings.is_empty() {
            self.units.remove(&entity);
            return;
        }
        let since = match self.units.get(&entity) {
            Some(t) if t.ticket == ticket && t.map == map => t.since,
            _ => frame,
        };
        self.units.insert(
            entity,
            UnitTraffic {
                map,
                ticket,
                since,
                crossings,
            },
        );
    }

    /// `entity` walked to index `cell_index` of its corridor: the crossings it has left behind
    /// are dropped.
    pub(crate) fn passed(&mut self, entity: Entity, cell_index: usize) {
        if let Some(t) = self.units.get_mut(&entity) {
            t.crossings.retain(|c| c.exit_index >= cell_index);
            if t.crossings.is_empty() {
                self.units.remove(&entity);
            }
        }
    }

    /// Forgets `entity`'s crossings (its path is gone, or it despawned).
    pub(crate) fn forget(&mut self, entity: Entity) {
        self.units.remove(&entity);
    }

    /// How many units have crossings recorded.
    pub fn len(&self) -> usize {
        self.units.len()
    }

    /// Whether no unit has a crossing recorded.
    pub fn is_empty(&self) -> bool {
        self.units.is_empty()
    }

    /// The crossings of `entity`'s path still ahead of it.
    pub fn crossings(&self, entity: Entity) -> &[Crossing] {
        self.units.get(&entity).map_or(&[], |t| &t.crossings)
    }

    /// What a search on `map` going along `way` (its goal less its start) adds to passages:
    /// `per_unit` at a passage's cell for every unit, other than those `is_member` names, that
    /// will cross it against that way (at the cell where that unit enters it, which such a
    /// search crosses on its way out). Sorted by cell (row, then column).
    pub(crate) fn penalties(
        &self,
        map: Entity,
        is_member: impl Fn(Entity) -> bool,
        way: Cell,
        per_unit: u32,
    ) -> Vec<(Cell, u32)> {
        if per_unit == 0 || way == Cell::ZERO {
            return Vec::new();
        }
        let mut out: Vec<(Cell, u32)> = self
            .units
            .iter()
            .filter(|(e, t)| t.map == map && !is_member(**e))
            .flat_map(|(_, t)| t.crossings.iter())
            .filter(|c| c.against(way))
            .map(|c| (c.entry, per_unit))
            .collect();
        out.sort_unstable_by_key(|&(c, _)| (c.y, c.x));
        out.dedup_by(|b, a| {
            let same = a.0 == b.0;
            if same {
                a.1 = a.1.saturating_add(b.1);
            }
            same
        });
        out
    }

    /// The most units, other than `entity`, recorded at frame `since` or later, that cross one
    /// of `crossings` (a path of `entity` on `map`) against it: traffic a search that priced
    /// passages at frame `since` did not see.
    pub(crate) fn unseen_against(
        &self,
        map: Entity,
        entity: Entity,
        crossings: &[Crossing],
        since: u64,
    ) -> usize {
        crossings
            .iter()
            .map(|mine| {
                self.units
                    .iter()
                    .filter(|(e, t)| **e != entity && t.map == map && t.since >= since)
                    .filter(|(_, t)| {
                        t.crossings.iter().any(|c| {
                            c.against(mine.way) && (c.entry == mine.exit || c.exit == mine.entry)
                        })
                    })
                    .count()
            })
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::gate_in_a_wall as gate;

    #[test]
    fn units_crossing_a_gate_against_a_search_price_it_and_drop_out_once_through() {
        let g = gate();
        let e = |i| Entity::from_raw_u32(i).unwrap();
        let map = e(100);
        let east: Vec<Cell> = (0..11).map(|x| Cell::new(x, 3)).collect();
        let west: Vec<Cell> = east.iter().rev().copied().collect();
        let mut t = PassageTraffic::default();
        t.record(e(1), (map, &g), 7, &east, 10);
        t.record(e(2), (map, &g), 8, &east, 10);
        t.record(e(3), (map, &g), 9, &west, 12);
        t.record(e(4), (map, &g), 9, &[Cell::new(0, 0), Cell::new(1, 0)], 12);
        assert_eq!(t.len(), 3, "a path through no passage records nothing");
        // Going west: the two going east count, at the cell where they enter.
        let west_way = Cell::new(-1, 0);
        assert_eq!(
            t.penalties(map, |_| false, west_way, 5),
            vec![(Cell::new(5, 3), 10)]
        );
        assert_eq!(
            t.penalties(map, |x| x == e(1), west_way, 5),
            vec![(Cell::new(5, 3), 5)],
            "members of the search do not count"
        );
        assert!(t.penalties(e(99), |_| false, west_way, 5).is_empty());
        assert_eq!(t.penalties(map, |_| false, -west_way, 5).len(), 1);
        // What a search priced at frame 11 did not see: unit 3 (frame 12) against unit 1.
        let mine = t.crossings(e(1)).to_vec();
        assert_eq!(t.unseen_against(map, e(1), &mine, 11), 1);
        assert_eq!(t.unseen_against(map, e(1), &mine, 13), 0);
        assert_eq!(t.unseen_against(map, e(3), t.crossings(e(3)), 0), 2);
        // The same ticket keeps its frame; a new one starts again.
        t.record(e(3), (map, &g), 9, &west, 20);
        assert_eq!(t.unseen_against(map, e(1), &mine, 13), 0);
        t.record(e(3), (map, &g), 10, &west, 20);
        assert_eq!(t.unseen_against(map, e(1), &mine, 13), 1);
        // Walked past the gate (index 5): gone.
        t.passed(e(1), 5);
        assert_eq!(t.crossings(e(1)).len(), 1);
        t.passed(e(1), 6);
        assert!(t.crossings(e(1)).is_empty());
        t.forget(e(2));
        assert!(t.penalties(map, |_| false, west_way, 5).is_empty());
        assert_eq!(t.len(), 1);
    }
}
