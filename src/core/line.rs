//! Line checks over the grid (Pinter's `Walkable`): can a unit of a given radius move in a
//! straight line from one point to another without touching a blocked cell?
//!
//! Points are in grid space: on square grids cell `(x, y)` covers `[x, x + 1) x [y, y + 1)` and
//! its center is `(x + 0.5, y + 0.5)`; hexagonal grids ([`Topology::Hex`](super::Topology::Hex))
//! are checked by their own geometry (`hex.rs`) behind the same functions.

use bevy::math::{IVec2, Vec2};

use super::cell::{Cell, cell_at, point_segment_distance_sq};
use super::grid::NavGrid;

/// Visits the cells the segment `a`-`b` passes through, in order (Amanatides-Woo traversal; at
/// an exact corner crossing both side cells are visited too). Stops early and returns `false`
/// when `visit` does. On hexagonal grids, a cell the segment only touches at a corner may be
/// visited too.
pub fn traverse(grid: &NavGrid, a: Vec2, b: Vec2, mut visit: impl FnMut(Cell) -> bool) -> bool {
    if grid.is_hex() {
        return super::hex::traverse(a, b, visit);
    }
    walk_cells(a, b, &mut visit, &mut |_, _| true)
}

/// The cells a point walking the polyline `points` passes through, in order, without repeats
/// of the same cell in a row. Where a segment crosses a lattice point (a diagonal step between
/// cell centers) the walk goes straight to the diagonal cell: the side cells it only touches at
/// the corner are left out.
pub fn polyline_cells(grid: &NavGrid, points: &[Vec2]) -> Vec<Cell> {
    if grid.is_hex() {
        return super::hex::polyline_cells(points);
    }
    let mut out: Vec<Cell> = Vec::new();
    for w in points.windows(2) {
        let (a, b) = (w[0], w[1]);
        let len = a.distance(b);
        let ends = [cell_at(a), cell_at(b)];
        walk_cells(
            a,
            b,
            &mut |c| {
                // Cells the segment only touches at a corner (or within rounding of one) are not
                // walked through.
                let inside = clip(a, b, c, 0.0).map_or(0.0, |(t0, t1)| (t1 - t0) * len);
                if (inside > 1e-3 || ends.contains(&c)) && out.last() != Some(&c) {
                    out.push(c);
                }
                true
            },
            &mut |_, _| true,
        );
    }
    if out.is_empty()
        && let Some(&p) = points.first()
    {
        out.push(cell_at(p));
    }
    out
}

/// The traversal behind [`traverse`]: `corner(side_a, side_b)` is asked first when the segment
/// crosses a lattice point exactly (it passes between the two side cells), then both side cells
/// are visited.
fn walk_cells(
    a: Vec2,
    b: Vec2,
    visit: &mut impl FnMut(Cell) -> bool,
    corner: &mut impl FnMut(Cell, Cell) -> bool,
) -> bool {
    let mut cell = cell_at(a);
    let end = cell_at(b);
    let d = b - a;
    let step = IVec2::new(d.x.signum() as i32, d.y.signum() as i32);
    let inv = Vec2::new(
        if d.x != 0.0 {
            1.0 / d.x.abs()
        } else {
            f32::INFINITY
        },
        if d.y != 0.0 {
            1.0 / d.y.abs()
        } else {
            f32::INFINITY
        },
    );
    let frac = a - a.floor();
    let mut t_max = Vec2::new(
        if d.x > 0.0 {
            (1.0 - frac.x) * inv.x
        } else {
            frac.x * inv.x
        },
        if d.y > 0.0 {
            (1.0 - frac.y) * inv.y
        } else {
            frac.y * inv.y
        },
    );
    let limit = (end - cell).abs().element_sum() + 4;
    for _ in 0..=limit {
        if !visit(cell) {
            return false;
        }
        if cell == end || (t_max.x > 1.0 && t_max.y > 1.0) {
            return true;
        }
        if t_max.x < t_max.y {
            cell.x += step.x;
            t_max.x += inv.x;
        } else if t_max.y < t_max.x {
            cell.y += step.y;
            t_max.y += inv.y;
        } else {
            let (sa, sb) = (cell + IVec2::new(step.x, 0), cell + IVec2::new(0, step.y));
            if !corner(sa, sb) || !visit(sa) || !visit(sb) {
                return false;
            }
            cell += step;
            t_max += inv;
        }
    }
    true
}

