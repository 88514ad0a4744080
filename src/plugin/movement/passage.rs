//! One-way passages: a passage one cell wide (a bridge, a gate in a wall; see
//! [`NavGrid::is_one_wide`](crate::core::NavGrid::is_one_wide)) carries one way at a time, like
//! a single-track road. Two bodies cannot pass each other in it, so a unit about to enter waits
//! while a unit comes through the other way; while units wait at both ends, the two directions
//! take turns of [`CrowdSettings::one_way_turn`] seconds. See
//! [`CrowdSettings::one_way_turn`](crate::CrowdSettings::one_way_turn).

use bevy::prelude::*;

use crate::core::{Cell, NavGrid, cells_around};
use crate::plugin::claims::Claims;

/// How many cells of a passage ahead a unit looks at (a longer one is a corridor, through which
/// it looks this far).
const MAX_PASSAGE: usize = 24;

/// A unit on `map` standing on `here`, about to walk the cells `ahead` (the rest of its
/// corridor, `next` its first, which the unit knows without reading its path) at `speed` tiles
/// per second: whether the passage one cell wide those cells start
/// with is closed to it now, at `clock` seconds, with turns of `turn` seconds (0: never
/// closed). Never closed to a unit already in a passage, or whose next cell is not in one.
/// `grids`: the unit's class grid, the map's own grid and the class's footprint. A passage one
/// cell wide only on a wide unit's grid (a bridge three tiles wide for a tank) is not closed to
/// it by narrow units, who can step beside it there.
#[allow(clippy::too_many_arguments)]
pub(super) fn passage_closed(
    claims: &Claims,
    (grid, shared, footprint): (&NavGrid, &NavGrid, u8),
    map: Entity,
    me: Entity,
    (here, next): (Cell, Cell),
    ahead: &[Cell],
    speed: f32,
    clock: f32,
    turn: f32,
) -> bool {
    // Most units are in the open: the next cell tells, without reading the path (with
    // thousands of units, reading each one's path every frame is what costs, in cache misses).
    if turn <= 0.0 || !grid.is_one_wide(next) || grid.is_one_wide(here) {
        return false;
    }
    let n = ahead
        .iter()
        .take(MAX_PASSAGE)
        .take_while(|&&c| grid.is_one_wide(c))
        .count();
    if n == 0 {
        return false;
    }
    let lane = &ahead[..n];
    // Another unit on its way stands on `on` and goes to `to` next.
    let coming = |on: Cell, to: Cell| {
        claims
            .moving_at(map, on)
            .filter(|&e| e != me)
            .and_then(|e| claims.intent(e))
            .is_some_and(|t| {
                t.next == Some(to) && (footprint == 0 || t.footprint > 0 || shared.is_one_wide(on))
            })
    };
    // A unit coming through the other way: in the passage, heading for the cell before its own
    // on this unit's way.
    let mut before = here;
    for &c in lane {
        if coming(c, before) {
            return true;
        }
        before = c;
    }
    let last = lane[n - 1];
    if our_turn(last - here, clock, turn, (n as f32 + 1.0) / speed.max(1e-3)) {
        return false;
    }
    // Out of turn: it goes anyway unless a unit waits to come in at the far end (off the
    // passage, beyond its last cell, heading into it).
    let out = last - if n > 1 { lane[n - 2] } else { here };
    cells_around(last, 1)
        .any(|c| (c - last).dot(out) > 0 && !grid.is_one_wide(c) && coming(c, last))
}

