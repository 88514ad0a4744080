//! The units of every map by square of a few cells a side, built once a frame: where pushing and
//! avoidance find a unit's neighbours (a counting sort of the units by square, so a look-up
//! reads a few squares' slices instead of scanning every unit).

use bevy::ecs::entity::EntityHashMap;
use bevy::prelude::*;

use crate::core::Body;
use crate::plugin::classes::ClassId;

/// One unit in the index.
#[derive(Clone, Copy, Debug)]
pub(super) struct Member {
    pub(super) entity: Entity,
    pub(super) map: Entity,
    /// Its class (whose grid its body keeps off the walls of).
    pub(super) class: ClassId,
    pub(super) body: Body,
}

/// Side of the squares units are sorted into, in cells, unless set otherwise
/// ([`Neighbours::with_square`]): small enough that a look-up reads few units, large enough that
/// a 512 x 512 map's index is cleared and summed in a few microseconds.
const SQUARE: f32 = 4.0;

/// A unit as a look-up reads it, kept in its square's order: where its body is and how far it
/// reaches, and its index among the units. A look-up reads these side by side in memory instead
/// of gathering each unit's whole record from wherever it lies.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Near {
    /// Where its body is (grid space), as moved since the index was built.
    pub(super) position: Vec2,
    /// Its body's radius.
    pub(super) radius: f32,
    /// Its index among the units ([`Neighbours::members`]).
    pub(super) index: u32,
}

/// The units of one map sorted by square: `near[start[c]..start[c + 1]]` of [`Neighbours`]
/// are in square `c` (each map's squares take a run of `near` of their own).
#[derive(Default)]
struct Buckets {
    width: i32,
    height: i32,
    start: Vec<u32>,
    fill: Vec<u32>,
}

impl Buckets {
    fn cell_index(&self, cell: IVec2) -> usize {
        let c = cell.clamp(IVec2::ZERO, IVec2::new(self.width - 1, self.height - 1));
        (c.y * self.width + c.x) as usize
    }
}

/// The units of every map by cell (see the module docs).
pub(crate) struct Neighbours {
    members: Vec<Member>,
    /// The units of every indexed map, by map and square (see [`Buckets`]).
    near: Vec<Near>,
    /// Where each unit sits in `near`; `u32::MAX` if its map is not indexed.
    slot: Vec<u32>,
    maps: EntityHashMap<Buckets>,
    /// Side of the squares, in cells.
    square: f32,
}

impl Default for Neighbours {
    fn default() -> Self {
        Neighbours::with_square(SQUARE)
    }
}

impl Neighbours {
    /// An index by squares of `side` cells (look-ups within a tile or so read fewer units in
    /// smaller squares, in a dense crowd many fewer; look-ups further away read more squares).
    pub(crate) fn with_square(side: f32) -> Self {
        Neighbours {
            members: Vec::new(),
            near: Vec::new(),
            slot: Vec::new(),
            maps: EntityHashMap::default(),
            square: side,
        }
    }

    /// The square of the grid-space point `p`.
    fn bucket(&self, p: Vec2) -> IVec2 {
        (p / self.square).floor().as_ivec2()
    }

    /// Starts a new frame's index.
    pub(super) fn clear(&mut self) {
        self.members.clear();
        self.near.clear();
        self.slot.clear();
    }

    /// Adds a unit (position in grid space of `map`).
    pub(super) fn add(&mut self, member: Member) {
        self.members.push(member);
    }

    /// Sorts the units added by square; `size` gives each map's grid size. Units on maps `size`
    /// does not know are left out.
    pub(super) fn build(&mut self, size: impl Fn(Entity) -> Option<UVec2>) {
        self.maps.retain(|&map, _| size(map).is_some());
        // Units come in runs on one map (most games have one): a look-up only where it changes.
        let mut last = None;
        for m in &self.members {
            if last != Some(m.map) && !self.maps.contains_key(&m.map) && size(m.map).is_some() {
                self.maps.insert(m.map, Buckets::default());
            }
            last = Some(m.map);
        }
        let (side, members) = (self.square, &self.members);
        self.slot.clear();
        self.slot.resize(members.len(), u32::MAX);
        self.near.clear();
        let bucket = |p: Vec2| (p / side).floor().as_ivec2();
        for (map, b) in self.maps.iter_mut() {
            let Some(s) = size(*map) else { continue };
            let squares = bucket(s.as_vec2() + (side - 1.0)).max(IVec2::ONE);
            (b.width, b.height) = (squares.x, squares.y);
            let cells = (b.width * b.height) as usize;
            b.start.clear();
            b.start.resize(cells + 1, 0);
            // This map's run of `near` starts where the maps before it end.
            b.start[0] = self.near.len() as u32;
            for m in members.iter().filter(|m| m.map == *map) {
                let c = b.cell_index(bucket(m.body.position));
                b.start[c + 1] += 1;
            }
            for c in 0..cells {
                b.start[c + 1] += b.start[c];
            }
            self.near.resize(b.start[cells] as usize, Near::default());
            b.fill.clone_from(&b.start);
            for (i, m) in members.iter().enumerate() {
                if m.map == *map {
                    let c = b.cell_index(bucket(m.body.position));
                    let at = b.fill[c];
                    self.near[at as usize] = Near {
                        position: m.body.position,
                        radius: m.body.radius,
                        index: i as u32,
                    };
                    self.slot[i] = at;
                    b.fill[c] += 1;
                }
            }
        }
    }