/// Liang-Barsky clipping of the segment `a`-`b` against the unit square of `cell`: the parameter
/// range `(t0, t1)` inside it, or `None` if a parallel segment lies outside (a parallel segment
/// closer than `edge` to an edge's line counts as outside too).
fn clip(a: Vec2, b: Vec2, cell: Cell, edge: f32) -> Option<(f32, f32)> {
    let lo = cell.as_vec2();
    let hi = lo + Vec2::ONE;
    let d = b - a;
    let (mut t0, mut t1) = (0.0f32, 1.0f32);
    for (p, q) in [
        (-d.x, a.x - lo.x),
        (d.x, hi.x - a.x),
        (-d.y, a.y - lo.y),
        (d.y, hi.y - a.y),
    ] {
        if p == 0.0 {
            if q < edge {
                return None;
            }
        } else {
            let r = q / p;
            if p < 0.0 {
                t0 = t0.max(r);
            } else {
                t1 = t1.min(r);
            }
        }
    }
    Some((t0, t1))
}

/// Squared distance between the segment `a`-`b` and the unit square of `cell` (0 if they meet,
/// even at a single boundary point).
fn segment_cell_distance_sq(a: Vec2, b: Vec2, cell: Cell) -> f32 {
    if clip(a, b, cell, 0.0).is_some_and(|(t0, t1)| t0 <= t1) {
        return 0.0;
    }
    let lo = cell.as_vec2();
    segment_box_gap_sq(a, b, lo, lo + Vec2::ONE)
}

/// Whether the segment `a`-`b` passes through the open interior of `cell` (touching its boundary
/// at a point or running along an edge does not count).
fn crosses_interior(a: Vec2, b: Vec2, cell: Cell) -> bool {
    let lo = cell.as_vec2();
    let d = b - a;
    clip(a, b, cell, 1e-6).is_some_and(|(t0, t1)| (t1 - t0) * d.length().max(1e-6) > 1e-4)
        || (d == Vec2::ZERO && a.cmpgt(lo).all() && a.cmplt(lo + Vec2::ONE).all())
}

fn segment_box_gap_sq(a: Vec2, b: Vec2, lo: Vec2, hi: Vec2) -> f32 {
    let point_box = |p: Vec2| (p.clamp(lo, hi) - p).length_squared();
    let point_seg = |p: Vec2| point_segment_distance_sq(p, a, b);
    point_box(a)
        .min(point_box(b))
        .min(point_seg(lo))
        .min(point_seg(hi))
        .min(point_seg(Vec2::new(lo.x, hi.y)))
        .min(point_seg(Vec2::new(hi.x, lo.y)))
}

/// Whether a round unit of `radius` tiles can move straight from `a` to `b` with its body never
/// overlapping a blocked cell or leaving the grid.
///
/// This is Pinter's `Walkable`, made exact: where his Listing 1 samples the segment every fifth of
/// a tile and tests four diamond points at the unit's radius ([`walkable_sampled`]), this tests the
/// whole swept body, so a path that passes never clips a wall corner between samples (touching a
/// wall, at distance exactly `radius`, is allowed; squeezing between two diagonally touching
/// blocked cells is not).
pub fn walkable(grid: &NavGrid, a: Vec2, b: Vec2, radius: f32) -> bool {
    walkable_counting(grid, a, b, radius, &mut 0)
}

/// [`walkable`], adding to `looked` the cells it looked at: each cell the segment crosses
/// before the answer is known, one look where the cell and all eight round it are walkable
/// (open ground, for a body reaching at most one cell), else with every cell round it within
/// the body's reach. A measure of the check's work that depends on nothing but the grid and the
/// segment (lockstep budgets count it).
pub(crate) fn walkable_counting(
    grid: &NavGrid,
    a: Vec2,
    b: Vec2,
    radius: f32,
    looked: &mut u64,
) -> bool {
    walkable_within(grid, a, b, radius, u8::MAX, looked)
}

