//! Vehicles across links: a vehicle's path that leads across a [`Link`](crate::core::Link) is
//! driven in legs, each planned as legal turns on its own: to the first crossing's entry (facing
//! the exit, for a walked link), then from its exit to the next, and the last to the goal. At
//! the entry the vehicle crosses as any unit does: it waits its turn at a link with a capacity,
//! sends [`EnteredLink`], spends the link's cost in tiles at its speed (along the line between
//! the ends, for a walked link), and comes out at the exit ([`LeftLink`]): from a walked link
//! facing the way it went in, from any other (a teleporter, a lift) facing the way its path goes
//! on, as a unit put down there would (out of a slot too tight to turn in, it drives straight
//! on). A new path given while it is inside the link is driven on from the exit if it leads from
//! there, else searched again from there.

use bevy::prelude::*;

use crate::core::{Cell, DrivePlan, LinkId, NavGrid, fmath, heading_vector, nearest_heading};

use super::super::claims::Claims;
use super::super::map::NavMap;
use super::super::outcomes::NavPath;
use super::super::request::{PathOrigin, SubmitInternal};
use super::cross::{begin_crossing, end_crossing};
use super::output::DesiredVelocity;
use super::state::Crossing;
use super::vehicle::{DriveProgress, DriveStatus};

/// The crossing a vehicle's leg ends at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct LegEnd {
    /// Where the entry is in the path's cells.
    pub(super) entry_index: usize,
    pub(super) entry: Cell,
    pub(super) exit: Cell,
    pub(super) link: LinkId,
    /// The crossing's cost (the grid's fixed point).
    pub(super) cost: u64,
}

/// The first crossing of `cells` (a path's) at or after index `from` on `grid`: two consecutive
/// cells joined by an open link and not by a step.
pub(super) fn leg_end(grid: &NavGrid, cells: &[Cell], from: usize) -> Option<LegEnd> {
    if !grid.has_links() {
        return None;
    }
    let from = from.min(cells.len());
    cells[from..].windows(2).enumerate().find_map(|(k, w)| {
        let (entry, exit) = (w[0], w[1]);
        if grid.is_move(entry, exit) {
            return None;
        }
        let (link, cost) = grid.crossing(entry, exit)?;
        Some(LegEnd {
            entry_index: from + k,
            entry,
            exit,
            link,
            cost,
        })
    })
}

/// What a vehicle's search for its current leg of `path` (from cell index `from`) aims at: the
/// crossing's entry ending the leg, facing its exit if the link is walked (the vehicle drives
/// across it straight), with the leg's cells; `None` for the last leg (to the path's goal).
pub(super) fn leg_goal<'a>(
    grid: &NavGrid,
    path: &'a NavPath,
    from: usize,
) -> Option<(Cell, Option<u8>, &'a [Cell])> {
    let end = leg_end(grid, &path.cells, from)?;
    let walked = grid.link(end.link).is_some_and(|l| l.walked);
    let facing = walked.then(|| nearest_heading((end.exit - end.entry).as_vec2()));
    let from = from.min(end.entry_index);
    Some((end.entry, facing, &path.cells[from..=end.entry_index]))
}

/// A vehicle of `entity` on `map` at the end of a leg, on `here`: if the leg ends at a
/// crossing's entry there, it enters the link (or waits its turn at a full one); whether it is
/// at a crossing (it does not stop there).
pub(super) fn enter_at(
    (entity, path, grid): (Entity, &NavPath, &NavGrid),
    (here, speed): (Cell, f32),
    progress: &mut DriveProgress,
    claims: &mut Claims,
    commands: &mut Commands,
) -> bool {
    let Some(end) = leg_end(grid, &path.cells, progress.leg_from).filter(|e| e.entry == here)
    else {
        return false;
    };
    // A full link: it waits at the entry.
    progress.crossing = begin_crossing(
        (entity, path.map, grid),
        (end.entry, (end.entry_index + 1, end.exit)),
        (end.link, end.cost),
        speed,
        (claims, commands),
    );
    true
}

