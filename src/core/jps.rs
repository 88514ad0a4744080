//! Jump point search (Harabor and Grastien, "Online Graph Pruning for Pathfinding on Grid Maps",
//! AAAI 2011), in the variant without corner cutting that MovingAI's benchmarks use, run by
//! [`AStar`](super::AStar) when [`SearchConfig::jump_points`](super::SearchConfig::jump_points) is set on an
//! eight-way grid. It is A* that expands only jump points: from a cell it scans straight and
//! diagonal lines of cells of equal cost without putting them on the open list, and stops
//! where a path could turn (a blocked cell beside the line leaves a "forced" neighbour), at the
//! goal, or next to a cell of another cost. Paths cost exactly what A* finds.
//!
//! It runs on grids of one terrain without penalties (see [`SearchConfig::jump_points`]
//! (super::SearchConfig::jump_points)), where the only costs that vary are those of the
//! search's overlay (other units' claims, stopped units), around the start. It stays exact
//! there: a cell is *plain* when it is walkable and the overlay leaves it alone. Jumps run over
//! plain cells only and stop at any cell with a walkable cell that is not plain among its eight
//! neighbours; such a cell, and every cell that is not plain, is expanded as A* expands it (all
//! its moves, each onto its neighbour). So near the overlay the search is plain A*, and
//! elsewhere, where every step onto a cell costs the same, the pruning of the paper holds: any
//! path there can be reordered into one of equal cost that turns only at jump points (the
//! paper's argument, with cells that are not plain in the role of obstacles, whose neighbours
//! are all expanded). The same rule would keep it exact where terrain varies, but there it is
//! slower than A*: on the MovingAI maps with a fifth of their cells made swamp it took 2.5-2.8
//! times A*'s time (jumps between swamp patches are short, and a third of the cells border one).
//!
//! Links ([`Link`](super::Link)) keep it exact the way the goal does: every jump stops at a
//! link's end (the jump table is built with those stops), and a link's end is expanded in all
//! directions, its crossings relaxed as A* relaxes them, so the path from a crossing's exit
//! starts as a search from a start does.
//!
//! Resumable like A*: a slice ends after `max_expansions` expansions, a jump's cells scanned
//! counting one expansion per [`SCAN_PER_EXPANSION`] (in the expansions reported too, so
//! budgets that count expansions count a jump's work).

use super::cell::{BLOCKED, Cell};
use super::grid::NavGrid;
use super::jump_table::{self, JumpTable};
use super::kernel::{
    self, CellOverlay, Closed, End, Expand, Frontier, OVERLAY_BLOCKED, Query, Scratch,
};
use super::links::LinkIndex;
use super::zeroed::grow_zeroed;

/// Cells scanned by jumps that count as one expansion against a slice's budget (a scan step
/// costs about as much as a sixteenth of an expansion; a slice stays bounded in time).
pub(super) const SCAN_PER_EXPANSION: u32 = 16;

// The eight moves, as `(dx, dy)`, in the order of the jump table's entries.
use jump_table::DIRS;

/// What a jump scan reads: the grid, and which cells are plain (see the module docs).
/// `OVERLAID`: the search has an overlay (else every walkable cell is plain).
struct Scan<'a, const OVERLAID: bool> {
    terrain: &'a [u8],
    /// The ends of the grid's links, one bit per padded cell (empty without links): jumps stop
    /// there like at a goal, and such a cell is expanded in full, its crossings too.
    stops: &'a [u64],
    stride: isize,
    goal: usize,
    /// Nearest-of-several searches: the goals' marks (`generation` on a goal), else `None`.
    goal_marks: Option<(&'a [u32], u32)>,
    /// The search's overlay, `(generation, extra)` per cell (read with `OVERLAID` only).
    overlay: &'a [(u32, u32)],
    generation: u32,
    /// Per cell, whether it is irregular, worked out once a search: `2 * generation + 1` if so,
    /// `2 * generation` if not, older: not yet (jumps look at the same cells again and again;
    /// with `OVERLAID` only).
    memo: &'a [std::cell::Cell<u32>],
    /// The grid's jump table, read instead of scanning by [`Scan::straight_table`] and
    /// [`Scan::diagonal_table`] (searches for one goal without an overlay).
    table: Option<&'a JumpTable>,
    /// The goal's padded column and row.
    goal_xy: (isize, isize),
    /// Padded columns and rows `(x0, y0, x1, y1)` (inclusive) of the box around the overlay's
    /// cells and their neighbours: outside it every cell is plain and regular, so the table
    /// holds what a scan finds there (with `OVERLAID` only).
    shade: (isize, isize, isize, isize),
}

