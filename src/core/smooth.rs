//! Path smoothing (Pinter, Listing 1): drop every intermediate waypoint the unit can skip by
//! walking straight.

use bevy::math::Vec2;

use super::cell::Cell;
use super::grid::{NavGrid, Topology};
use super::line::walkable_within;

/// How many cells ahead smoothing looks for a shortcut.
const LOOKAHEAD: usize = 64;

/// How many cells ahead a leading pass ([`Smoother::leading`]) looks: half as far, so a
/// 2,000-unit group order's paths come as fast as with 12-cell first legs (64 cells ahead cost
/// it 40 % more frames), while the 1,000-unit demo rally settles as soon.
const LEAD_LOOKAHEAD: usize = 32;

/// Smooths a path of cells into grid-space waypoints for a unit of `radius`, all at once (see
/// [`Smoother`] for the method and for smoothing a little at a time).
pub fn smooth_path(grid: &NavGrid, cells: &[Cell], radius: f32) -> Vec<Vec2> {
    smooth_path_in_steps(grid, cells, radius, u32::MAX, || {})
}

/// [`smooth_path`], `units` units of work at a time (see [`Smoother::step`]), calling `between`
/// after every step that did not finish (a worker thread can give way there).
pub fn smooth_path_in_steps(
    grid: &NavGrid,
    cells: &[Cell],
    radius: f32,
    units: u32,
    between: impl FnMut(),
) -> Vec<Vec2> {
    Smoother::new(grid, cells, radius).finish_in_steps(grid, units, between)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Pull,
    Merge,
}

/// Resumable path smoothing (Pinter's Listing 1, strengthened), so a frame budget can bound it.
///
/// As in Pinter's Listing 1, waypoints are dropped whenever the unit can walk straight past them
/// ([`walkable`](super::walkable)) without crossing terrain dearer than the stretch the
/// shortcut replaces. Three refinements, each measured on the MovingAI DAO maps to remove more
/// bends:
/// - from each kept waypoint the next is the furthest cell (up to 64 ahead) in straight reach,
///   not the last before the first cell out of reach;
/// - two bends wrapping one wall corner are merged into one point beside that corner;
/// - the whole pass runs from both ends and the result with fewer bends (then shorter) wins.
///
/// Segments that cannot be smoothed stay as the raw steps, so the result is never longer than the
/// path and every new segment is walkable.
#[derive(Clone, Debug)]
pub struct Smoother {
    cells: Vec<Cell>,
    /// The grid's topology (where the cells' centers lie in grid space).
    topology: Topology,
    radius: f32,
    backward: bool,
    phase: Phase,
    /// Pull: index of the last kept cell (in pass order). Merge: index into `out`.
    at: usize,
    out: Vec<Vec2>,
    forward_result: Option<Vec<Vec2>>,
    /// Dearest terrain on the path, taken when a merge pass starts (merges may not cross dearer).
    max_terrain: u8,
    /// Pull: the cell index to test next, counting down from the furthest (0: not started).
    scan: usize,
    /// Merge: candidate points for the bend at `at`, shortest first, and how many were tried
    /// (`None`: not computed yet).
    candidates: Option<(Vec<(f32, Vec2)>, usize)>,
    /// A leading smoother stops once it kept a cell at or past this index (see
    /// [`Smoother::leading`]).
    lead: Option<usize>,
    /// Pull, leading: the furthest cell known in reach, and the nearest known out of reach
    /// (0: none yet).
    low: usize,
    high: usize,
    /// Cells looked at so far: along the lines checked (with the cells round them a body's
    /// check looks at), and in the scans of the path.
    work: u64,
    /// The centers of the cells at either end of a link's crossing in the path: waypoints that
    /// stay where they are (empty on paths without crossings).
    crossing_ends: Vec<Vec2>,
}

