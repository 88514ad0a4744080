//! Path smoothing (Pinter, Listing 1): drop every intermediate waypoint the unit can skip by
//! walking straight.

use bevy::math::Vec2;

use super::grid::{Cell, NavGrid};
use super::line::{cell_center, traverse, walkable};

/// Smooths a path of cells into grid-space waypoints (cell centers) for a unit of `radius`.
///
/// Greedy, as in Pinter's Listing 1: from the last kept waypoint, skip the next one whenever the
/// one after it is reachable in a straight line ([`walkable`]) and the shortcut does not cross
/// terrain dearer than the stretch it replaces; otherwise keep it. Segments that cannot be smoothed
/// stay as they are, so the result is never longer than the input and every segment is walkable.
pub fn smooth_path(grid: &NavGrid, cells: &[Cell], radius: f32) -> Vec<Vec2> {
    let mut out = Vec::with_capacity(cells.len().min(16));
    let Some(&first) = cells.first() else {
        return out;
    };
    out.push(cell_center(first));
    if cells.len() == 1 {
        return out;
    }
    let terrain = |c: Cell| grid.terrain(c).unwrap_or(0);
    let mut check = 0usize; // index of the last kept waypoint
    let mut stretch_max = terrain(cells[0]);
    for next in 2..cells.len() {
        stretch_max = stretch_max.max(terrain(cells[next - 1]));
        let a = cell_center(cells[check]);
        let b = cell_center(cells[next]);
        let limit = stretch_max.max(terrain(cells[next]));
        let cheap = traverse(a, b, |c| terrain(c) <= limit);
        if !(cheap && walkable(grid, a, b, radius)) {
            check = next - 1;
            out.push(cell_center(cells[check]));
            stretch_max = terrain(cells[check]);
        }
    }
    out.push(cell_center(*cells.last().expect("non-empty")));
    out
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
