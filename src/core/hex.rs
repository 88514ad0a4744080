//! Geometry of hexagonal grids ([`Topology::Hex`](super::Topology::Hex)): axial cell `(q, r)` is
//! the pointy-top hexagon centred at `(q + r / 2, r * sqrt(3) / 2)` in grid space, so neighbouring
//! centres are one unit apart (a unit's speed and radius in tiles mean the same as on squares).
//! Line checks here are exact for the swept round body, like the square ones in `line.rs`.

use bevy::math::{IVec2, Vec2};

use super::cell::{Cell, point_segment_distance_sq};

/// sqrt(3) / 2: the distance between rows of centres.
const ROW: f32 = 0.866_025_4;

/// The distance from a hexagon's center to its corners (its edges are this long too).
const CIRCUMRADIUS: f32 = 0.577_350_26;

/// The six steps to the neighbours of a cell, in axial coordinates.
pub(crate) const STEPS: [Cell; 6] = [
    Cell::new(1, 0),
    Cell::new(-1, 0),
    Cell::new(0, 1),
    Cell::new(0, -1),
    Cell::new(1, -1),
    Cell::new(-1, 1),
];

/// The center of `cell` in grid space.
#[inline]
pub(crate) fn center(cell: Cell) -> Vec2 {
    Vec2::new(cell.x as f32 + 0.5 * cell.y as f32, ROW * cell.y as f32)
}

/// The cell whose hexagon contains `p` (the nearest center; cube rounding).
pub(crate) fn cell_at(p: Vec2) -> Cell {
    let r = p.y / ROW;
    let q = p.x - 0.5 * r;
    let s = -q - r;
    let (mut rq, mut rr, rs) = (q.round(), r.round(), s.round());
    let (dq, dr, ds) = ((rq - q).abs(), (rr - r).abs(), (rs - s).abs());
    if dq > dr && dq > ds {
        rq = -rr - rs;
    } else if dr > ds {
        rr = -rq - rs;
    }
    Cell::new(rq as i32, rr as i32)
}

/// The number of steps between two cells on an open hexagonal grid.
#[inline]
pub(crate) fn distance(a: Cell, b: Cell) -> u32 {
    let d = b - a;
    let (dq, dr) = (d.x.unsigned_abs(), d.y.unsigned_abs());
    dq.max(dr).max((d.x + d.y).unsigned_abs())
}

/// The six corners of `cell`'s hexagon, counter-clockwise from the lower right.
pub(crate) fn corners(cell: Cell) -> [Vec2; 6] {
    let c = center(cell);
    let (h, w) = (CIRCUMRADIUS * 0.5, 0.5);
    [
        c + Vec2::new(w, -h),
        c + Vec2::new(w, h),
        c + Vec2::new(0.0, CIRCUMRADIUS),
        c + Vec2::new(-w, h),
        c + Vec2::new(-w, -h),
        c + Vec2::new(0.0, -CIRCUMRADIUS),
    ]
}

/// Whether `f` holds for every cell `0..=rings` steps from `cell` (asked in a fixed order,
/// stopping at the first that fails). Plain loops: the line checks of movement on hexagons run
/// through here.
#[inline]
fn all_in_disc(cell: Cell, rings: i32, mut f: impl FnMut(Cell) -> bool) -> bool {
    for dq in -rings..=rings {
        for dr in (-rings).max(-dq - rings)..=rings.min(rings - dq) {
            if !f(cell + IVec2::new(dq, dr)) {
                return false;
            }
        }
    }
    true
}

/// The outward normals of a hexagon's six edges, in the order of [`corners`]' edges (edge `k`
/// runs from corner `k` to corner `k + 1`); every edge is half a unit from the center.
const NORMALS: [Vec2; 6] = [
    Vec2::new(1.0, 0.0),
    Vec2::new(0.5, ROW),
    Vec2::new(-0.5, ROW),
    Vec2::new(-1.0, 0.0),
    Vec2::new(-0.5, -ROW),
    Vec2::new(0.5, -ROW),
];