/// [`walkable_counting`] that also fails where the segment crosses a cell of terrain dearer
/// than `max_terrain` (off the grid counts as cheap; `u8::MAX` checks no terrain): one
/// traversal for both checks on square grids, each cell counted once more in `looked` for its
/// terrain.
pub(crate) fn walkable_within(
    grid: &NavGrid,
    a: Vec2,
    b: Vec2,
    radius: f32,
    max_terrain: u8,
    looked: &mut u64,
) -> bool {
    if !a.is_finite() || !b.is_finite() {
        return false;
    }
    if grid.is_hex() && max_terrain < u8::MAX {
        // Hexagons: the terrain first, along the segment as given, then the body.
        let terrain_ok = traverse(grid, a, b, |c| {
            *looked += 1;
            cheap(grid, c, max_terrain)
        });
        if !terrain_ok {
            return false;
        }
    }
    // Same answer both ways: float rounding in the traversal depends on the direction.
    let (a, b) = if (a.x, a.y) <= (b.x, b.y) {
        (a, b)
    } else {
        (b, a)
    };
    if grid.is_hex() {
        return super::hex::walkable(|c| grid.is_walkable(c), a, b, radius, looked);
    }
    body_clear::<true>(grid, (a, b), radius, max_terrain, looked)
}

/// The square-grid part of [`walkable_within`]: the cells the segment `a`-`b` (ordered)
/// crosses, each with the cells round it a body of `radius` may overlap, and their terrain up
/// to `max_terrain` (`u8::MAX`: not looked at). `REMEMBER`: skip the cells round a cell that
/// were round the one before too (the same answer; off only to test that).
fn body_clear<const REMEMBER: bool>(
    grid: &NavGrid,
    (a, b): (Vec2, Vec2),
    radius: f32,
    max_terrain: u8,
    looked: &mut u64,
) -> bool {
    let limited = max_terrain < u8::MAX;
    let r = radius.max(0.0);
    let reach = r.ceil() as i32;
    let r2 = r * r;
    let per_cell = ((2 * reach + 1) * (2 * reach + 1)) as u64;
    // The cell the traversal came from: the cells round it passed already (whether a blocked
    // cell is too near depends on that cell and the segment only), so the cells round the next
    // one that were round it too need no second look: a step along the traversal brings a new
    // row or column of them, not a whole block (the work counted is the whole block's all the
    // same, so the count does not depend on this shortcut).
    let mut previous: Option<Cell> = None;
    walk_cells(
        a,
        b,
        &mut |c| {
            if limited {
                *looked += 1;
                if !cheap(grid, c, max_terrain) {
                    return false;
                }
            }
            // Open ground (the cell and all round it walkable) needs no closer look: one look
            // at the block, against the whole block's cells near walls.
            let open = reach <= 1 && grid.block_walkable(c);
            *looked += if open { 1 } else { per_cell };
            if !open {
                for dy in -reach..=reach {
                    for dx in -reach..=reach {
                        let n = c + IVec2::new(dx, dy);
                        if REMEMBER
                            && previous.is_some_and(|p| (n - p).abs().max_element() <= reach)
                        {
                            continue;
                        }
                        // Touching a blocked cell (distance exactly r) is not overlapping it.
                        if !grid.is_walkable(n)
                            && (segment_cell_distance_sq(a, b, n) < r2 || crosses_interior(a, b, n))
                        {
                            return false;
                        }
                    }
                }
            }
            previous = Some(c);
            // A point body may touch walls, but not slip through the corner point between two
            // diagonally touching blocked cells (float rounding can hide that crossing from the
            // traversal's corner test). On open ground no corner of the cell has any.
            r2 > 1e-6 || open || !squeezes_through_corner(grid, a, b, c)
        },
        // Never squeeze between two diagonally touching blocked cells.
        &mut |sa, sb| grid.is_walkable(sa) || grid.is_walkable(sb),
    )
}

/// Whether `cell`'s terrain is at most `max_terrain` (off the grid counts as cheap).
fn cheap(grid: &NavGrid, cell: Cell, max_terrain: u8) -> bool {
    grid.terrain(cell).unwrap_or(0) <= max_terrain
}

/// Whether the segment `a`-`b` passes (within rounding) through a corner point of `cell` where
/// two diagonally touching cells are both blocked.
fn squeezes_through_corner(grid: &NavGrid, a: Vec2, b: Vec2, cell: Cell) -> bool {
    const EPS2: f32 = 1e-6;
    [(0, 0), (1, 0), (0, 1), (1, 1)]
        .into_iter()
        .any(|(dx, dy)| {
            let q = cell + IVec2::new(dx, dy);
            let blocked = |x: i32, y: i32| !grid.is_walkable(q + IVec2::new(x, y));
            (blocked(-1, -1) && blocked(0, 0) || blocked(-1, 0) && blocked(0, -1))
                && point_segment_distance_sq(q.as_vec2(), a, b) < EPS2
        })
}