    /// The units indexed.
    pub(super) fn members(&self) -> &[Member] {
        &self.members
    }

    /// Moves unit `i`'s body to `to` (grid space); it is still found in the square it was in
    /// when the index was built.
    pub(super) fn move_body(&mut self, i: usize, to: Vec2) {
        self.members[i].body.position = to;
        if let Some(near) = self.near.get_mut(self.slot[i] as usize) {
            near.position = to;
        }
    }

    /// Indices of the units on `map` in the squares within `reach` tiles of `position` (callers
    /// check distances; a unit moved since the build is found in the square it was in).
    pub(super) fn near(
        &self,
        map: Entity,
        position: Vec2,
        reach: f32,
    ) -> impl Iterator<Item = usize> + '_ {
        self.rows_near(map, position, reach)
            .flat_map(|row| row.iter().map(|n| n.index as usize))
    }

    /// The units of [`Neighbours::near`], a row of squares at a time, each with its body's
    /// position and radius: the same units in the same order.
    pub(super) fn rows_near(
        &self,
        map: Entity,
        position: Vec2,
        reach: f32,
    ) -> impl Iterator<Item = &[Near]> + '_ {
        let buckets = self.maps.get(&map);
        let (lo, hi) = (self.bucket(position - reach), self.bucket(position + reach));
        let (lo, hi) = match buckets {
            Some(b) => (
                lo.max(IVec2::ZERO),
                hi.min(IVec2::new(b.width - 1, b.height - 1)),
            ),
            None => (IVec2::ONE, IVec2::ZERO),
        };
        // Nothing in reach on the grid: no rows.
        let (lo, hi) = if lo.x > hi.x || lo.y > hi.y {
            (IVec2::ONE, IVec2::ZERO)
        } else {
            (lo, hi)
        };
        (lo.y..=hi.y).map(move |y| {
            let b = buckets.expect("rows only when the map is indexed");
            let from = b.start[b.cell_index(IVec2::new(lo.x, y))] as usize;
            let to = b.start[b.cell_index(IVec2::new(hi.x, y)) + 1] as usize;
            &self.near[from..to]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_found_by_cell_and_map() {
        let (a, b) = (
            Entity::from_raw_u32(1).unwrap(),
            Entity::from_raw_u32(2).unwrap(),
        );
        let mut n = Neighbours::default();
        let at = |map, x: f32, y: f32| Member {
            entity: Entity::from_raw_u32(100 + (x * 10.0) as u32).unwrap(),
            map,
            class: ClassId::DEFAULT,
            body: Body {
                position: Vec2::new(x, y),
                velocity: Vec2::ZERO,
                radius: 0.3,
            },
        };
        for m in [
            at(a, 1.5, 1.5),
            at(a, 5.5, 5.5),
            at(b, 1.5, 1.5),
            at(a, 2.2, 1.1),
        ] {
            n.add(m);
        }
        n.build(|map| (map == a || map == b).then_some(UVec2::new(8, 8)));
        let mut near: Vec<usize> = n.near(a, Vec2::new(1.6, 1.6), 1.0).collect();
        near.sort();
        assert_eq!(near, vec![0, 3]);
        assert_eq!(n.near(b, Vec2::new(1.6, 1.6), 1.0).collect::<Vec<_>>(), [2]);
        // Off the grid: nothing, no panic.
        assert_eq!(n.near(a, Vec2::new(-20.0, 40.0), 1.0).count(), 0);
        // Rebuilt for a new frame.
        n.clear();
        n.add(at(a, 5.5, 5.5));
        n.build(|_| Some(UVec2::new(8, 8)));
        assert_eq!(n.near(a, Vec2::new(1.6, 1.6), 1.0).count(), 0);
        assert_eq!(n.near(a, Vec2::new(5.0, 5.0), 1.0).count(), 1);
    }
}
