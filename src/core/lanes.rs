//! Lanes: a group that walks one shared path side by side instead of in single file.
//!
//! A shared search gives every member the path of one tree, and paths of a tree merge: an army
//! ordered across a field or down a road follows one corridor, a column many times longer than
//! the army is wide. [`Lanes`] takes the group's path (the *reference*: the path of the member
//! nearest the group's centre) and measures, at every cell of it, the room on either side (how
//! far sideways its cells stay walkable, up to the group's own half-width plus a tile). Each
//! member walks the reference shifted sideways by its [`Lane`]: by its own lateral
//! offset where the room allows (the group keeps its width in the open), squeezed evenly across
//! the room there is where it does not (a three-tile road carries three lanes, each a third of
//! the group, members keeping their left-to-right order), and the room narrows and widens at
//! most half a tile per cell of the path, so lanes merge ahead of a narrowing and spread after
//! it.
//!
//! Everything here is `+ - * /` and `sqrt` on `f32`: the same bits on every platform (lockstep).

use bevy::math::Vec2;

use super::cell::Cell;
use super::grid::NavGrid;
use super::line::polyline_cells;

/// Where one member of a group walks across the room the path has.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lane {
    /// Its offset to the left of the path (negative: right) where there is room, in tiles: its
    /// place in the group's width (its slot's offset from the target, across the group's way).
    pub lateral: f32,
    /// Its place among the group from right (-1) to left (+1), evenly spread by rank: where it
    /// walks where the room is narrower than the group.
    pub rank: f32,
}

impl Lane {
    /// The lanes of members whose lateral offsets are `laterals` (their ranks from the order of
    /// the offsets; members with equal offsets share a lane).
    pub fn spread(laterals: &[f32]) -> Vec<Lane> {
        let n = laterals.len();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| laterals[a].total_cmp(&laterals[b]).then(a.cmp(&b)));
        let mut lanes = vec![
            Lane {
                lateral: 0.0,
                rank: 0.0
            };
            n
        ];
        // Members with equal offsets share a lane: the middle of their ranks.
        let mut r = 0;
        while r < n {
            let same = order[r..]
                .iter()
                .take_while(|&&k| laterals[k] == laterals[order[r]])
                .count();
            let middle = r as f32 + same as f32 / 2.0;
            for &k in &order[r..r + same] {
                lanes[k] = Lane {
                    lateral: laterals[k],
                    rank: 2.0 * middle / n as f32 - 1.0,
                };
            }
            r += same;
        }
        lanes
    }
}

/// Step with which the room beside the path is measured, in tiles (a cell: from a cell centre
/// along the grid, each probe lands on a cell centre, the same on either side).
const PROBE: f32 = 1.0;
/// How much the room may change from one cell of the path to the next, in tiles.
const SLOPE: f32 = 0.5;
/// Cells of the path either side of a cell whose points give its direction.
const SPAN: usize = 2;

/// How lanes run across the room beside one cell of the reference path, worked out once:
/// `centre + clamp(own * lateral + by_rank * rank, -half, half)` is a lane's offset there.
#[derive(Clone, Copy, Debug)]
struct Across {
    centre: f32,
    half: f32,
    own: f32,
    by_rank: f32,
}

impl Across {
    /// With `left` and `right` tiles of room, for a group `spread` tiles either side: where the
    /// room holds the group, each lane at its own offset; where it is under half the group's
    /// width, by rank, spread evenly over the cells there are (half a tile more each side, so
    /// that each row of cells gets its share once points are rounded to cells); between the
    /// two, a blend.
    fn new(left: f32, right: f32, spread: f32) -> Self {
        let (centre, half) = ((left - right) / 2.0, (left + right) / 2.0);
        let own = if spread > 0.0 {
            (2.0 * half / spread - 1.0).clamp(0.0, 1.0)
        } else {
            1.0
        };
        Across {
            centre,
            half,
            own,
            by_rank: (1.0 - own) * (half + 0.5),
        }
    }
}

/// The reference path of a group and the room beside it (see the module docs).
#[derive(Clone, Debug)]
pub struct Lanes {
    points: Vec<Vec2>,
    /// Unit normals, to the left of the path's direction.
    normals: Vec<Vec2>,
    /// Per cell, where lanes run across the room there (see [`Across`]).
    across: Vec<Across>,
    /// The group's half-width: the largest lateral offset of its members.
    spread: f32,
}