/// Pinter's Listing 1 `Walkable`, literally: samples the segment every fifth of a tile and at each
/// sample tests the four diamond points at `radius` against blocked cells.
pub fn walkable_sampled(grid: &NavGrid, a: Vec2, b: Vec2, radius: f32) -> bool {
    let len = a.distance(b);
    let samples = (len * 5.0).ceil().max(1.0) as u32;
    (0..=samples).all(|k| {
        let p = a.lerp(b, k as f32 / samples as f32);
        [
            Vec2::new(radius, 0.0),
            Vec2::new(-radius, 0.0),
            Vec2::new(0.0, radius),
            Vec2::new(0.0, -radius),
        ]
        .iter()
        .all(|&o| grid.is_walkable(grid.cell_at(p + o)))
    })
}

/// Whether a round body of `radius` at `p` overlaps a blocked cell or lies outside the grid.
pub fn overlaps_blocked(grid: &NavGrid, p: Vec2, radius: f32) -> bool {
    !walkable(grid, p, p, radius)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_counts_the_cells_it_looked_at_up_to_its_answer() {
        let mut grid = NavGrid::new(20, 5).unwrap();
        let (a, b) = (Vec2::new(0.5, 2.5), Vec2::new(19.5, 2.5));
        let mut point = 0;
        assert!(walkable_counting(&grid, a, b, 0.0, &mut point));
        assert_eq!(point, 20, "a point body looks at each cell it crosses");
        let mut body = 0;
        assert!(walkable_counting(&grid, a, b, 0.4, &mut body));
        // The first and last cells touch the grid's edge: not open ground.
        assert_eq!(
            body,
            18 + 2 * 9,
            "on open ground a body looks at each cell's block once, else at its nine cells"
        );
        grid.set_walkable(Cell::new(10, 3), false).unwrap();
        let mut near_wall = 0;
        assert!(walkable_counting(&grid, a, b, 0.4, &mut near_wall));
        assert_eq!(near_wall, 15 + 5 * 9, "three more cells next to a wall");
        grid.set_walkable(Cell::new(10, 3), true).unwrap();
        grid.set_walkable(Cell::new(5, 2), false).unwrap();
        let mut stopped = 0;
        assert!(!walkable_counting(&grid, a, b, 0.0, &mut stopped));
        assert_eq!(stopped, 6, "a failed check stops at the wall");
    }

    /// Skipping the cells round a cell that were round the one before gives the same answers
    /// as looking at every cell round every cell, and counts the same work.
    #[test]
    fn remembering_the_cells_looked_at_changes_no_answer() {
        let mut grid = NavGrid::new(24, 24).unwrap();
        let mut next = crate::core::test_rng::below(0x2545_f491_u32);
        for _ in 0..45 {
            let c = Cell::new(next(24) as i32, next(24) as i32);
            grid.set_walkable(c, false).unwrap();
        }
        for _ in 0..30 {
            let c = Cell::new(next(24) as i32, next(24) as i32);
            grid.set_terrain(c, 1 + next(4) as u8).unwrap();
        }
        let mut answers = [0u32; 2];
        for k in 0..20_000 {
            let a = Vec2::new(next(2400) as f32 / 100.0, next(2400) as f32 / 100.0);
            let reach = [100, 400, 1200][k % 3];
            let mut offset = || (next(2 * reach) as f32 - reach as f32) / 100.0;
            let b = a + Vec2::new(offset(), offset());
            let (a, b) = if (a.x, a.y) <= (b.x, b.y) {
                (a, b)
            } else {
                (b, a)
            };
            let radius = [0.0, 0.2, 0.45, 0.5, 0.9, 1.3, 2.0][k % 7];
            let max_terrain = [u8::MAX, 1, 3][k % 3];
            let (mut fast, mut full) = (0, 0);
            let remembered = body_clear::<true>(&grid, (a, b), radius, max_terrain, &mut fast);
            let looked = body_clear::<false>(&grid, (a, b), radius, max_terrain, &mut full);
            assert_eq!(
                remembered, looked,
                "{a} {b} r {radius} terrain {max_terrain}"
            );
            assert_eq!(fast, full);
            answers[usize::from(looked)] += 1;
        }
        // Both answers come up often.
        assert!(answers.iter().all(|&n| n > 3_000), "{answers:?}");
    }
}
