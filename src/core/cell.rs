//! Cells, the floor of the core: the cell coordinate, the terrain constants, and the geometry
//! of square cells and segments that needs no grid (hexagons' is in `hex`, one floor up). Nothing
//! here knows a grid, and nothing in the core feeds back into it.

use bevy::math::{IVec2, Vec2};

/// A cell coordinate. `(0, 0)` is the first cell; `x` grows along a row, `y` from row to row.
/// Signed so that positions left of or below the grid are representable (and rejected with an
/// error rather than wrapping around).
pub type Cell = IVec2;

/// The cells within `rings` rings of `at` (Chebyshev distance at most `rings`: a square block
/// of `2 rings + 1` cells a side, `at` alone for 0), row by row; cells outside a grid included.
/// What a body standing on `at` covers when its class's footprint is `rings`.
pub(crate) fn cells_around(at: Cell, rings: u8) -> impl Iterator<Item = Cell> {
    let r = rings as i32;
    (-r..=r).flat_map(move |dy| (-r..=r).map(move |dx| at + Cell::new(dx, dy)))
}

/// Terrain cost of a blocked cell.
pub const BLOCKED: u8 = 0;

/// Terrain cost of ordinary ground: a step onto it costs the plain step cost.
pub const NORMAL: u8 = 1;

/// The center of `cell` in grid space on a square grid (`NavGrid::cell_center` for any grid).
#[inline]
pub fn cell_center(cell: Cell) -> Vec2 {
    cell.as_vec2() + Vec2::splat(0.5)
}

/// The cell containing the grid-space point `p` on a square grid (`NavGrid::cell_at` for any
/// grid).
#[inline]
pub fn cell_at(p: Vec2) -> Cell {
    IVec2::new(floor_i32(p.x), floor_i32(p.y))
}

/// `x.floor() as i32`, without the call into the math library that `floor` is on targets
/// without SSE4.1 (the default x86-64 one): the same value for every input, NaN and infinities
/// included (saturating as `as` does).
#[inline(always)]
fn floor_i32(x: f32) -> i32 {
    let i = x as i32;
    i.saturating_sub(i32::from(i as f32 > x))
}

/// Squared distance from the point `p` to the segment `a`-`b`.
pub(crate) fn point_segment_distance_sq(p: Vec2, a: Vec2, b: Vec2) -> f32 {
    let d = b - a;
    let len2 = d.length_squared();
    let t = if len2 > 0.0 {
        ((p - a).dot(d) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    (a + d * t - p).length_squared()
}

/// Length in tiles of a cell path of a square grid made of single steps (straight 1, diagonal
/// sqrt 2); `NavGrid::cells_length` for any grid.
pub fn cells_length(cells: &[Cell]) -> f64 {
    let diagonal = cells
        .windows(2)
        .filter(|w| w[0].x != w[1].x && w[0].y != w[1].y)
        .count();
    let straight = cells.len().saturating_sub(1) - diagonal;
    straight as f64 + diagonal as f64 * std::f64::consts::SQRT_2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_floor_is_floor() {
        let mut values = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.0,
            -1.0,
            1e-7,
            -1e-7,
            2.9999998,
            -2.9999998,
            16_777_216.0,
            -16_777_216.0,
            3e9,
            -3e9,
            f32::MAX,
            f32::MIN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
        ];
        values.extend((-4000..4000).map(|k| k as f32 * 0.37));
        for x in values {
            assert_eq!(floor_i32(x), x.floor() as i32, "{x}");
        }
    }
}