impl<const OVERLAID: bool> Scan<'_, OVERLAID> {
    /// The terrain of padded cell `i`. Not bounds-checked: this load is most of a jump's work
    /// (checked, jump point search on the MovingAI arena2 queries runs 50 % more instructions).
    ///
    /// # Safety
    ///
    /// `i` must be a cell of the grid or one of its eight neighbours: the padded array holds the
    /// grid inside a blocked border ring, so those are inside it. Scans step only from cells
    /// of the grid and stop at the first blocked one (the ring's cells are blocked); the moves
    /// of an expanded cell (of the grid: nothing else enters the open list) are its neighbours.
    #[inline(always)]
    unsafe fn terrain(&self, i: isize) -> u8 {
        debug_assert!(i >= 0 && (i as usize) < self.terrain.len());
        // SAFETY: the caller's contract puts `i` inside the array (see above).
        unsafe { *self.terrain.get_unchecked(i as usize) }
    }

    /// Whether `i` is the goal, or one of the goals.
    #[inline(always)]
    fn is_goal(&self, i: isize) -> bool {
        i as usize == self.goal
            || self
                .goal_marks
                .is_some_and(|(marks, g)| marks.get(i as usize) == Some(&g))
    }

    /// Whether a jump ends at `i`: the goal (or one of them), or a link's end.
    #[inline(always)]
    fn ends_jump(&self, i: isize) -> bool {
        self.is_goal(i) || (!self.stops.is_empty() && jump_table::is_stop(self.stops, i as usize))
    }

    /// Whether padded cell `i` is blocked.
    ///
    /// # Safety
    ///
    /// As [`Scan::terrain`]: `i` is a cell of the grid or one of its neighbours.
    #[inline(always)]
    unsafe fn blocked(&self, i: isize) -> bool {
        // SAFETY: the caller's contract is `terrain`'s.
        unsafe { self.terrain(i) == BLOCKED }
    }

    /// Walkable, and every step onto it costs the plain step (the overlay leaves it alone).
    ///
    /// # Safety
    ///
    /// As [`Scan::terrain`]: `i` is a cell of the grid or one of its neighbours.
    #[inline(always)]
    unsafe fn plain(&self, i: isize) -> bool {
        // SAFETY: the caller's contract is `terrain`'s.
        (unsafe { self.terrain(i) } != BLOCKED)
            && (!OVERLAID
                || self
                    .overlay
                    .get(i as usize)
                    .is_none_or(|o| o.0 != self.generation))
    }

    /// A cell with a walkable neighbour that is not plain: expanded in full, so jumps stop
    /// there.
    ///
    /// # Safety
    ///
    /// `i` is a cell of the grid (its eight neighbours are read).
    #[inline(always)]
    unsafe fn irregular(&self, i: isize) -> bool {
        if !OVERLAID {
            return false;
        }
        let memo = &self.memo[i as usize];
        let known = memo.get();
        if known >> 1 == self.generation {
            return known & 1 == 1;
        }
        let s = self.stride;
        let around = [
            i - s - 1,
            i - s,
            i - s + 1,
            i - 1,
            i + 1,
            i + s - 1,
            i + s,
            i + s + 1,
        ];
        // SAFETY: `around` are the neighbours of `i`, a cell of the grid.
        let irregular = around
            .into_iter()
            .any(|n| unsafe { !self.blocked(n) && !self.plain(n) });
        memo.set(2 * self.generation + u32::from(irregular));
        irregular
    }

    /// Whether a straight move `(dx, dy)` arriving at `i` leaves a forced neighbour: a blocked
    /// cell diagonally behind it on one side with the cell beside `i` on that side open (the
    /// diagonal around that corner is not allowed, so a path to the side cell turns at `i`).
    ///
    /// # Safety
    ///
    /// `i` is a cell of the grid and `(dx, dy)` one of the eight moves.
    #[inline(always)]
    unsafe fn forced_straight(&self, i: isize, dx: i32, dy: i32) -> bool {
        let s = self.stride;
        let back = -(dx as isize) - dy as isize * s;
        // The two sides, perpendicular to the move.
        let side = if dx != 0 { s } else { 1 };
        // SAFETY: each cell read is a neighbour of `i`, a cell of the grid.
        unsafe {
            (self.blocked(i + back - side) && !self.blocked(i - side))
                || (self.blocked(i + back + side) && !self.blocked(i + side))
        }
    }

    /// Scans from `i` (excluded) along the straight move `(dx, dy)`; the jump point reached and
    /// the steps taken, or `None` at a dead end. `scanned` counts the cells looked at.
    ///
    /// # Safety
    ///
    /// `i` is a cell of the grid and `(dx, dy)` a straight move.
    #[inline(always)]
    unsafe fn straight(
        &self,
        i: isize,
        dx: i32,
        dy: i32,
        scanned: &mut u32,
    ) -> Option<(isize, u32)> {
        let d = dx as isize + dy as isize * self.stride;
        let mut c = i;
        let mut k = 0;
        loop {
            let n = c + d;
            *scanned += 1;
            // SAFETY: `n` is a neighbour of `c`, a cell of the grid (the scan's start, or a
            // plain cell it passed); past this test, `n` is walkable: a cell of the grid.
            unsafe {
                if !self.plain(n) {
                    // Blocked (a cell that is not plain is never next to a cell scanned past).
                    return None;
                }
                k += 1;
                if self.ends_jump(n) || self.irregular(n) || self.forced_straight(n, dx, dy) {
                    return Some((n, k));
                }
            }
            c = n;
        }
    }

    /// Scans from `i` (excluded) along the diagonal move `(dx, dy)`: it stops where a straight
    /// scan along either of its two parts finds a jump point.
    ///
    /// # Safety
    ///
    /// `i` is a cell of the grid and `(dx, dy)` a diagonal move.
    #[inline(always)]
    unsafe fn diagonal(
        &self,
        i: isize,
        dx: i32,
        dy: i32,
        scanned: &mut u32,
    ) -> Option<(isize, u32)> {
        let (hx, vy) = (dx as isize, dy as isize * self.stride);
        let mut c = i;
        let mut k = 0;
        loop {
            // SAFETY: the cells read are neighbours of `c`, a cell of the grid (the scan's
            // start, or a plain cell it passed); past the plain test, `n` is walkable: a cell
            // of the grid.
            unsafe {
                // No corner cutting: both cells beside the step open.
                if self.blocked(c + hx) || self.blocked(c + vy) {
                    return None;
                }
                let n = c + hx + vy;
                *scanned += 1;
                if !self.plain(n) {
                    return None;
                }
                k += 1;
                if self.ends_jump(n)
                    || self.irregular(n)
                    || self.straight(n, dx, 0, scanned).is_some()
                    || self.straight(n, 0, dy, scanned).is_some()
                {
                    return Some((n, k));
                }
                c = n;
            }
        }
    }
}