/// Cyrus-Beck clipping of the segment `a`-`b` against `cell`'s hexagon: the parameter range
/// inside it, or `None` if the segment misses it.
fn clip(a: Vec2, b: Vec2, cell: Cell) -> Option<(f32, f32)> {
    let (a, d) = (a - center(cell), b - a);
    let (mut t0, mut t1) = (0.0f32, 1.0f32);
    for n in NORMALS {
        // Inside where (x - center) . n <= 0.5.
        let num = 0.5 - a.dot(n);
        let den = d.dot(n);
        if den == 0.0 {
            if num < 0.0 {
                return None;
            }
        } else if den > 0.0 {
            t1 = t1.min(num / den);
        } else {
            t0 = t0.max(num / den);
        }
        if t0 > t1 {
            return None;
        }
    }
    Some((t0, t1))
}

/// Squared distance between the segment `a`-`b` and `cell`'s hexagon (0 if they meet).
fn segment_distance_sq(a: Vec2, b: Vec2, cell: Cell) -> f32 {
    if clip(a, b, cell).is_some() {
        return 0.0;
    }
    let k = corners(cell);
    (0..6)
        .map(|i| {
            let (p, q) = (k[i], k[(i + 1) % 6]);
            point_segment_distance_sq(p, a, b)
                .min(point_segment_distance_sq(a, p, q))
                .min(point_segment_distance_sq(b, p, q))
        })
        .fold(f32::INFINITY, f32::min)
}

/// The point of `cell`'s hexagon nearest to `p` (`p` itself inside it).
pub(crate) fn nearest_point(cell: Cell, p: Vec2) -> Vec2 {
    if clip(p, p, cell).is_some() {
        return p;
    }
    let k = corners(cell);
    (0..6)
        .map(|i| {
            let (a, b) = (k[i], k[(i + 1) % 6]);
            let d = b - a;
            let t = ((p - a).dot(d) / d.length_squared()).clamp(0.0, 1.0);
            a + d * t
        })
        .min_by(|x, y| x.distance_squared(p).total_cmp(&y.distance_squared(p)))
        .unwrap_or(p)
}

/// The neighbour across each edge of [`NORMALS`]: the six neighbours in order around a cell,
/// each a neighbour of the next.
pub(crate) const ACROSS: [Cell; 6] = [
    Cell::new(1, 0),
    Cell::new(0, 1),
    Cell::new(-1, 1),
    Cell::new(-1, 0),
    Cell::new(0, -1),
    Cell::new(1, -1),
];

/// Visits the cells the segment `a`-`b` passes through, in order, leaving each across the edge
/// the segment crosses first (through a corner exactly, it visits one of the two cells beside
/// the corner too). Stops early and returns `false` when `visit` does.
pub(crate) fn traverse(a: Vec2, b: Vec2, mut visit: impl FnMut(Cell) -> bool) -> bool {
    let (mut cell, end) = (cell_at(a), cell_at(b));
    let d = b - a;
    for _ in 0..distance(cell, end) * 3 + 8 {
        if !visit(cell) {
            return false;
        }
        if cell == end {
            return true;
        }
        let rel = a - center(cell);
        let (mut exit, mut edge) = (f32::INFINITY, 0);
        for (k, n) in NORMALS.iter().enumerate() {
            let den = d.dot(*n);
            if den > 0.0 {
                let t = (0.5 - rel.dot(*n)) / den;
                if t < exit {
                    (exit, edge) = (t, k);
                }
            }
        }
        // Past the segment's end (rounding where `b` lies on an edge): its end cell is next.
        cell = if exit >= 1.0 {
            end
        } else {
            cell + ACROSS[edge]
        };
    }
    // Rounding kept the walk from the end cell: visit the cells under points a twentieth of a
    // unit apart instead.
    let steps = (a.distance(b) / 0.05).ceil().clamp(1.0, 1e7) as u32;
    let mut last = None;
    for k in 0..=steps {
        let c = cell_at(a.lerp(b, k as f32 / steps as f32));
        if last != Some(c) {
            if !visit(c) {
                return false;
            }
            last = Some(c);
        }
    }
    true
}

