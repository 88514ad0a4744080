//! Precomputed jump distances (JPS+: Harabor and Grastien, "Improving Jump Point Search", ICAPS
//! 2014; Rabin and Silva, "JPS+: An Extreme A* Speed Optimization for Static Uniform Cost
//! Grids", Game AI Pro 2), for the jump point search without corner cutting in `jps`.
//!
//! For every walkable cell and each of the eight moves the table holds what the search's scan
//! from that cell along that move finds when no goal is in the way: `k > 0`, a jump point `k`
//! steps on (a straight move's forced neighbour; a diagonal move's first cell from which a
//! straight scan along one of its two parts finds one), or `-k <= 0`, a dead end after `k`
//! steps (a blocked cell, or for a diagonal a corner it may not cut). A search reads one entry
//! instead of scanning, and checks the goal on the line by arithmetic (see `jps`).
//!
//! Cells where every scan stops (the ends of a grid's links: a jump must not pass a link's
//! entry by) count as jump points too: the table is built with them (`stops`, one bit per
//! padded cell, empty for none) and a scan ending there holds `k > 0`.
//!
//! The table depends only on which cells are blocked and which are stops, so terrain costs may
//! change freely under it. An edit that blocks or opens a cell recomputes the straight entries of the three rows and
//! three columns through the cell, then the diagonal entries whose inputs changed, following
//! each change back along its diagonal while values still change: local, and exactly what a
//! full build gives (a test checks that after random edits).

/// The eight moves, in the order of the table's entries (the same as `jps::DIRS`).
pub(super) const DIRS: [(i32, i32); 8] = [
    (1, 0),
    (-1, 0),
    (0, 1),
    (0, -1),
    (1, 1),
    (1, -1),
    (-1, 1),
    (-1, -1),
];

/// The entry of a straight move along x (`dx` of +1 or -1).
#[inline(always)]
pub(super) fn along_x(dx: i32) -> usize {
    usize::from(dx < 0)
}

/// The entry of a straight move along y (`dy` of +1 or -1).
#[inline(always)]
pub(super) fn along_y(dy: i32) -> usize {
    2 + usize::from(dy < 0)
}

/// The entry of a diagonal move.
#[inline(always)]
pub(super) fn diagonal(dx: i32, dy: i32) -> usize {
    4 + 2 * usize::from(dx < 0) + usize::from(dy < 0)
}

/// Whether padded cell `i` is one of `stops` (one bit per padded cell; empty: none).
#[inline(always)]
pub(crate) fn is_stop(stops: &[u64], i: usize) -> bool {
    stops.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)
}

/// Jump distances over the padded cell array of a [`NavGrid`](super::NavGrid) (see the module
/// docs). Blocked cells hold zeros.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct JumpTable {
    entries: Vec<[i16; 8]>,
    stride: usize,
}

/// The longest side a table is built for (its distances are `i16`).
pub(crate) const MAX_SIDE: u32 = i16::MAX as u32 - 2;

impl JumpTable {
    /// The table of the padded terrain `terrain` (rows `stride` cells long, a blocked border
    /// ring), with scans stopping at `stops` (see the module docs).
    pub(crate) fn build(terrain: &[u8], stops: &[u64], stride: usize) -> Self {
        let mut table = JumpTable {
            entries: vec![[0; 8]; terrain.len()],
            stride,
        };
        let rows = terrain.len() / stride;
        let (w, h) = (stride - 2, rows - 2);
        // Straight entries, each row or column from the far end back.
        for y in 1..=h {
            table.row(terrain, stops, y);
        }
        for x in 1..=w {
            table.column(terrain, stops, x);
        }
        // Diagonal entries: each reads the entry of the next cell along its move.
        for (d, &(dx, dy)) in DIRS.iter().enumerate().skip(4) {
            for yy in 0..h {
                let y = if dy > 0 { h - yy } else { 1 + yy };
                for xx in 0..w {
                    let x = if dx > 0 { w - xx } else { 1 + xx };
                    let i = y * stride + x;
                    table.entries[i][d] = table.diagonal_entry(terrain, stops, i, d);
                }
            }
        }
        table
    }