impl Lanes {
    /// The lanes along `reference` (a path's cells, in walking order) for a group whose members'
    /// lateral offsets reach `spread` tiles either side.
    pub fn new(grid: &NavGrid, reference: &[Cell], spread: f32) -> Lanes {
        let points: Vec<Vec2> = reference.iter().map(|&c| grid.cell_center(c)).collect();
        let n = points.len();
        let spread = spread.max(0.0);
        let cap = spread + 1.0;
        let mut normals = Vec::with_capacity(n);
        let (mut left, mut right) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for i in 0..n {
            let d = points[(i + SPAN).min(n - 1)] - points[i.saturating_sub(SPAN)];
            let normal = d
                .try_normalize()
                .map_or(Vec2::ZERO, |d| Vec2::new(-d.y, d.x));
            normals.push(normal);
            let room = |side: f32| {
                if normal == Vec2::ZERO {
                    return 0.0;
                }
                let mut t = 0.0;
                while t < cap
                    && grid.is_walkable(grid.cell_at(points[i] + side * (t + PROBE) * normal))
                {
                    t += PROBE;
                }
                t.min(cap)
            };
            left.push(room(1.0));
            right.push(room(-1.0));
        }
        for room in [&mut left, &mut right] {
            for i in 1..n {
                room[i] = room[i].min(room[i - 1] + SLOPE);
            }
            for i in (0..n.saturating_sub(1)).rev() {
                room[i] = room[i].min(room[i + 1] + SLOPE);
            }
        }
        let across = left
            .iter()
            .zip(&right)
            .map(|(&l, &r)| Across::new(l, r, spread))
            .collect();
        Lanes {
            points,
            normals,
            across,
            spread,
        }
    }

    /// The group's half-width: the largest lateral offset of its members, in tiles.
    pub fn spread(&self) -> f32 {
        self.spread
    }

    /// Cells of the reference path.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// Whether the reference path is empty.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The centre of the reference path's cell `i`.
    pub fn point(&self, i: usize) -> Vec2 {
        self.points[i]
    }

    /// The index of the reference cell nearest `p`, and its distance.
    pub fn nearest(&self, p: Vec2) -> Option<(usize, f32)> {
        self.points
            .iter()
            .enumerate()
            .map(|(i, q)| (i, q.distance_squared(p)))
            .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
            .map(|(i, d)| (i, d.sqrt()))
    }

    /// Where `lane` walks beside the reference's cell `i`.
    pub fn lane_point(&self, i: usize, lane: Lane) -> Vec2 {
        let a = self.across[i];
        let across = a.own * lane.lateral + a.by_rank * lane.rank;
        self.points[i] + (a.centre + across.clamp(-a.half, a.half)) * self.normals[i]
    }

    /// The cells a unit walks from its cell `start` onto `lane` beside the reference's cell
    /// `from` and along it to the cell `to`: every step one the move rules allow, every cell
    /// walkable and accepted by `ok` (other units' claims, say). Where the lane's cell will not
    /// do, the cell half-way back to the reference path, then the path's own; `None` where none
    /// of them can be reached so (the unit then follows its own path).
    pub fn walk(
        &self,
        grid: &NavGrid,
        start: Cell,
        lane: Lane,
        (from, to): (usize, usize),
        ok: impl Fn(Cell) -> bool,
    ) -> Option<Vec<Cell>> {
        if from > to || to >= self.len() || !grid.is_walkable(start) {
            return None;
        }
        self.trace(grid, vec![start], lane, (from, to), &ok, &mut Vec::new())
    }

    /// `lane` walked along the whole reference path, once for every member on it (see
    /// [`LaneWalk::join`]); `None` where it cannot be walked (see [`Lanes::walk`]).
    pub fn walk_lane(
        &self,
        grid: &NavGrid,
        lane: Lane,
        ok: impl Fn(Cell) -> bool,
    ) -> Option<LaneWalk> {
        let last = self.len().checked_sub(1)?;
        let on_lane = grid.cell_at(self.lane_point(0, lane));
        let start = if grid.is_walkable(on_lane) && ok(on_lane) {
            on_lane
        } else {
            grid.cell_at(self.points[0])
        };
        let mut marks = Vec::new();
        let cells = self.trace(grid, vec![start], lane, (0, last), &ok, &mut marks)?;
        let mut costs = Vec::with_capacity(cells.len());
        costs.push(0u64);
        for w in cells.windows(2) {
            let step = grid.step_cost(w[0], w[1])?;
            costs.push(costs.last().expect("not empty") + step);
        }
        Some(LaneWalk {
            cells,
            marks,
            costs,
        })
    }