/// The cells of the polyline `points` in the order a point walking it enters them, without
/// repeats in a row, leaving out cells it only touches.
pub(crate) fn polyline_cells(points: &[Vec2]) -> Vec<Cell> {
    let mut out: Vec<Cell> = Vec::new();
    for w in points.windows(2) {
        let (a, b) = (w[0], w[1]);
        let len = a.distance(b);
        let ends = [cell_at(a), cell_at(b)];
        let mut walked: Vec<(Cell, bool)> = Vec::new();
        traverse(a, b, |c| {
            let inside = clip(a, b, c).map_or(0.0, |(t0, t1)| (t1 - t0) * len);
            walked.push((c, inside > 1e-3 || ends.contains(&c)));
            true
        });
        for (k, &(c, entered)) in walked.iter().enumerate() {
            // A cell only touched at a corner is left out, unless the cells before and after
            // it are not neighbours (the walk went through the corner between them).
            let next = walked[k + 1..].iter().find(|w| w.1).map(|w| w.0);
            let bridge = matches!((out.last(), next), (Some(&p), Some(n)) if distance(p, n) > 1);
            if (entered || bridge) && out.last() != Some(&c) {
                out.push(c);
            }
        }
    }
    if out.is_empty()
        && let Some(&p) = points.first()
    {
        out.push(cell_at(p));
    }
    out
}

/// Whether a round body of `radius` can move straight from `a` to `b` without overlapping a
/// blocked or outside cell. Touching one (at distance exactly `radius`) is allowed, except for a
/// point body: it may not run along the edge between two blocked hexagons. `a` and `b` are
/// finite (`line::walkable` checks them and orders them, so the answer is the same both ways).
/// Each cell the segment crosses, with the disc round it, adds to `looked` (see
/// `line::walkable_counting`). `open` tells a grid's walkable cells.
pub(crate) fn walkable(
    open: impl Fn(Cell) -> bool,
    a: Vec2,
    b: Vec2,
    radius: f32,
    looked: &mut u64,
) -> bool {
    let r = radius.max(0.0);
    let r2 = (r * r).max(1e-10);
    // A cell n steps from every cell the segment passes through is at least (n - 1) / 2 away.
    let rings = 1 + (r / 0.5) as i32;
    let per_cell = (3 * rings * (rings + 1) + 1) as u64;
    traverse(a, b, |c| {
        *looked += per_cell;
        all_in_disc(c, rings, |n| open(n) || segment_distance_sq(a, b, n) >= r2)
    })
}