impl<const OVERLAID: bool> Scan<'_, OVERLAID> {
    /// Whether the jump table may stand for a scan from `i` (column `x`, row `y`) along move
    /// `(dx, dy)` under the search's overlay: the cells the scan would look at lie outside the
    /// overlay's shade. A straight scan looks at the line up to the table's reach (blocked
    /// cells beside it are terrain, the same with or without an overlay); a diagonal one, with
    /// the straight scans from its cells, stays in the quadrant ahead of `i`.
    #[inline(always)]
    fn table_holds(
        &self,
        table: &JumpTable,
        (i, x, y): (isize, isize, isize),
        dx: i32,
        dy: i32,
    ) -> bool {
        if !OVERLAID {
            return true;
        }
        let (x0, y0, x1, y1) = self.shade;
        let ahead = |p: isize, d: i32, lo: isize, hi: isize| if d > 0 { hi > p } else { lo < p };
        match (dx, dy) {
            (dx, 0) => {
                let reach = table.get(i as usize, jump_table::along_x(dx)).abs() as isize;
                let (a, b) = (x + dx as isize, x + reach * dx as isize);
                y < y0 || y > y1 || a.max(b) < x0 || a.min(b) > x1
            }
            (0, dy) => {
                let reach = table.get(i as usize, jump_table::along_y(dy)).abs() as isize;
                let (a, b) = (y + dy as isize, y + reach * dy as isize);
                x < x0 || x > x1 || a.max(b) < y0 || a.min(b) > y1
            }
            (dx, dy) => !(ahead(x, dx, x0, x1) && ahead(y, dy, y0, y1)),
        }
    }

    /// [`Scan::straight`] from padded cell `i` at column `x`, row `y`, read from the jump
    /// table: the table's jump point, or the goal if it lies on the line before it (or before
    /// the dead end).
    #[inline(always)]
    fn straight_table(
        &self,
        table: &JumpTable,
        (i, x, y): (isize, isize, isize),
        dx: i32,
        dy: i32,
        scanned: &mut u32,
    ) -> Option<(isize, u32)> {
        *scanned += 1;
        let (gx, gy) = self.goal_xy;
        let (v, to_goal) = if dy == 0 {
            let v = table.get(i as usize, jump_table::along_x(dx));
            (v, if gy == y { (gx - x) * dx as isize } else { 0 })
        } else {
            let v = table.get(i as usize, jump_table::along_y(dy));
            (v, if gx == x { (gy - y) * dy as isize } else { 0 })
        };
        let step = dx as isize + dy as isize * self.stride;
        if to_goal > 0 && to_goal <= v.abs() as isize {
            return Some((i + to_goal * step, to_goal as u32));
        }
        (v > 0).then(|| (i + v as isize * step, v as u32))
    }

    /// [`Scan::diagonal`] read from the jump table: the table's stop, or an earlier cell on the
    /// diagonal from which the goal lies straight ahead along one of the move's parts (before
    /// that line's dead end), or the goal itself.
    #[inline(always)]
    fn diagonal_table(
        &self,
        table: &JumpTable,
        (i, x, y): (isize, isize, isize),
        dx: i32,
        dy: i32,
        scanned: &mut u32,
    ) -> Option<(isize, u32)> {
        *scanned += 1;
        let v = table.get(i as usize, jump_table::diagonal(dx, dy));
        let reach = v.abs() as isize;
        let mut best = if v > 0 { v as isize } else { isize::MAX };
        let (gx, gy) = self.goal_xy;
        let (dxi, dyi) = (dx as isize, dy as isize);
        let step = dxi + dyi * self.stride;
        // The goal's row and column cross the diagonal at steps `k_row` and `k_col`; from there
        // the goal lies `ahead` cells on along x (or y) if that line (table entry `entry`) is
        // open up to it.
        let mut cross = |k: isize, ahead: isize, entry: usize| {
            if k >= 1
                && k <= reach
                && k < best
                && (ahead == 0
                    || (ahead > 0
                        && ahead <= table.get((i + k * step) as usize, entry).abs() as isize))
            {
                best = k;
            }
        };
        let k_row = (gy - y) * dyi;
        cross(
            k_row,
            (gx - (x + k_row * dxi)) * dxi,
            jump_table::along_x(dx),
        );
        let k_col = (gx - x) * dxi;
        cross(
            k_col,
            (gy - (y + k_col * dyi)) * dyi,
            jump_table::along_y(dy),
        );
        (best != isize::MAX).then(|| (i + best * step, best as u32))
    }
}