    /// Walks on from `cells` along `lane` beside the reference's cells `from` to `to` (see
    /// [`Lanes::walk`]), noting in `marks` where each reference cell it aims at was reached
    /// (its index, and the position in the cells).
    fn trace(
        &self,
        grid: &NavGrid,
        mut cells: Vec<Cell>,
        lane: Lane,
        (from, to): (usize, usize),
        ok: &impl Fn(Cell) -> bool,
        marks: &mut Vec<(u32, u32)>,
    ) -> Option<Vec<Cell>> {
        // Every other cell of the path: the lane's cells between are the steps between them.
        let every_other = (from..to).step_by(2).chain([to]);
        for i in every_other {
            let (point, on_lane) = (self.points[i], self.lane_point(i, lane));
            let reference = grid.cell_at(point);
            // The lane's cell, half-way back to the path, the path's own; or, through a gap too
            // narrow to step straight onto the path from beside it, back onto the path a cell
            // before, then along it.
            let back = grid.cell_at(self.points[i.saturating_sub(1)]);
            let found = step_to(grid, &mut cells, grid.cell_at(on_lane), &ok)
                || step_to(grid, &mut cells, grid.cell_at((point + on_lane) / 2.0), &ok)
                || step_to(grid, &mut cells, reference, &ok)
                || step_to(grid, &mut cells, back, &ok)
                    && step_to(grid, &mut cells, reference, &ok);
            if !found {
                return None;
            }
            marks.push((i as u32, (cells.len() - 1) as u32));
        }
        Some(cells)
    }
}

/// One lane walked along a group's whole reference path ([`Lanes::walk_lane`]): every member
/// on that lane joins it where it stands instead of walking it again.
#[derive(Clone, Debug)]
pub struct LaneWalk {
    cells: Vec<Cell>,
    /// Where the walk reached the reference cells it aimed at: (reference index, position in
    /// `cells`), in order.
    marks: Vec<(u32, u32)>,
    /// The cost of the walk up to each cell (fixed point, as [`NavGrid::step_cost`]).
    costs: Vec<u64>,
}

impl LaneWalk {
    /// The cells a unit standing on `start` walks onto the lane beside the reference's cell
    /// `from` (or the next one the walk aimed at) and along it to beside the cell `to`, and
    /// their cost; `None` where the step onto the lane is not allowed (see [`Lanes::walk`]).
    pub fn join(
        &self,
        grid: &NavGrid,
        start: Cell,
        (from, to): (usize, usize),
        ok: impl Fn(Cell) -> bool,
    ) -> Option<(Vec<Cell>, u64)> {
        let at = |i: usize| {
            let k = self.marks.partition_point(|m| (m.0 as usize) < i);
            self.marks
                .get(k)
                .or(self.marks.last())
                .map(|m| m.1 as usize)
        };
        let (p, q) = (at(from)?, at(to)?);
        if p > q || !grid.is_walkable(start) {
            return None;
        }
        let mut cells = vec![start];
        if !step_to(grid, &mut cells, self.cells[p], &ok) {
            return None;
        }
        let onto = cells
            .windows(2)
            .map(|w| grid.step_cost(w[0], w[1]))
            .sum::<Option<u64>>()?;
        cells.extend_from_slice(&self.cells[p + 1..=q]);
        Some((cells, onto + self.costs[q] - self.costs[p]))
    }
}