/// A vehicle's frame inside a link: it stands at the entry (or drives along a walked link's
/// line) until the link's time is spent, then comes out at the exit and plans its next leg;
/// whether it plans now.
pub(super) fn in_link(
    (entity, path, map): (Entity, &NavPath, &NavMap),
    progress: &mut DriveProgress,
    (transform, desired): (&mut Transform, Option<Mut<DesiredVelocity>>),
    (claims, commands): (&mut Claims, &mut Commands),
    dt: f32,
) -> bool {
    let Some(crossing) = progress.crossing.as_mut() else {
        return false;
    };
    crossing.left -= dt;
    let crossing = *crossing;
    let grid = map.grid_of(path.class);
    let (a, b) = (
        grid.cell_center(crossing.from),
        grid.cell_center(crossing.to),
    );
    let done = crossing.left <= 0.0;
    let at = if done {
        b
    } else if crossing.walked && crossing.seconds > 0.0 {
        a.lerp(b, 1.0 - crossing.left / crossing.seconds)
    } else {
        a
    };
    let mut desired = desired;
    place(map, (transform, desired.as_deref_mut()), at, dt);
    if !done {
        return false;
    }
    progress.crossing = None;
    end_crossing(entity, &crossing, (claims, &mut *commands));
    let plans = come_out(entity, path, progress, crossing, commands);
    // Put down facing the way its path goes on (see `come_out`).
    if let Some(&(_, heading)) = progress.plan.as_ref().and_then(|p| p.states.first()) {
        let facing = map.grid_to_world_dir(heading_vector(heading));
        match desired {
            Some(mut d) => d.facing = facing.normalize_or_zero(),
            None => transform.rotation = fmath::rotation_toward(facing),
        }
    }
    plans
}

/// How many of a path's cells past a link's exit say which way the path goes on from it.
const ONWARD_CELLS: usize = 3;

/// The heading from the cell at `exit` of `cells` to the one [`ONWARD_CELLS`] on (or the last),
/// if the path goes on.
fn onward_heading(cells: &[Cell], exit: usize) -> Option<u8> {
    let from = *cells.get(exit)?;
    let to = *cells.get((exit + ONWARD_CELLS).min(cells.len().saturating_sub(1)))?;
    (to != from).then(|| nearest_heading((to - from).as_vec2()))
}

/// A plan of no move: the vehicle stands at `cell` facing `heading` (the state its next plan
/// starts from).
fn standing(cell: Cell, heading: u8) -> DrivePlan {
    DrivePlan {
        segments: Vec::new(),
        states: vec![(cell, heading)],
        distances: vec![0.0],
        cost: 0,
        expansions: 0,
    }
}

/// The vehicle stands on `crossing`'s exit: its next leg starts there, on its path (a new one
/// too, if it leads from the exit; else the same order is searched again from there), facing
/// the way it went in if the link is walked, else the way the path goes on. Whether it plans
/// now.
fn come_out(
    entity: Entity,
    path: &NavPath,
    progress: &mut DriveProgress,
    crossing: Crossing,
    commands: &mut Commands,
) -> bool {
    progress.set_plan(None);
    progress.along = 0.0;
    progress.tries = 0;
    progress.replan = false;
    let same_path = progress.ticket == Some(path.ticket);
    let from = if same_path {
        crossing.exit_waypoint.min(path.cells.len())
    } else {
        0
    };
    progress.ticket = Some(path.ticket);
    match path.cells[from..].iter().position(|&c| c == crossing.to) {
        Some(i) => {
            progress.leg_from = from + i;
            progress.status = DriveStatus::Planning;
            if !crossing.walked
                && let Some(heading) = onward_heading(&path.cells, progress.leg_from)
            {
                progress.set_plan(Some(standing(crossing.to, heading)));
            }
            true
        }
        None => {
            commands.queue(SubmitInternal {
                entity,
                request: path.request.clone(),
                origin: PathOrigin::Blocked,
            });
            progress.leg_from = 0;
            progress.status = DriveStatus::Idle;
            false
        }
    }
}

/// Puts a vehicle at `at` (grid space) this frame, facing as it did: its `Transform`, or the
/// velocity that takes its body there.
fn place(
    map: &NavMap,
    (transform, desired): (&mut Transform, Option<&mut DesiredVelocity>),
    at: Vec2,
    dt: f32,
) {
    match desired {
        Some(d) => {
            let from = map.world_to_grid(transform.translation.truncate());
            d.velocity = if dt > 0.0 {
                (map.grid_to_world(at) - map.grid_to_world(from)) / dt
            } else {
                Vec2::ZERO
            };
        }
        None => {
            let z = transform.translation.z;
            transform.translation = map.grid_to_world(at).extend(z);
        }
    }
}