/// Whether the path's step from `a` to `b` is a link's crossing rather than a move to a
/// neighbour (a step the move rules do not allow: a path has only those across links; the
/// link may have closed since).
fn is_crossing(grid: &NavGrid, a: Cell, b: Cell) -> bool {
    grid.has_links() && !grid.is_move(a, b)
}

impl Smoother {
    /// Starts smoothing `cells` of `grid` for a unit of `radius` tiles.
    pub fn new(grid: &NavGrid, cells: &[Cell], radius: f32) -> Self {
        let crossing_ends = cells
            .windows(2)
            .filter(|w| is_crossing(grid, w[0], w[1]))
            .flat_map(|w| [grid.cell_center(w[0]), grid.cell_center(w[1])])
            .collect();
        Smoother {
            cells: cells.to_vec(),
            topology: grid.rules().topology,
            radius,
            backward: false,
            phase: Phase::Pull,
            at: 0,
            out: cells
                .first()
                .map(|&c| vec![grid.cell_center(c)])
                .unwrap_or_default(),
            forward_result: None,
            max_terrain: 0,
            scan: 0,
            candidates: None,
            lead: None,
            low: 0,
            high: 0,
            work: 0,
            crossing_ends,
        }
    }

    /// Smooths only the start of `cells`: the forward pass's waypoints (each the furthest cell
    /// in straight reach, up to 32 cells ahead, over the whole path) until one is at or past cell
    /// `min_cells`. Every waypoint is a cell center of the path, and the first ones are those a
    /// whole smoothing's forward pass would (but see the bisection at `next_in_reach`),
    /// so the rest can be smoothed later from the last of them without a bend where the two
    /// meet. A path at most `min_cells` steps long is smoothed whole.
    pub fn leading(grid: &NavGrid, cells: &[Cell], radius: f32, min_cells: usize) -> Self {
        let whole = Smoother::new(grid, cells, radius);
        if cells.len() <= min_cells.saturating_add(1) {
            return whole;
        }
        Smoother {
            lead: Some(min_cells.max(1)),
            ..whole
        }
    }

    /// Smooths all of `cells` with the forward pass of a leading smoother
    /// ([`Smoother::leading`]): no merges of bends round one corner, no backward pass, a
    /// bisection for each waypoint instead of a scan. Measured on the MovingAI maps in
    /// `movingai --smooth`: a twentieth of [`Smoother::new`]'s work, paths 0.2-0.7 % longer
    /// with 13-30 % more bends.
    pub fn forward(grid: &NavGrid, cells: &[Cell], radius: f32) -> Self {
        let whole = Smoother::new(grid, cells, radius);
        Smoother {
            lead: Some(cells.len().saturating_sub(1).max(1)),
            ..whole
        }
    }

    /// Cells looked at so far (along the lines checked, up to where a check failed, with the
    /// cells round them a body's check looks at; and scanning the path): a measure of
    /// the work done that depends on nothing but the grid and the path (lockstep budgets count
    /// it).
    pub fn work(&self) -> u64 {
        self.work
    }

    /// Number of cells being smoothed.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// Whether there is nothing to smooth.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// The grid-space center of the `k`-th cell in pass order.
    fn center(&self, k: usize) -> Vec2 {
        self.topology.cell_center(self.cell(k))
    }

    fn cell(&self, k: usize) -> Cell {
        if self.backward {
            self.cells[self.cells.len() - 1 - k]
        } else {
            self.cells[k]
        }
    }

    fn visible(&mut self, grid: &NavGrid, from: usize, to: usize) -> bool {
        // A link's crossing is never cut: both its ends stay waypoints.
        if !self.crossing_ends.is_empty()
            && (from..to).any(|k| is_crossing(grid, self.cell(k), self.cell(k + 1)))
        {
            return false;
        }
        let terrain = |c: Cell| grid.terrain(c).unwrap_or(0);
        let limit = (from..=to)
            .map(|k| terrain(self.cell(k)))
            .max()
            .unwrap_or(0);
        let (a, b) = (self.center(from), self.center(to));
        self.work += (to - from) as u64;
        clear(grid, a, b, self.radius, limit, &mut self.work)
    }

