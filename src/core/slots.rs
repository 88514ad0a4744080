//! Group orders: the cells a group spreads over around a target, and which unit takes which.

use bevy::math::Vec2;

use super::grid::{Cell, NavGrid};
use super::search::nearest_on_island;

/// The cell a group heading for `target` gathers around: `target` itself if it is walkable and
/// on `island`, else the nearest cell of `island` (`None` if the island has no cell).
pub fn group_center(grid: &NavGrid, target: Cell, island: Option<u32>) -> Option<Cell> {
    if grid.is_walkable(target) && grid.island(target) == island {
        Some(target)
    } else {
        nearest_on_island(grid, target, island)
    }
}

/// `n` distinct walkable cells around `center`, nearest (straight-line) first among the cells
/// reachable from it: a round, compact blob on `center`'s island, never a blocked cell or
/// another island. Fewer if the island is smaller than `n`.
pub fn spread_slots(grid: &NavGrid, center: Cell, n: usize) -> Vec<Cell> {
    if !grid.is_walkable(center) || n == 0 {
        return Vec::new();
    }
    // Breadth-first reaches a diamond; twice as many cells hold the round blob inside it.
    let mut cells: Vec<(usize, Cell)> = grid
        .cells_outward(center, u32::MAX)
        .take(2 * n + 8)
        .enumerate()
        .collect();
    let middle = grid.cell_center(center);
    let d = |c: Cell| grid.cell_center(c).distance_squared(middle);
    cells.sort_by(|&(k, a), &(l, b)| d(a).total_cmp(&d(b)).then(k.cmp(&l)));
    cells.into_iter().take(n).map(|(_, c)| c).collect()
}

/// Which slot each unit takes: units nearest `center` choose first, each the free slot nearest
/// to itself, so the group keeps its shape and paths cross little. `positions` are grid-space
/// points; the result gives each unit's slot index (`None` once slots run out).
pub fn assign_slots(
    grid: &NavGrid,
    positions: &[Vec2],
    slots: &[Cell],
    center: Cell,
) -> Vec<Option<usize>> {
    let c = grid.cell_center(center);
    let mut order: Vec<usize> = (0..positions.len()).collect();
    order.sort_by(|&a, &b| {
        positions[a]
            .distance_squared(c)
            .total_cmp(&positions[b].distance_squared(c))
    });
    let points: Vec<Vec2> = slots.iter().map(|&s| grid.cell_center(s)).collect();
    let mut free: Vec<usize> = (0..slots.len()).collect();
    let mut taken = vec![None; positions.len()];
    for unit in order {
        let Some((k, _)) = free
            .iter()
            .enumerate()
            .map(|(k, &s)| (k, points[s].distance_squared(positions[unit])))
            .min_by(|a, b| a.1.total_cmp(&b.1))
        else {
            break;
        };
        taken[unit] = Some(free.swap_remove(k));
    }
    taken
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_distinct_walkable_and_on_the_centers_island() {
        let mut grid = NavGrid::new(20, 20).unwrap();
        // A wall closing off the right part: another island.
        for y in 0..20 {
            grid.set_walkable(Cell::new(12, y), false).unwrap();
        }
        grid.set_walkable(Cell::new(9, 9), false).unwrap();
        let island = grid.island(Cell::new(0, 0));
        let center = group_center(&grid, Cell::new(9, 9), island).unwrap();
        assert!(grid.is_walkable(center));
        let slots = spread_slots(&grid, center, 150);
        assert_eq!(slots.len(), 150);
        let mut seen = bevy::platform::collections::HashSet::new();
        for s in &slots {
            assert!(grid.is_walkable(*s) && grid.island(*s) == island, "{s:?}");
            assert!(seen.insert(*s));
        }
        // More units than the island has cells: every cell once, no more.
        assert_eq!(spread_slots(&grid, center, 1000).len(), 12 * 20 - 1);
        // A target on the other island gathers the group at the nearest cell of its own.
        let across = group_center(&grid, Cell::new(15, 5), island).unwrap();
        assert_eq!(across, Cell::new(11, 5));
    }

    #[test]
    fn units_take_the_slots_on_their_side() {
        let grid = NavGrid::new(12, 12).unwrap();
        let slots = [Cell::new(4, 5), Cell::new(5, 5), Cell::new(6, 5)];
        let units = [
            Vec2::new(10.5, 5.5),
            Vec2::new(0.5, 5.5),
            Vec2::new(5.5, 9.5),
        ];
        let taken = assign_slots(&grid, &units, &slots, Cell::new(5, 5));
        assert_eq!(taken, vec![Some(2), Some(0), Some(1)]);
        // More units than slots: the farthest go without.
        let taken = assign_slots(&grid, &units, &slots[..1], Cell::new(5, 5));
        assert_eq!(taken.iter().flatten().count(), 1);
    }
}