/// The nearest point of every cell not `open` (a grid's blocked or outside cells) within `reach`
/// of `position`.
pub(crate) fn wall_points(open: impl Fn(Cell) -> bool, position: Vec2, reach: f32) -> Vec<Vec2> {
    let rings = 1 + (reach / ROW).ceil() as i32;
    let mut points = Vec::new();
    all_in_disc(cell_at(position), rings, |c| {
        if !open(c) {
            let p = nearest_point(c, position);
            if p.distance_squared(position) <= reach * reach {
                points.push(p);
            }
        }
        true
    });
    points
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{MoveRules, NavGrid, Topology};

    #[test]
    fn centers_round_trip_and_neighbours_are_one_apart() {
        for q in -5..5 {
            for r in -5..5 {
                let c = Cell::new(q, r);
                assert_eq!(cell_at(center(c)), c);
                for s in STEPS {
                    let d = center(c + s).distance(center(c));
                    assert!((d - 1.0).abs() < 1e-5, "{c} {s} {d}");
                    assert_eq!(distance(c, c + s), 1);
                }
                // Just inside each corner is still this cell.
                for k in corners(c) {
                    assert_eq!(cell_at(center(c).lerp(k, 0.98)), c);
                }
            }
        }
        assert_eq!(distance(Cell::new(0, 0), Cell::new(3, -1)), 3);
        assert_eq!(distance(Cell::new(0, 0), Cell::new(2, 2)), 4);
    }

    #[test]
    fn edge_normals_match_the_corners() {
        let c = Cell::new(2, -3);
        let k = corners(c);
        for (i, n) in NORMALS.iter().enumerate() {
            let (p, q) = (k[i], k[(i + 1) % 6]);
            assert!((p - q).dot(*n).abs() < 1e-5);
            assert!(((p - center(c)).dot(*n) - 0.5).abs() < 1e-5);
        }
    }

    #[test]
    fn traverse_steps_to_neighbours_and_reaches_the_end() {
        let mut k = 0u32;
        for i in 0..400 {
            // Segments in every direction, some through corners and along edges exactly.
            let ang = i as f32 * 0.05;
            let len = 0.3 + (i % 17) as f32 * 0.7;
            let a = Vec2::new((i % 5) as f32 * 0.25, (i % 3) as f32 * ROW / 2.0);
            let b = a + Vec2::new(ang.cos(), ang.sin()) * len;
            let mut seen: Vec<Cell> = Vec::new();
            traverse(a, b, |c| {
                seen.push(c);
                true
            });
            assert_eq!(seen[0], cell_at(a));
            assert_eq!(*seen.last().unwrap(), cell_at(b));
            for w in seen.windows(2) {
                assert_eq!(distance(w[0], w[1]), 1, "{a} {b} {seen:?}");
            }
            // Every cell under a point of the segment is visited.
            for j in 0..=200 {
                let c = cell_at(a.lerp(b, j as f32 / 200.0));
                assert!(seen.contains(&c), "{a} {b}: {c} not in {seen:?}");
                k += 1;
            }
        }
        assert_eq!(k, 400 * 201);
    }

    #[test]
    fn traverse_visits_a_row_in_order() {
        let mut seen = Vec::new();
        traverse(center(Cell::new(0, 2)), center(Cell::new(4, 2)), |c| {
            seen.push(c);
            true
        });
        assert_eq!(seen, (0..=4).map(|q| Cell::new(q, 2)).collect::<Vec<_>>());
    }

    #[test]
    fn walkable_needs_room_for_the_body() {
        let hex = MoveRules {
            topology: Topology::Hex,
            ..Default::default()
        };
        let mut grid = NavGrid::with_rules(8, 8, hex).unwrap();
        let (a, b) = (center(Cell::new(1, 3)), center(Cell::new(6, 3)));
        assert!(walkable(|c| grid.is_walkable(c), a, b, 0.35, &mut 0));
        // A blocked cell in the next row pokes a corner to within 0.289 of the row's centre
        // line: thin bodies pass it, a body of radius 0.35 does not (as it would not pass
        // between two blocked cells, 0.577 apart).
        grid.set_walkable(Cell::new(3, 4), false).unwrap();
        assert!(walkable(|c| grid.is_walkable(c), a, b, 0.28, &mut 0));
        assert!(!walkable(|c| grid.is_walkable(c), a, b, 0.3, &mut 0));
        grid.set_walkable(Cell::new(3, 3), false).unwrap();
        assert!(!walkable(|c| grid.is_walkable(c), a, b, 0.0, &mut 0));
        assert!(!walkable(|c| grid.is_walkable(c), a, a, 5.0, &mut 0));
        // wall points: the nearest point of the blocked cell (3, 3) from (2, 3) is its edge.
        let p = center(Cell::new(2, 3));
        let walls = wall_points(|c| grid.is_walkable(c), p, 0.6);
        assert!(
            walls.iter().any(|w| (w.distance(p) - 0.5).abs() < 1e-4),
            "{walls:?}"
        );
    }
}