    /// Runs to the end, `units` units of work at a time (see [`Smoother::step`]), calling
    /// `between` after every step that did not finish.
    pub fn finish_in_steps(
        mut self,
        grid: &NavGrid,
        units: u32,
        mut between: impl FnMut(),
    ) -> Vec<Vec2> {
        loop {
            if let Some(points) = self.step(grid, units) {
                return points;
            }
            between();
        }
    }

    /// One check toward the waypoint after cell `check` (the look-ahead's end is `scan`); the
    /// waypoint once known. The whole pass scans down from the look-ahead's end to the first
    /// cell in reach. A leading pass (which runs while the unit waits for its path) bisects
    /// between `low` and `high` instead, some 5 checks instead of up to 32: where reach is not
    /// monotone along the path it may settle on a nearer cell, always one in reach.
    fn next_in_reach(&mut self, grid: &NavGrid, check: usize) -> Option<usize> {
        let top = self.scan;
        if self.lead.is_none() {
            if top > check + 1 && !self.visible(grid, check, top) {
                self.scan -= 1;
                return None;
            }
            return Some(top);
        }
        if self.high == 0 {
            if top <= check + 1 || self.visible(grid, check, top) {
                return Some(top);
            }
            self.high = top;
            return None;
        }
        if self.high - self.low <= 1 {
            return Some(self.low);
        }
        let mid = (self.low + self.high) / 2;
        if self.visible(grid, check, mid) {
            self.low = mid;
        } else {
            self.high = mid;
        }
        None
    }

    /// Does at most `max_units` units of work (one unit: at most one or two straight-line checks
    /// of at most 64 cells); returns the waypoints when done.
    pub fn step(&mut self, grid: &NavGrid, max_units: u32) -> Option<Vec<Vec2>> {
        let n = self.cells.len();
        if n <= 1 {
            return Some(std::mem::take(&mut self.out));
        }
        for _ in 0..max_units {
            let done = match self.phase {
                Phase::Pull => self.pull(grid),
                Phase::Merge if self.at + 2 >= self.out.len() => self.end_pass(),
                Phase::Merge => {
                    self.merge(grid);
                    None
                }
            };
            if done.is_some() {
                return done;
            }
        }
        None
    }

    /// One unit of the pull phase: one check toward the next waypoint, the furthest cell in
    /// reach. The waypoints, if a leading pass has reached its lead.
    fn pull(&mut self, grid: &NavGrid) -> Option<Vec<Vec2>> {
        let last = self.cells.len() - 1;
        let check = self.at;
        if self.scan == 0 {
            let ahead = if self.lead.is_some() {
                LEAD_LOOKAHEAD
            } else {
                LOOKAHEAD
            };
            self.scan = last.min(check + ahead);
            (self.low, self.high) = (check + 1, 0);
        }
        let next = self.next_in_reach(grid, check)?;
        self.scan = 0;
        self.at = next;
        self.out.push(self.center(next));
        if self.lead.is_some_and(|lead| next >= lead) {
            return Some(std::mem::take(&mut self.out));
        }
        if next == last {
            self.phase = Phase::Merge;
            self.work += self.cells.len() as u64;
            self.at = 1;
            self.max_terrain = self
                .cells
                .iter()
                .map(|&c| grid.terrain(c).unwrap_or(0))
                .max()
                .unwrap_or(0);
        }
        None
    }