    /// The entry of padded cell `i` for move `d` (an index into [`DIRS`]).
    #[inline(always)]
    pub(super) fn get(&self, i: usize, d: usize) -> i32 {
        self.entries[i][d] as i32
    }

    /// Bytes held.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<[i16; 8]>()
    }

    /// Brings the table up to date after padded cell `i` was blocked or opened in `terrain`, or
    /// became or stopped being one of `stops`.
    pub(crate) fn cell_changed(&mut self, terrain: &[u8], stops: &[u64], i: usize) {
        let s = self.stride;
        let (x, y) = (i % s, i / s);
        let rows = terrain.len() / s;
        let mut seeds: Vec<(usize, usize)> = Vec::new();
        // The straight entries that can change: rows and columns through the cell and its
        // neighbours (a forced neighbour depends on the lines beside a move).
        let mut before: Vec<[i16; 8]> = Vec::new();
        for yy in y.saturating_sub(1).max(1)..=(y + 1).min(rows - 2) {
            let start = yy * s;
            before.clear();
            before.extend_from_slice(&self.entries[start..start + s]);
            self.row(terrain, stops, yy);
            for (k, old) in before.iter().enumerate() {
                let new = &self.entries[start + k];
                if old[0] != new[0] || old[1] != new[1] {
                    seeds.push((start + k, 0));
                }
            }
        }
        for xx in x.saturating_sub(1).max(1)..=(x + 1).min(s - 2) {
            before.clear();
            before.extend((0..rows).map(|r| self.entries[r * s + xx]));
            self.column(terrain, stops, xx);
            for (r, old) in before.iter().enumerate() {
                let new = &self.entries[r * s + xx];
                if old[2] != new[2] || old[3] != new[3] {
                    seeds.push((r * s + xx, 0));
                }
            }
        }
        // Diagonal entries to recompute: those reading a changed straight entry (the cell one
        // move back), and those reading the cell itself (the cells around it).
        let mut work: Vec<(usize, usize)> = Vec::new();
        for &(n, _) in &seeds {
            for d in 4..8 {
                work.push((self.back(n, d), d));
            }
        }
        for dy in -1..=1isize {
            for dx in -1..=1isize {
                let c = (i as isize + dy * s as isize + dx) as usize;
                for d in 4..8 {
                    work.push((c, d));
                }
            }
        }
        // Follow each change back along its diagonal.
        while let Some((c, d)) = work.pop() {
            let (cx, cy) = (c % s, c / s);
            if cx == 0 || cy == 0 || cx == s - 1 || cy == rows - 1 {
                continue;
            }
            let new = self.diagonal_entry(terrain, stops, c, d);
            if self.entries[c][d] != new {
                self.entries[c][d] = new;
                work.push((self.back(c, d), d));
            }
        }
    }

    /// The cell one move `d` back from `i` (may be on the border ring).
    fn back(&self, i: usize, d: usize) -> usize {
        let (dx, dy) = DIRS[d];
        (i as isize - dx as isize - dy as isize * self.stride as isize) as usize
    }

    /// Recomputes the entries along x of row `y` (1-based padded row).
    fn row(&mut self, terrain: &[u8], stops: &[u64], y: usize) {
        let s = self.stride;
        for (d, dx) in [(0usize, 1isize), (1, -1)] {
            let w = s - 2;
            for xx in 0..w {
                let x = if dx > 0 { w - xx } else { 1 + xx };
                let i = y * s + x;
                self.entries[i][d] = self.straight_entry(terrain, stops, i, dx, d);
            }
        }
    }

    /// Recomputes the entries along y of column `x` (1-based padded column).
    fn column(&mut self, terrain: &[u8], stops: &[u64], x: usize) {
        let s = self.stride;
        let h = terrain.len() / s - 2;
        for (d, dy) in [(2usize, 1isize), (3, -1)] {
            for yy in 0..h {
                let y = if dy > 0 { h - yy } else { 1 + yy };
                let i = y * s + x;
                self.entries[i][d] = self.straight_entry(terrain, stops, i, dy * s as isize, d);
            }
        }
    }

    /// The straight entry of interior cell `i` for the move of offset `step` (entry `d`),
    /// from the entry of the next cell along it.
    fn straight_entry(
        &self,
        terrain: &[u8],
        stops: &[u64],
        i: usize,
        step: isize,
        d: usize,
    ) -> i16 {
        if terrain[i] == super::cell::BLOCKED {
            return 0;
        }
        let n = (i as isize + step) as usize;
        if terrain[n] == super::cell::BLOCKED {
            return 0;
        }
        // A forced neighbour at `n`: a blocked cell diagonally behind it on one side, with the
        // cell beside it on that side open.
        let side = if step.abs() == 1 {
            self.stride as isize
        } else {
            1
        };
        let blocked = |k: isize| terrain[k as usize] == super::cell::BLOCKED;
        let (n, back) = (n as isize, -step);
        if is_stop(stops, n as usize)
            || (blocked(n + back - side) && !blocked(n - side))
            || (blocked(n + back + side) && !blocked(n + side))
        {
            return 1;
        }
        let next = self.entries[n as usize][d];
        if next > 0 { next + 1 } else { next - 1 }
    }

    /// The diagonal entry of interior cell `i` for move `d`, from the entries of the next cell
    /// along it.
    fn diagonal_entry(&self, terrain: &[u8], stops: &[u64], i: usize, d: usize) -> i16 {
        use super::cell::BLOCKED;
        let (dx, dy) = DIRS[d];
        let (hx, vy) = (dx as isize, dy as isize * self.stride as isize);
        let i = i as isize;
        let at = |k: isize| terrain[k as usize];
        if at(i) == BLOCKED || at(i + hx) == BLOCKED || at(i + vy) == BLOCKED {
            return 0;
        }
        let n = (i + hx + vy) as usize;
        if terrain[n] == BLOCKED {
            return 0;
        }
        let e = &self.entries[n];
        if is_stop(stops, n) || e[along_x(dx)] > 0 || e[along_y(dy)] > 0 {
            return 1;
        }
        let next = e[d];
        if next > 0 { next + 1 } else { next - 1 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::Cell;
    use crate::core::NavGrid;

    /// A splitmix64 step: the tests' random numbers.
    fn next(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// The scan the table stands for, cell by cell (the definition, written out), stopping at
    /// the cells of `stops` too.
    fn scan(grid: &NavGrid, stops: &[Cell], from: Cell, d: usize) -> i32 {
        let (dx, dy) = DIRS[d];
        let open = |c: Cell| grid.is_walkable(c);
        let forced = |n: Cell, dx: i32, dy: i32| {
            let (sx, sy) = (dy.abs(), dx.abs());
            let back = Cell::new(n.x - dx, n.y - dy);
            (!open(Cell::new(back.x - sx, back.y - sy)) && open(Cell::new(n.x - sx, n.y - sy)))
                || (!open(Cell::new(back.x + sx, back.y + sy))
                    && open(Cell::new(n.x + sx, n.y + sy)))
        };
        let straight = |from: Cell, dx: i32, dy: i32| {
            let (mut c, mut k) = (from, 0);
            loop {
                let n = Cell::new(c.x + dx, c.y + dy);
                if !open(n) {
                    return -k;
                }
                k += 1;
                if stops.contains(&n) || forced(n, dx, dy) {
                    return k;
                }
                c = n;
            }
        };
        if !open(from) {
            return 0;
        }
        if dx == 0 || dy == 0 {
            return straight(from, dx, dy);
        }
        let (mut c, mut k) = (from, 0);
        loop {
            let n = Cell::new(c.x + dx, c.y + dy);
            if !open(Cell::new(c.x + dx, c.y)) || !open(Cell::new(c.x, c.y + dy)) || !open(n) {
                return -k;
            }
            k += 1;
            if stops.contains(&n) || straight(n, dx, 0) > 0 || straight(n, 0, dy) > 0 {
                return k;
            }
            c = n;
        }
    }

    fn random_grid(w: u32, h: u32, walls_in_16: u64, state: &mut u64) -> NavGrid {
        let mut grid = NavGrid::new(w, h).unwrap();
        for c in grid.cells().collect::<Vec<_>>() {
            if next(state) % 16 < walls_in_16 {
                grid.set_walkable(c, false).unwrap();
            }
        }
        grid
    }

    #[test]
    fn a_built_table_holds_what_the_scans_find() {
        let mut state = 7;
        for round in 0..40 {
            let (w, h) = (1 + next(&mut state) % 30, 1 + next(&mut state) % 30);
            let grid = random_grid(w as u32, h as u32, round % 8, &mut state);
            let table = JumpTable::build(grid.terrain_raw(), &[], grid.stride());
            for c in grid.cells() {
                let i = grid.index(c).unwrap();
                for d in 0..8 {
                    assert_eq!(table.get(i, d), scan(&grid, &[], c, d), "{c:?} move {d}");
                }
            }
        }
    }

    /// The bits of `cells` over `grid`'s padded array.
    fn stop_bits(grid: &NavGrid, cells: &[Cell]) -> Vec<u64> {
        let mut bits = vec![0u64; grid.terrain_raw().len().div_ceil(64)];
        for &c in cells {
            let i = grid.index(c).unwrap();
            bits[i / 64] |= 1 << (i % 64);
        }
        bits
    }

    #[test]
    fn scans_stop_at_stops_in_the_table_and_as_they_change() {
        let mut state = 5;
        for round in 0..30 {
            let (w, h) = (1 + next(&mut state) % 30, 1 + next(&mut state) % 30);
            let grid = random_grid(w as u32, h as u32, round % 6, &mut state);
            let mut stops: Vec<Cell> = Vec::new();
            let mut table = JumpTable::build(grid.terrain_raw(), &[], grid.stride());
            for _ in 0..12 {
                let c = Cell::new((next(&mut state) % w) as i32, (next(&mut state) % h) as i32);
                if let Some(k) = stops.iter().position(|&s| s == c) {
                    stops.remove(k);
                } else {
                    stops.push(c);
                }
                let bits = stop_bits(&grid, &stops);
                table.cell_changed(grid.terrain_raw(), &bits, grid.index(c).unwrap());
                assert_eq!(
                    table,
                    JumpTable::build(grid.terrain_raw(), &bits, grid.stride()),
                    "after toggling stop {c:?}"
                );
            }
            for c in grid.cells() {
                let i = grid.index(c).unwrap();
                for d in 0..8 {
                    assert_eq!(table.get(i, d), scan(&grid, &stops, c, d), "{c:?} move {d}");
                }
            }
        }
    }

    #[test]
    fn edits_keep_the_table_equal_to_a_new_build() {
        let mut state = 11;
        for round in 0..30 {
            let (w, h) = (1 + next(&mut state) % 40, 1 + next(&mut state) % 40);
            let mut grid = random_grid(w as u32, h as u32, 1 + round % 6, &mut state);
            let mut table = JumpTable::build(grid.terrain_raw(), &[], grid.stride());
            for _ in 0..60 {
                let c = Cell::new((next(&mut state) % w) as i32, (next(&mut state) % h) as i32);
                let open = grid.is_walkable(c);
                grid.set_walkable(c, !open).unwrap();
                table.cell_changed(grid.terrain_raw(), &[], grid.index(c).unwrap());
                assert_eq!(
                    table,
                    JumpTable::build(grid.terrain_raw(), &[], grid.stride()),
                    "after toggling {c:?} on {w} x {h}"
                );
            }
        }
    }

    #[test]
    fn a_table_built_apart_and_given_after_edits_is_the_table_of_the_grid_as_it_is() {
        let mut grid = NavGrid::new(40, 30).unwrap();
        for y in 3..25 {
            grid.set_walkable(Cell::new(12, y), false).unwrap();
        }
        let built = grid.build_jump_table_apart().expect("fits");
        // Edited while the table was being built: walls up, walls down.
        for (x, y, walkable) in [
            (12, 10, true),
            (20, 5, false),
            (21, 5, false),
            (5, 20, false),
        ] {
            grid.set_walkable(Cell::new(x, y), walkable).unwrap();
        }
        assert!(grid.install_jump_table(built));
        let mut fresh = grid.clone();
        fresh.drop_jump_table();
        fresh.build_jump_table();
        assert_eq!(grid.jump_table(), fresh.jump_table());
        // A grid of another size does not take it.
        let built = grid.build_jump_table_apart().expect("fits");
        let mut other = NavGrid::new(41, 30).unwrap();
        assert!(!other.install_jump_table(built));
        assert!(!other.has_jump_table());
    }
}
