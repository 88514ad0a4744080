//! The passages one cell wide a path crosses (bridges, gates: see [`NavGrid::is_one_wide`]),
//! with the way it crosses them. Two bodies cannot pass each other in such a passage, so units
//! crossing it both ways take turns; a game (or the plugin's queue) that knows which passages
//! its units will cross, and which way, can route a unit round a passage that many units will
//! cross against it.

use super::cell::Cell;
use super::grid::NavGrid;

/// One crossing of a passage one cell wide by a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Crossing {
    /// The first cell of the passage on the path.
    pub entry: Cell,
    /// The last cell of the passage on the path.
    pub exit: Cell,
    /// The way through: the cell after the passage less the cell before it (on the path; its
    /// end cells where the path starts or ends in the passage). Never zero.
    pub way: Cell,
    /// Index of `exit` in the path's cells (the crossing is behind a unit past it).
    pub exit_index: usize,
}

impl Crossing {
    /// Whether a unit going along `way` (any length) crosses this passage against this
    /// crossing: their ways point apart (a negative dot product).
    pub fn against(&self, way: Cell) -> bool {
        self.way.dot(way) < 0
    }
}

/// The crossings of passages one cell wide along `cells` (8-connected path cells on `grid`,
/// e.g. a path's corridor), in order. Each run of consecutive passage cells is one crossing.
/// Empty on hexagonal grids (no passage is one cell wide there; see
/// [`NavGrid::is_one_wide`]).
pub fn passage_crossings(grid: &NavGrid, cells: &[Cell]) -> Vec<Crossing> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < cells.len() {
        if !grid.is_one_wide(cells[i]) {
            i += 1;
            continue;
        }
        let first = i;
        while i + 1 < cells.len() && grid.is_one_wide(cells[i + 1]) {
            i += 1;
        }
        let before = cells[first.saturating_sub(1)];
        let after = cells[(i + 1).min(cells.len() - 1)];
        let way = after - before;
        if way != Cell::ZERO {
            out.push(Crossing {
                entry: cells[first],
                exit: cells[i],
                way,
                exit_index: i,
            });
        }
        i += 1;
    }
    out
}

/// A wall down column 5 of an 11 x 7 grid with a gate one cell wide at row 3 (tests).
#[cfg(test)]
pub(crate) fn gate_in_a_wall() -> NavGrid {
    let mut g = NavGrid::new(11, 7).unwrap();
    for y in 0..7 {
        if y != 3 {
            g.set_walkable(Cell::new(5, y), false).unwrap();
        }
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate() -> NavGrid {
        gate_in_a_wall()
    }

    #[test]
    fn a_path_through_a_gate_crosses_it_once_each_way() {
        let g = gate();
        let east: Vec<Cell> = (0..11).map(|x| Cell::new(x, 3)).collect();
        let c = passage_crossings(&g, &east);
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].entry, c[0].exit), (Cell::new(5, 3), Cell::new(5, 3)));
        assert_eq!(c[0].way, Cell::new(2, 0));
        assert_eq!(c[0].exit_index, 5);
        let west: Vec<Cell> = east.iter().rev().copied().collect();
        let w = passage_crossings(&g, &west);
        assert_eq!(w.len(), 1);
        assert!(w[0].against(c[0].way) && c[0].against(w[0].way));
        assert!(!c[0].against(c[0].way));
        // A diagonal way in and out crosses it too.
        let diagonal = [
            Cell::new(3, 1),
            Cell::new(4, 2),
            Cell::new(5, 3),
            Cell::new(6, 4),
            Cell::new(7, 5),
        ];
        let d = passage_crossings(&g, &diagonal);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].way, Cell::new(2, 2));
    }

    #[test]
    fn a_run_of_passage_cells_is_one_crossing_and_open_ground_none() {
        // Walls along rows 2 and 4 from column 4 to 7: row 3 between them is a passage.
        let mut g = NavGrid::new(12, 7).unwrap();
        for x in 4..8 {
            g.set_walkable(Cell::new(x, 2), false).unwrap();
            g.set_walkable(Cell::new(x, 4), false).unwrap();
        }
        let row: Vec<Cell> = (0..12).map(|x| Cell::new(x, 3)).collect();
        let c = passage_crossings(&g, &row);
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].entry, c[0].exit), (Cell::new(4, 3), Cell::new(7, 3)));
        assert_eq!(c[0].exit_index, 7);
        // Along the map's edge (off the grid counts as blocked) with open ground beside.
        let open: Vec<Cell> = (0..12).map(|x| Cell::new(x, 6)).collect();
        assert!(passage_crossings(&g, &open).is_empty());
        // Starting inside the passage: the way runs from its first cell.
        let inside = &row[5..];
        let s = passage_crossings(&g, inside);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].entry, Cell::new(5, 3));
        assert_eq!(s[0].way, Cell::new(3, 0));
        assert!(passage_crossings(&g, &[]).is_empty());
        assert!(passage_crossings(&g, &row[5..6]).is_empty(), "no way");
    }
}