/// Runs a slice of the jump point search `query` (see the module docs) on `scratch`, in the
/// kernel's loop.
pub(super) fn run(
    scratch: &mut Scratch,
    query: &mut Query,
    overlay: &[(Cell, CellOverlay)],
    grid: &NavGrid,
    budget: u32,
) -> End {
    // (The grid is of one terrain without penalties: only an overlay varies costs.) With an
    // overlay (`OVERLAID`), or where every walkable cell is plain; jumps read from the table if
    // there is one (one goal), else scanned.
    let table = grid.jump_table().filter(|_| !query.multi_goal);
    if !overlay.is_empty() {
        grow_zeroed(&mut scratch.memo, scratch.nodes.len());
    }
    let args = (scratch, query, overlay, grid, budget);
    match (!overlay.is_empty(), table) {
        (false, Some(t)) => jump_loop::<false, true>(args, Some(t)),
        (false, None) => jump_loop::<false, false>(args, None),
        (true, Some(t)) => jump_loop::<true, true>(args, Some(t)),
        (true, None) => jump_loop::<true, false>(args, None),
    }
}

/// [`run`], monomorphised for an overlay (`OVERLAID`) and for reading a table (`TABLE`) or
/// scanning.
#[inline(never)]
fn jump_loop<const OVERLAID: bool, const TABLE: bool>(
    (scratch, query, overlay, grid, budget): (
        &mut Scratch,
        &mut Query,
        &[(Cell, CellOverlay)],
        &NavGrid,
        u32,
    ),
    table: Option<&JumpTable>,
) -> End {
    let stride = grid.stride();
    let closed = scratch.closed_stamp();
    let mut counts = query.counts;
    let (mut frontier, marks) = scratch.split(query.packing);
    let generation = marks.generation;
    let scan = Scan::<OVERLAID> {
        terrain: grid.terrain_raw(),
        stops: grid.links_raw().ends(),
        stride: stride as isize,
        goal: query.goal,
        goal_marks: query.multi_goal.then_some((marks.marks, generation)),
        overlay: marks.overlay,
        generation,
        memo: std::cell::Cell::from_mut(marks.memo).as_slice_of_cells(),
        table,
        goal_xy: (
            (query.goal % stride) as isize,
            (query.goal / stride) as isize,
        ),
        shade: if TABLE && OVERLAID {
            shade(overlay)
        } else {
            (0, 0, 0, 0)
        },
    };
    let mut jumps = Jumps::<OVERLAID, TABLE> {
        scan,
        links: grid.links_raw(),
        query: &*query,
        // Every walkable cell has the grid's one terrain, its cheapest.
        plain_step: [
            query.costs.straight as u64 * query.min_terrain,
            query.costs.diagonal as u64 * query.min_terrain,
        ],
        scanned: 0,
    };
    let end = kernel::run(&mut frontier, closed, budget, &mut counts, &mut jumps);
    query.counts = counts;
    end
}

