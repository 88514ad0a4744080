//! Group orders: the cells a group spreads over around a target, and which unit takes which.

use bevy::math::Vec2;

use super::cell::Cell;
use super::grid::NavGrid;
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

/// How a group stands once a group order brings it to its target.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Formation {
    /// A round blob on the target, units nearest it choosing first ([`spread_slots`],
    /// [`assign_slots`]).
    #[default]
    Blob,
    /// The group's own shape moved to the target: each unit keeps its offset from the group's
    /// centre (StarCraft II's "magic box"). A target inside the box the group stands in clumps
    /// the group as a blob on it.
    KeepShape,
    /// Ranks four times as wide as they are deep, square to the facing.
    Line,
    /// A square block of ranks, square to the facing.
    Box,
}

impl Formation {
    /// Every formation, in the order a game would cycle through them.
    pub const ALL: [Formation; 4] = [
        Formation::Blob,
        Formation::KeepShape,
        Formation::Line,
        Formation::Box,
    ];
}

/// Each unit's slot when a group standing at `positions` (grid space) takes `formation` at
/// `center`, facing `facing` (grid space; `None`: from the group's centre towards `center`).
/// Slots are distinct walkable cells on `center`'s island: where a formation's place is blocked
/// or taken, the nearest free cell of the island instead. `None` for units beyond the island's
/// cells. Ranks fill from the front, the units farthest ahead in the facing taking the front
/// rank and each rank's files left to right in the units' own order, so that paths cross little.
pub fn formation_slots(
    grid: &NavGrid,
    center: Cell,
    positions: &[Vec2],
    formation: Formation,
    facing: Option<Vec2>,
) -> Vec<Option<Cell>> {
    let n = positions.len();
    if n == 0 || !grid.is_walkable(center) {
        return vec![None; n];
    }
    let middle = grid.cell_center(center);
    let centre = positions.iter().copied().sum::<Vec2>() / n as f32;
    let blob = || {
        let slots = spread_slots(grid, center, n);
        assign_slots(grid, positions, &slots, center)
            .into_iter()
            .map(|k| k.map(|k| slots[k]))
            .collect()
    };
    let places: Vec<Vec2> = match formation {
        Formation::Blob => return blob(),
        Formation::KeepShape => {
            let (lo, hi) = positions
                .iter()
                .fold((Vec2::INFINITY, Vec2::NEG_INFINITY), |(lo, hi), p| {
                    (lo.min(*p), hi.max(*p))
                });
            let inside = middle.cmpge(lo - 0.5).all() && middle.cmple(hi + 0.5).all();
            if inside {
                return blob();
            }
            positions.iter().map(|p| middle + (*p - centre)).collect()
        }
        Formation::Line | Formation::Box => {
            let ahead = facing
                .and_then(Vec2::try_normalize)
                .or_else(|| (middle - centre).try_normalize())
                .unwrap_or(Vec2::X);
            ranks_and_files(positions, middle, ahead, formation == Formation::Line)
        }
    };
    let island = grid.island(center);
    let mut taken = bevy::platform::collections::HashSet::new();
    let mut spill = grid.cells_outward(center, u32::MAX);
    places
        .iter()
        .map(|&p| {
            let free =
                |c: Cell| grid.in_bounds(c) && grid.is_walkable(c) && grid.island(c) == island;
            let slot = nearest_free(grid, p, |c| free(c) && !taken.contains(&c))
                .or_else(|| spill.by_ref().find(|c| !taken.contains(c)))?;
            taken.insert(slot);
            Some(slot)
        })
        .collect()
}

/// The places of a line (`line`: four files to a rank) or a box facing `ahead` round
/// `middle`, one for each unit at `positions`: the units farthest ahead take the front rank,
/// each rank left to right.
fn ranks_and_files(positions: &[Vec2], middle: Vec2, ahead: Vec2, line: bool) -> Vec<Vec2> {
    let n = positions.len();
    let right = Vec2::new(ahead.y, -ahead.x);
    let aspect = if line { 4.0 } else { 1.0 };
    let files = ((aspect * n as f32).sqrt().ceil() as usize).clamp(1, n);
    let ranks = n.div_ceil(files);
    let mut order: Vec<usize> = (0..n).collect();
    let along = |k: usize| positions[k].dot(ahead);
    order.sort_by(|&a, &b| along(b).total_cmp(&along(a)).then(a.cmp(&b)));
    let mut places = vec![Vec2::ZERO; n];
    for (rank, chunk) in order.chunks_mut(files).enumerate() {
        let side = |k: &usize| positions[*k].dot(right);
        chunk.sort_by(|a, b| side(a).total_cmp(&side(b)).then(a.cmp(b)));
        // Whole tiles from the centre, so that places fall on cell centres when the facing
        // runs along the grid.
        let forward = ((ranks - 1) / 2) as f32 - rank as f32;
        let width = chunk.len();
        for (file, &k) in chunk.iter().enumerate() {
            let sideways = file as f32 - ((width - 1) / 2) as f32;
            places[k] = middle + forward * ahead + sideways * right;
        }
    }
    places
}