/// Whether a unit going through a passage along `across` (its last cell less the cell the unit
/// enters from) may enter at `clock` seconds and be through in `need` seconds within its
/// direction's turn: rightward (or, along a vertical passage, upward) in the first `turn`
/// seconds of every `2 x turn`, the other way in the second. Both ends of a passage agree on
/// its axis: the axis along which it runs further.
fn our_turn(across: Cell, clock: f32, turn: f32, need: f32) -> bool {
    let forward = if across.x.abs() >= across.y.abs() {
        across.x > 0
    } else {
        across.y > 0
    };
    let phase = clock.rem_euclid(2.0 * turn);
    let (start, end) = if forward {
        (0.0, turn)
    } else {
        (turn, 2.0 * turn)
    };
    phase >= start && end - phase >= need
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{ClassGrid, MoveClass, TerrainCosts};
    use crate::plugin::claims::Intent;

    /// A river (columns 8 to 11) with a bridge three tiles wide (rows 4 to 6) on a 20 x 11
    /// map: one cell wide for a tank's grid (footprint 1), not for infantry.
    fn bridge() -> (NavGrid, NavGrid) {
        let mut shared = NavGrid::new(20, 11).unwrap();
        for x in 8..12 {
            for y in 0..11 {
                if !(4..=6).contains(&y) {
                    shared.set_walkable(Cell::new(x, y), false).unwrap();
                }
            }
        }
        let tank = ClassGrid::new(&shared, MoveClass::new(TerrainCosts::default(), 1)).unwrap();
        (shared, tank.grid().clone())
    }

    #[test]
    fn only_wide_units_close_a_bridge_one_cell_wide_for_wide_units_alone() {
        let (shared, tank_grid) = bridge();
        assert!(tank_grid.is_one_wide(Cell::new(9, 5)));
        assert!(!shared.is_one_wide(Cell::new(9, 5)));
        let e = |i| Entity::from_raw_u32(i).unwrap();
        let (map, tank, other) = (e(1), e(2), e(3));
        // The tank stands west of the bridge, its path across it eastward (on its grid the
        // passage starts a cell before the river: its body must not touch the banks).
        let here = Cell::new(6, 5);
        assert!(!tank_grid.is_one_wide(here) && tank_grid.is_one_wide(Cell::new(7, 5)));
        let ahead: Vec<Cell> = (7..14).map(|x| Cell::new(x, 5)).collect();
        // Another unit on the bridge, coming west.
        let coming = |footprint: u8| {
            let mut claims = Claims::default();
            claims.set_moving_at(map, other, None, Some(Cell::new(10, 5)));
            claims.set_intent(
                other,
                Some(Intent {
                    here: Cell::new(10, 5),
                    next: Some(Cell::new(9, 5)),
                    waiting: false,
                    patient: false,
                    footprint,
                }),
            );
            claims
        };
        let closed = |claims: &Claims| {
            passage_closed(
                claims,
                (&tank_grid, &shared, 1),
                map,
                tank,
                (here, ahead[0]),
                &ahead,
                2.0,
                1.0,
                6.0,
            )
        };
        assert!(closed(&coming(1)), "a tank coming the other way closes it");
        assert!(
            !closed(&coming(0)),
            "infantry coming the other way steps beside the tank on a bridge three tiles wide"
        );
        // Infantry coming through a gap one tile wide closes it to infantry, as before.
        let (mut narrow, _) = bridge();
        for y in [4, 6] {
            for x in 8..12 {
                narrow.set_walkable(Cell::new(x, y), false).unwrap();
            }
        }
        let one_tile = passage_closed(
            &coming(0),
            (&narrow, &narrow, 0),
            map,
            tank,
            (Cell::new(7, 5), ahead[1]),
            &ahead[1..],
            2.0,
            1.0,
            6.0,
        );
        assert!(
            one_tile,
            "a unit coming through a gap one tile wide closes it"
        );
    }

    #[test]
    fn the_two_ends_of_a_passage_take_turns() {
        let right = Cell::new(6, 1);
        let left = Cell::new(-6, -1);
        // Rightward in the first 6 s (if through in time), leftward in the next 6.
        assert!(our_turn(right, 1.0, 6.0, 2.0));
        assert!(!our_turn(left, 1.0, 6.0, 2.0));
        assert!(
            !our_turn(right, 4.5, 6.0, 2.0),
            "not through before the turn ends"
        );
        assert!(our_turn(left, 7.0, 6.0, 2.0));
        assert!(our_turn(right, 13.0, 6.0, 2.0));
        // A vertical passage: upward first.
        assert!(our_turn(Cell::new(1, 5), 1.0, 6.0, 2.0));
        assert!(!our_turn(Cell::new(-1, -5), 1.0, 6.0, 2.0));
    }
}