/// Jump point search in the kernel's loop: a jump point's successors are the jump points its
/// pruned moves reach (see the module docs).
struct Jumps<'a, const OVERLAID: bool, const TABLE: bool> {
    scan: Scan<'a, OVERLAID>,
    links: &'a LinkIndex,
    query: &'a Query,
    /// The cost of a plain straight and diagonal step.
    plain_step: [u64; 2],
    /// Cells scanned and not charged yet (one expansion per [`SCAN_PER_EXPANSION`]).
    scanned: u32,
}

impl<const OVERLAID: bool, const TABLE: bool> Expand for Jumps<'_, OVERLAID, TABLE> {
    #[inline(always)]
    fn closed(&mut self, i: usize) -> Closed {
        if self.scan.is_goal(i as isize) {
            Closed::Goal
        } else {
            Closed::Expand
        }
    }

    #[inline(always)]
    fn expand(&mut self, i: usize, frontier: &mut Frontier) -> u32 {
        let (scan, query, plain_step) = (&self.scan, self.query, self.plain_step);
        let stride = scan.stride as usize;
        let g = frontier.g(i);
        let ii = i as isize;
        // Pruned moves from a plain cell reached by a jump: the paper's natural neighbours
        // and forced ones; everything from the start and from cells next to other costs.
        // SAFETY (here and below): `i` came off the open list, which holds cells of the grid
        // only; every cell read is `i` or one of its neighbours, and the scans start from `i`.
        let full = i == query.start
            || (!scan.stops.is_empty() && jump_table::is_stop(scan.stops, i))
            || unsafe { !scan.plain(ii) || scan.irregular(ii) };
        let (px, py) = {
            let p = frontier.parent(i);
            let (dx, dy) = (
                (i % stride) as i32 - (p % stride) as i32,
                (i / stride) as i32 - (p / stride) as i32,
            );
            (dx.signum(), dy.signum())
        };
        let links = self.links;
        let h_of = |j: usize| {
            let (x, y) = ((j % stride) as u32 - 1, (j / stride) as u32 - 1);
            query.through_links(query.h_square(x, y), x, y, links.entry_bound(j))
        };
        // The cell's column and row, for the table's goal checks.
        let at = if TABLE {
            (ii, (i % stride) as isize, (i / stride) as isize)
        } else {
            (ii, 0, 0)
        };
        for (dx, dy) in DIRS {
            let diag = dx != 0 && dy != 0;
            if !full {
                let wanted = if px != 0 && py != 0 {
                    // Diagonal arrival: its two parts and itself (no forced neighbours
                    // without corner cutting).
                    (dx == px || dx == 0) && (dy == py || dy == 0)
                } else if px != 0 {
                    // Straight along x: on, or round a corner behind (forced).
                    (dx == px && dy == 0)
                        || (dy != 0
                            && (dx == 0 || dx == px)
                            && unsafe {
                                scan.blocked(ii - px as isize + dy as isize * scan.stride)
                            })
                } else {
                    (dy == py && dx == 0)
                        || (dx != 0
                            && (dy == 0 || dy == py)
                            && unsafe {
                                scan.blocked(ii - py as isize * scan.stride + dx as isize)
                            })
                };
                if !wanted {
                    continue;
                }
            }
            let (hx, vy) = (dx as isize, dy as isize * scan.stride);
            let n = ii + hx + vy;
            if unsafe {
                scan.blocked(n) || (diag && (scan.blocked(ii + hx) || scan.blocked(ii + vy)))
            } {
                continue;
            }
            if !unsafe { scan.plain(n) } {
                // A move onto a cell the overlay touches, as A* makes it.
                let (s, extra) = scan.overlay.get(n as usize).copied().unwrap_or((0, 0));
                let extra = if s == scan.generation { extra } else { 0 };
                if extra == OVERLAY_BLOCKED {
                    continue;
                }
                let n = n as usize;
                frontier.relax(i, n, g + plain_step[diag as usize] + extra as u64, || {
                    h_of(n)
                });
                continue;
            }
            let found = match scan.table {
                Some(t) if TABLE && scan.table_holds(t, at, dx, dy) => {
                    if diag {
                        scan.diagonal_table(t, at, dx, dy, &mut self.scanned)
                    } else {
                        scan.straight_table(t, at, dx, dy, &mut self.scanned)
                    }
                }
                _ if diag => unsafe { scan.diagonal(ii, dx, dy, &mut self.scanned) },
                _ => unsafe { scan.straight(ii, dx, dy, &mut self.scanned) },
            };
            if let Some((j, k)) = found {
                let j = j as usize;
                frontier.relax(i, j, g + k as u64 * plain_step[diag as usize], || h_of(j));
            }
        }
        // A link's crossings, as A* makes them.
        for e in links.starting_at(i) {
            let j = e.to as usize;
            if unsafe { scan.blocked(j as isize) } {
                continue;
            }
            let (s, extra) = scan.overlay.get(j).copied().unwrap_or((0, 0));
            let extra = if OVERLAID && s == scan.generation {
                extra
            } else {
                0
            };
            if extra != OVERLAY_BLOCKED {
                frontier.relax(i, j, g + e.cost + extra as u64, || h_of(j));
            }
        }
        // Scanned cells are work too: they count as expansions (of the slice's budget, the
        // expansion limit, and the figure reported), one per `SCAN_PER_EXPANSION`.
        let charged = self.scanned / SCAN_PER_EXPANSION;
        self.scanned %= SCAN_PER_EXPANSION;
        charged
    }
}