/// Walks `cells` on to `c`: nothing if it is there, a step if `c` is a neighbour it may step
/// to, else the cells a straight line to `c` crosses, if every step of them is allowed. Whether
/// it could.
fn step_to(grid: &NavGrid, cells: &mut Vec<Cell>, c: Cell, ok: &impl Fn(Cell) -> bool) -> bool {
    let last = *cells.last().expect("starts with the start");
    if c == last {
        return true;
    }
    let d = c - last;
    if d.x.abs() <= 1 && d.y.abs() <= 1 {
        let fine = grid.can_step(last, c) && ok(c);
        if fine {
            cells.push(c);
        }
        return fine;
    }
    // Two cells away (a lane rounded to the next cell as the path turns): through the cell
    // between, straight or diagonal, whichever is allowed.
    if d.x.abs() <= 2 && d.y.abs() <= 2 {
        let s = Cell::new(d.x.signum(), d.y.signum());
        let between = [last + s, last + Cell::new(s.x, 0), last + Cell::new(0, s.y)];
        for m in between {
            let (a, b) = (m - last, c - m);
            let near = |v: Cell| v != Cell::ZERO && v.x.abs() <= 1 && v.y.abs() <= 1;
            if near(a) && near(b) && grid.can_step(last, m) && grid.can_step(m, c) && ok(m) && ok(c)
            {
                cells.extend_from_slice(&[m, c]);
                return true;
            }
        }
    }
    let line = polyline_cells(grid, &[grid.cell_center(last), grid.cell_center(c)]);
    let fine = line.first() == Some(&last)
        && line.last() == Some(&c)
        && line
            .windows(2)
            .all(|w| grid.can_step(w[0], w[1]) && ok(w[1]));
    if fine {
        cells.extend_from_slice(&line[1..]);
    }
    fine
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 60 x 21 field cut by walls into a road three tiles wide (rows 9-11) from x 20 to 40.
    fn road() -> NavGrid {
        let mut grid = NavGrid::new(60, 21).unwrap();
        for x in 20..40 {
            for y in (0..21).filter(|y| !(9..=11).contains(y)) {
                grid.set_walkable(Cell::new(x, y), false).unwrap();
            }
        }
        grid
    }

    #[test]
    fn lanes_keep_their_width_in_the_open_and_share_a_road_evenly() {
        let grid = road();
        let reference: Vec<Cell> = (2..58).map(|x| Cell::new(x, 10)).collect();
        // Thirty distinct offsets from -5 to 5, so that ranks spread evenly.
        let laterals: Vec<f32> = (0..30).map(|k| (k as f32 - 14.5) / 2.9).collect();
        let lanes = Lane::spread(&laterals);
        let guide = Lanes::new(&grid, &reference, 5.0);
        let mut rows = [0; 3];
        for &lane in &lanes {
            let cells = guide
                .walk(&grid, reference[0], lane, (0, 55), |_| true)
                .expect("walkable");
            assert!(cells.windows(2).all(|w| grid.can_step(w[0], w[1])));
            // In the open, well before the road: its own offset.
            let open = cells.iter().find(|c| c.x == 8).unwrap();
            assert_eq!(open.y, (10.5 + lane.lateral).floor() as i32, "{lane:?}");
            // On the road: a third of the group in each row.
            let on_road = cells.iter().find(|c| c.x == 30).unwrap();
            rows[(on_road.y - 9) as usize] += 1;
        }
        assert_eq!(rows, [10, 10, 10]);
    }

    #[test]
    fn members_with_equal_offsets_share_a_lane_and_join_its_one_walk() {
        let lanes = Lane::spread(&[1.0, -2.0, 1.0, 3.0]);
        assert_eq!(lanes[0], lanes[2]);
        assert!(lanes[1].rank < lanes[0].rank && lanes[0].rank < lanes[3].rank);
        let grid = road();
        let reference: Vec<Cell> = (2..58).map(|x| Cell::new(x, 10)).collect();
        let guide = Lanes::new(&grid, &reference, 3.0);
        let walk = guide.walk_lane(&grid, lanes[0], |_| true).unwrap();
        // Joined from where a member stands, it is the walk from there.
        let (cells, cost) = walk
            .join(&grid, Cell::new(4, 12), (4, 50), |_| true)
            .unwrap();
        let alone = guide
            .walk(&grid, Cell::new(4, 12), lanes[0], (4, 50), |_| true)
            .unwrap();
        assert_eq!(cells, alone);
        let walked: u64 = cells
            .windows(2)
            .map(|w| grid.step_cost(w[0], w[1]).unwrap())
            .sum();
        assert_eq!(cost, walked);
    }

    #[test]
    fn a_lane_that_cannot_be_walked_is_refused() {
        let grid = road();
        let reference: Vec<Cell> = (2..58).map(|x| Cell::new(x, 10)).collect();
        let guide = Lanes::new(&grid, &reference, 3.0);
        let lane = Lane {
            lateral: 3.0,
            rank: 1.0,
        };
        // From a start behind a wall, the step onto the lane crosses it.
        assert!(
            guide
                .walk(&grid, Cell::new(30, 2), lane, (12, 20), |_| true)
                .is_none()
        );
        assert!(
            guide
                .walk(&grid, Cell::new(2, 13), lane, (0, 55), |_| true)
                .is_some()
        );
        // A lane blocked by a claim goes round it, half-way to the path or on it.
        let claimed = Cell::new(10, 13);
        let cells = guide
            .walk(&grid, Cell::new(2, 13), lane, (0, 55), |c| c != claimed)
            .unwrap();
        assert!(!cells.contains(&claimed) && cells.contains(&Cell::new(11, 13)));
        assert!(cells.windows(2).all(|w| grid.can_step(w[0], w[1])));
    }
}