    /// The end of a pass's merge phase: after the forward pass, the backward one starts (unless
    /// the path has at most one bend); after the backward pass, the better of the two.
    fn end_pass(&mut self) -> Option<Vec<Vec2>> {
        let mut done = std::mem::take(&mut self.out);
        if self.backward {
            done.reverse();
            let forward = self.forward_result.take().unwrap_or_default();
            let key = |p: &[Vec2]| (count_turns_f(p), polyline_length(p));
            return Some(if key(&done) < key(&forward) {
                done
            } else {
                forward
            });
        }
        if done.len() <= 3 {
            return Some(done); // at most one bend: the other way cannot beat it
        }
        self.forward_result = Some(done);
        self.backward = true;
        self.phase = Phase::Pull;
        self.at = 0;
        self.out = vec![self.center(0)];
        None
    }

    /// One unit of the merge phase: one candidate point for the bend at `at`.
    fn merge(&mut self, grid: &NavGrid) {
        let ends = &self.crossing_ends;
        if ends.contains(&self.out[self.at]) || ends.contains(&self.out[self.at + 1]) {
            self.at += 1;
            return;
        }
        let (candidates, tried) = self
            .candidates
            .get_or_insert_with(|| (bend_candidates(&self.out, self.at, self.radius), 0));
        match candidates.get(*tried) {
            Some(&(_, x)) => {
                *tried += 1;
                let (p, n) = (self.out[self.at - 1], self.out[self.at + 2]);
                let (radius, max_terrain) = (self.radius, self.max_terrain);
                let work = &mut self.work;
                let mut ok = |a, b| clear(grid, a, b, radius, max_terrain, work);
                if ok(p, x) && ok(x, n) {
                    self.out[self.at] = x;
                    self.out.remove(self.at + 1);
                    self.candidates = None;
                }
            }
            None => {
                self.candidates = None;
                self.at += 1;
            }
        }
    }
}

/// Whether a unit of `radius` can walk straight from `a` to `b` without crossing terrain dearer
/// than `max_terrain`; the cells looked at are added to `work`.
fn clear(grid: &NavGrid, a: Vec2, b: Vec2, radius: f32, max_terrain: u8, work: &mut u64) -> bool {
    walkable_within(grid, a, b, radius, max_terrain, work)
}

/// Candidates to replace the two bends at `points[i]` and `points[i + 1]` by one point beside the
/// wall corner they wrap around (string pulling between cell centers needs two waypoints to go
/// round a corner, a unit needs one): points beside the lattice corners around the two bends
/// that would not lengthen the path, shortest first. The first that sees both neighbours wins.
fn bend_candidates(points: &[Vec2], i: usize, radius: f32) -> Vec<(f32, Vec2)> {
    let off = radius + 1e-3;
    let (p, w1, w2, n) = (points[i - 1], points[i], points[i + 1], points[i + 2]);
    let old = p.distance(w1) + w1.distance(w2) + w2.distance(n);
    let mut candidates: Vec<(f32, Vec2)> = Vec::with_capacity(48);
    for base in [w1.floor(), w2.floor(), ((w1 + w2) * 0.5).floor()] {
        for corner in [Vec2::ZERO, Vec2::X, Vec2::Y, Vec2::ONE] {
            for sign in [
                Vec2::new(-1.0, -1.0),
                Vec2::new(1.0, -1.0),
                Vec2::new(-1.0, 1.0),
                Vec2::new(1.0, 1.0),
            ] {
                let x = base + corner + sign * off;
                let len = p.distance(x) + x.distance(n);
                if len <= old {
                    candidates.push((len, x));
                }
            }
        }
    }
    candidates.sort_by(|a, b| a.0.total_cmp(&b.0));
    candidates
}

/// Length of a polyline.
pub fn polyline_length(points: &[Vec2]) -> f64 {
    points.windows(2).map(|w| w[0].distance(w[1]) as f64).sum()
}

/// Number of direction changes along a polyline (bends of more than about 0.06 degrees).
pub fn count_turns_f(points: &[Vec2]) -> usize {
    points
        .windows(3)
        .filter(|w| {
            let a = (w[1] - w[0]).normalize_or_zero();
            let b = (w[2] - w[1]).normalize_or_zero();
            a.dot(b) < 0.999_999_5
        })
        .count()
}