/// The shade of an overlay (see `Scan::shade`): the box of its cells grown by one cell, in
/// padded coordinates.
fn shade(overlay: &[(Cell, CellOverlay)]) -> (isize, isize, isize, isize) {
    let (mut lo, mut hi) = (Cell::MAX, Cell::MIN);
    for &(c, _) in overlay {
        (lo, hi) = (lo.min(c), hi.max(c));
    }
    // Padded coordinates are one more; the box grows by one.
    (
        lo.x as isize,
        lo.y as isize,
        hi.x as isize + 2,
        hi.y as isize + 2,
    )
}

/// The cells of a jump point path: `points` with the straight and diagonal lines between
/// consecutive ones filled in, but for the pairs `crossed` says are a link's crossing (kept as
/// they are, two cells that are not neighbours).
pub(super) fn fill_jumps(points: &[Cell], crossed: impl Fn(usize) -> bool) -> Vec<Cell> {
    let mut cells = Vec::with_capacity(points.len());
    for (k, w) in points.windows(2).enumerate() {
        let (mut c, b) = (w[0], w[1]);
        if crossed(k) {
            cells.push(c);
            continue;
        }
        let step = Cell::new((b.x - c.x).signum(), (b.y - c.y).signum());
        while c != b {
            cells.push(c);
            c += step;
        }
    }
    cells.extend(points.last());
    cells
}
