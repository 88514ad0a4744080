//! Lazy smoothing: a found path is delivered with its first leg smoothed (the whole path's
//! waypoints up to the first at or past cell
//! [`TilepathSettings::smooth_before_delivery`](crate::TilepathSettings::smooth_before_delivery),
//! 12 by default) and the rest as cell centers; the rest is smoothed afterwards, inline when
//! the frame has budget left (oldest first) or on a worker, and patched into the unit's
//! [`NavPath`] beyond the waypoint the unit walks to, so the unit never notices. Smoothing a
//! whole long path before delivery made it the bottleneck of group orders (measured: 47 % of a
//! 600-unit order's time in line checks, 0.3 ms a path on a 192 x 192 map).

use bevy::prelude::*;

use crate::core::{Cell, NavGrid, Smoother, polyline_cells};
use crate::plugin::classes::ClassId;
use crate::plugin::map::NavMap;
use crate::plugin::movement::PathProgress;
use crate::plugin::outcomes::NavPath;

use super::PathQueue;

/// The part of a delivered path still to smooth.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Rest {
    /// Index of the path cell where the raw cell centers begin (the last smoothed waypoint is
    /// this cell's center).
    pub(super) from_cell: usize,
    /// Index of that waypoint.
    pub(super) from_waypoint: usize,
    pub(super) radius: f32,
}

/// `points`, the first leg's waypoints a [`Smoother::leading`] gave for `cells` (found looking
/// ahead over the whole path: a first leg smoothed on its own ended at a cell center 12 cells
/// out, an extra bend in every path, and a 1,000-unit rally settled 30 % later), then the
/// remaining cells' centers, and the [`Rest`] still to smooth (`None`: smoothed whole).
pub(super) fn with_raw_rest(
    grid: &NavGrid,
    cells: &[Cell],
    mut points: Vec<Vec2>,
    radius: f32,
) -> (Vec<Vec2>, Option<Rest>) {
    let last = points.last().copied();
    // A leading smoother's waypoints are cell centers of the path, in order.
    let Some(k) = cells
        .iter()
        .rposition(|&c| Some(grid.cell_center(c)) == last)
        .filter(|&k| k + 1 < cells.len())
    else {
        return (points, None);
    };
    let rest = Rest {
        from_cell: k,
        from_waypoint: points.len() - 1,
        radius,
    };
    points.extend(cells[k + 1..].iter().map(|&c| grid.cell_center(c)));
    (points, Some(rest))
}

/// The cells a unit walking `points` (the waypoints of `cells`, grid space) passes through: the
/// smoothed part traversed, the raw rest (one waypoint per cell) taken as its cells.
pub(super) fn corridor(
    grid: &NavGrid,
    cells: &[Cell],
    points: &[Vec2],
    rest: Option<Rest>,
) -> Vec<Cell> {
    match rest {
        Some(r) => {
            let mut out = polyline_cells(grid, &points[..=r.from_waypoint]);
            out.extend_from_slice(&cells[r.from_cell + 1..]);
            out
        }
        None => polyline_cells(grid, points),
    }
}

/// The rest of a delivered path, being smoothed.
pub(super) struct Refining {
    pub(super) entity: Entity,
    pub(super) ticket: u64,
    pub(super) map: Entity,
    /// The class whose grid the path is on.
    pub(super) class: ClassId,
    pub(super) rest: Rest,
    smoother: Smoother,
}

/// A smoothed rest, to patch into the unit's path.
pub(super) struct Refined {
    pub(super) entity: Entity,
    pub(super) ticket: u64,
    pub(super) rest: Rest,
    /// Grid-space points from the center of the rest's first cell to the goal.
    pub(super) points: Vec<Vec2>,
    /// The grid version they were smoothed on.
    pub(super) version: u64,
}

impl Refining {
    /// Smoothing of `path`'s cells from `rest.from_cell` on.
    pub(super) fn new(grid: &NavGrid, entity: Entity, path: &NavPath, rest: Rest) -> Self {
        Refining {
            entity,
            ticket: path.ticket,
            map: path.map,
            class: path.class,
            rest,
            smoother: Smoother::new(grid, &path.cells[rest.from_cell..], rest.radius),
        }
    }

    /// At most `units` units of smoothing work; the patch once done.
    pub(super) fn step(&mut self, grid: &NavGrid, units: u32) -> Option<Refined> {
        let points = self.smoother.step(grid, units)?;
        Some(Refined {
            entity: self.entity,
            ticket: self.ticket,
            rest: self.rest,
            points,
            version: grid.version(),
        })
    }
}

/// What patching a unit's path came to.
pub(super) enum Patch {
    /// Patched (or the path is gone or was replaced: nothing to do).
    Done,
    /// The unit walked past the smoothed rest's start before it came: smooth again from the
    /// waypoint it walks to now.
    Again(Rest),
}

/// Patches `refined` into `path` beyond the waypoint the unit walks to (`walking_to`).
pub(super) fn patch(
    path: &mut NavPath,
    map: &NavMap,
    refined: &Refined,
    walking_to: usize,
) -> Patch {
    let rest = refined.rest;
    if path.ticket != refined.ticket || rest.from_cell >= path.cells.len() {
        return Patch::Done;
    }
    let grid = map.grid_of(path.class);
    if refined.version != grid.version() {
        // Smoothed on a grid edited since: its lines may cross the edit. Smooth again (the raw
        // rest is the path's own cells, which the repath on edit looks after).
        return Patch::Again(rest);
    }
    if walking_to > rest.from_waypoint {
        // The waypoints past `from_waypoint` are the raw cell centers, one per cell.
        let from_cell = rest.from_cell + (walking_to - rest.from_waypoint);
        if from_cell + 1 >= path.cells.len() {
            return Patch::Done;
        }
        return Patch::Again(Rest {
            from_cell,
            from_waypoint: walking_to,
            ..rest
        });
    }
    // The corridor ends with the raw cells, one per cell, the rest's first cell among them.
    let raw = path.cells.len() - rest.from_cell;
    let keep = path.corridor.len().saturating_sub(raw) + 1;
    path.corridor.truncate(keep);
    path.corridor
        .extend(polyline_cells(grid, &refined.points).into_iter().skip(1));
    path.waypoints.truncate(rest.from_waypoint + 1);
    path.waypoints
        .extend(refined.points[1..].iter().map(|&p| map.grid_to_world(p)));
    Patch::Done
}

/// Receive: patches smoothed rests into their units' paths (without marking the path changed:
/// the unit walks on as before, now toward smoothed waypoints).
pub(crate) fn apply_refined(
    mut queue: ResMut<PathQueue>,
    maps: Query<&NavMap>,
    mut paths: Query<(&mut NavPath, Option<&PathProgress>)>,
) {
    let queue = &mut *queue;
    for refined in std::mem::take(&mut queue.refined) {
        let Ok((mut path, progress)) = paths.get_mut(refined.entity) else {
            continue;
        };
        let Ok(map) = maps.get(path.map) else {
            continue;
        };
        let walking_to = progress.map_or(0, |p| p.waypoint);
        let path = path.bypass_change_detection();
        if let Patch::Again(rest) = patch(path, map, &refined, walking_to) {
            queue.refining.push_back(Refining::new(
                map.grid_of(path.class),
                refined.entity,
                path,
                rest,
            ));
        }
    }
}