/// Rings of cells searched round a formation's place for a free cell before the unit takes the
/// next free cell out from the centre instead.
const SLOT_SEARCH_RINGS: i32 = 4;

/// The cell nearest `p` (grid space) within [`SLOT_SEARCH_RINGS`] rings of `p`'s cell that
/// `ok` accepts (nearest by straight-line distance, ties in ring order).
fn nearest_free(grid: &NavGrid, p: Vec2, ok: impl Fn(Cell) -> bool) -> Option<Cell> {
    let at = grid.cell_at(p);
    (0..=SLOT_SEARCH_RINGS).find_map(|ring| {
        (-ring..=ring)
            .flat_map(|dy| (-ring..=ring).map(move |dx| Cell::new(dx, dy)))
            .filter(|d| d.x.abs().max(d.y.abs()) == ring)
            .map(|d| at + d)
            .filter(|&c| ok(c))
            .min_by(|&a, &b| {
                let d = |c: Cell| grid.cell_center(c).distance_squared(p);
                d(a).total_cmp(&d(b))
            })
    })
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

    fn square_of_units(at: Vec2, side: i32) -> Vec<Vec2> {
        (0..side * side)
            .map(|k| at + Vec2::new((k % side) as f32, (k / side) as f32))
            .collect()
    }

    #[test]
    fn keep_shape_moves_the_group_as_it_stands_and_clumps_inside_its_box() {
        let grid = NavGrid::new(60, 30).unwrap();
        let units = square_of_units(Vec2::new(4.5, 10.5), 5);
        let slots = formation_slots(&grid, Cell::new(40, 12), &units, Formation::KeepShape, None);
        for (p, s) in units.iter().zip(&slots) {
            let moved = grid.cell_center(s.unwrap()) - *p;
            assert_eq!(moved, Vec2::new(34.0, 0.0), "{p} -> {s:?}");
        }
        // Inside its own box: a blob, as `Blob` gives it.
        let inside = formation_slots(&grid, Cell::new(6, 12), &units, Formation::KeepShape, None);
        let blob = formation_slots(&grid, Cell::new(6, 12), &units, Formation::Blob, None);
        assert_eq!(inside, blob);
    }

    #[test]
    fn a_line_is_wide_and_faces_the_order_and_keeps_units_on_their_side() {
        let grid = NavGrid::new(60, 40).unwrap();
        let units = square_of_units(Vec2::new(4.5, 15.5), 6);
        let slots: Vec<Cell> =
            formation_slots(&grid, Cell::new(40, 20), &units, Formation::Line, None)
                .into_iter()
                .map(Option::unwrap)
                .collect();
        // Facing east: ranks are columns, files run north-south; 36 units, 12 files of 3 ranks.
        let xs: std::collections::BTreeSet<i32> = slots.iter().map(|c| c.x).collect();
        let ys: std::collections::BTreeSet<i32> = slots.iter().map(|c| c.y).collect();
        assert_eq!((xs.len(), ys.len()), (3, 12));
        // The northernmost units hold the north files (facing east, north is on the left).
        let north = units.iter().zip(&slots).filter(|(p, _)| p.y > 19.0);
        assert!(north.clone().count() > 0);
        assert!(north.into_iter().all(|(_, s)| s.y >= 20), "{slots:?}");
        // Given a facing: north, the line runs east-west.
        let facing = formation_slots(
            &grid,
            Cell::new(40, 20),
            &units,
            Formation::Line,
            Some(Vec2::Y),
        );
        let ys: std::collections::BTreeSet<i32> = facing.iter().map(|c| c.unwrap().y).collect();
        assert_eq!(ys.len(), 3);
    }

    #[test]
    fn formation_slots_are_distinct_walkable_and_on_the_island() {
        let mut grid = NavGrid::new(30, 30).unwrap();
        for y in 0..30 {
            grid.set_walkable(Cell::new(20, y), false).unwrap();
        }
        for x in 8..14 {
            grid.set_walkable(Cell::new(x, 15), false).unwrap();
        }
        let units = square_of_units(Vec2::new(2.5, 2.5), 8);
        for formation in Formation::ALL {
            let slots = formation_slots(&grid, Cell::new(17, 15), &units, formation, None);
            let mut seen = bevy::platform::collections::HashSet::new();
            for s in slots.iter().map(|s| s.unwrap()) {
                assert!(grid.is_walkable(s) && grid.island(s) == grid.island(Cell::new(0, 0)));
                assert!(seen.insert(s), "{formation:?}: {s:?} twice");
            }
        }
    }
}
