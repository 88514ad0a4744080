//! Crossing links: a unit whose path leads across a [`Link`](crate::core::Link) (two
//! consecutive waypoints that are the link's ends, not neighbours) stops at the link's entry,
//! spends the link's cost in tiles at its own speed there, and comes out at the exit, where it
//! walks on; a walked link ([`Link::walked`](crate::core::Link::walked)) is crossed along the
//! line between its ends in that time instead. [`EnteredLink`] and [`LeftLink`] tell the game, so it can animate the crossing (a
//! jump, a fade, a ride). A link with a capacity holds that many units at once: the next waits
//! at the entry, first come first served (in lockstep order in lockstep mode). A unit given a
//! new order while inside a link comes out at the exit all the same: its new path is searched
//! from there (one that does not lead from it, searched before, is searched again from there).

use bevy::prelude::*;

use crate::core::{Cell, LinkId, NavGrid};

use super::super::claims::Claims;
use super::super::map::NavMap;
use super::super::request::PathOrigin;
use super::state::{Crossing, PathProgress};
use super::unit::{Ctx, Unit};

/// How close to a link's entry (tiles) a unit walking to it starts to cross.
const ENTRY_REACH: f32 = 0.3;

/// A unit began crossing a link: a [`Message`] and an [`EntityEvent`]. It stands at the
/// entry, `from`, for `seconds`, then appears at the exit, `to` ([`LeftLink`]).
#[derive(Message, EntityEvent, Clone, Copy, Debug, PartialEq, Reflect)]
pub struct EnteredLink {
    /// The unit.
    pub entity: Entity,
    /// The link, on the unit's map ([`NavMap::add_link`](crate::NavMap::add_link)).
    pub link: LinkId,
    /// The cell it crosses from.
    pub from: Cell,
    /// The cell it crosses to.
    pub to: Cell,
    /// How long the crossing takes: the link's cost in tiles at the unit's speed.
    pub seconds: f32,
}

/// A unit came out of a link at its exit, `to`: a [`Message`] and an [`EntityEvent`].
#[derive(Message, EntityEvent, Clone, Copy, Debug, PartialEq, Reflect)]
pub struct LeftLink {
    /// The unit.
    pub entity: Entity,
    /// The link.
    pub link: LinkId,
    /// The cell it crossed from.
    pub from: Cell,
    /// The cell it came out on.
    pub to: Cell,
}

/// A unit's frame at a link: `Some` of its step (its new position and heading, or `None` while
/// it waits in the link) if it is crossing, begins or ends a crossing; `None` if its path has no
/// crossing here (it walks as usual).
pub(super) fn cross(
    ctx: &mut Ctx,
    unit: &Unit,
    progress: &mut PathProgress,
    pos: Vec2,
) -> Option<Option<(Vec2, Vec2)>> {
    if let Some(crossing) = progress.crossing.as_mut() {
        crossing.left -= ctx.dt;
        if crossing.left > 0.0 {
            return Some(crossing.walked.then(|| walking(unit, crossing)));
        }
        return Some(Some(come_out(ctx, unit, progress)));
    }
    if !unit.grid.has_links() || !progress.state.is_underway() {
        return None;
    }
    let (entry, exit, link) = crossing_ahead(unit, progress.waypoint, pos)?;
    let Some(crossing) = begin_crossing(
        (unit.entity, unit.map_entity, unit.grid),
        (entry.1, exit),
        link,
        unit.mover.speed,
        (ctx.claims, &mut ctx.commands),
    ) else {
        // Full: it waits where it stands, at the entry.
        return Some(None);
    };
    progress.crossing = Some(crossing);
    if crossing.walked {
        return Some(Some(walking(unit, &crossing)));
    }
    Some(Some((
        unit.grid.cell_center(crossing.from),
        progress.heading,
    )))
}

/// Begins `entity`'s crossing of `link` (with its cost) on `map` (its class's `grid`) from
/// `entry` to `exit` (the exit's index in its path, and its cell) at `speed` tiles a second, if
/// the link has room: the unit counted inside, [`EnteredLink`] sent. `None` while the link is
/// full (the unit waits at the entry).
pub(super) fn begin_crossing(
    (entity, map, grid): (Entity, Entity, &NavGrid),
    (entry, (exit_index, exit)): (Cell, (usize, Cell)),
    (link, cost): (LinkId, u64),
    speed: f32,
    (claims, commands): (&mut Claims, &mut Commands),
) -> Option<Crossing> {
    let (capacity, walked) = grid
        .link(link)
        .map_or((0, false), |l| (l.capacity, l.walked));
    if capacity > 0 && claims.units_in_link(map, link) >= capacity as usize {
        return None;
    }
    claims.enter_link(map, link, entity);
    let tiles = grid.rules().costs.to_tiles(cost) as f32;
    let seconds = tiles / speed.max(1e-3);
    let entered = EnteredLink {
        entity,
        link,
        from: entry,
        to: exit,
        seconds,
    };
    commands.write_message(entered);
    commands.trigger(entered);
    Some(Crossing {
        link,
        from: entry,
        to: exit,
        exit_waypoint: exit_index,
        left: seconds,
        seconds,
        walked,
    })
}

/// Ends `entity`'s `crossing`: it leaves the link, [`LeftLink`] sent.
pub(super) fn end_crossing(
    entity: Entity,
    crossing: &Crossing,
    (claims, commands): (&mut Claims, &mut Commands),
) {
    claims.leave_link(entity);
    let left = LeftLink {
        entity,
        link: crossing.link,
        from: crossing.from,
        to: crossing.to,
    };
    commands.write_message(left);
    commands.trigger(left);
}

/// Where a unit walking a link's crossing is (grid space), and its heading: along the line
/// from the entry's centre to the exit's, as far as the time spent (it is recomputed every
/// frame, so pushes do not carry it off the line).
fn walking(unit: &Unit, crossing: &Crossing) -> (Vec2, Vec2) {
    let (a, b) = (
        unit.grid.cell_center(crossing.from),
        unit.grid.cell_center(crossing.to),
    );
    let done = if crossing.seconds > 0.0 {
        (1.0 - crossing.left / crossing.seconds).clamp(0.0, 1.0)
    } else {
        1.0
    };
    (a.lerp(b, done), (b - a).normalize_or(Vec2::X))
}

/// The crossing of the unit's path it is at, as `(waypoint index, cell)` of its entry and
/// exit, and the link crossed with its cost: the waypoint it walks to is a crossing's exit (it
/// passed the entry, and is not out at the exit yet), or a crossing's entry it is within
/// [`ENTRY_REACH`] of.
fn crossing_ahead(
    unit: &Unit,
    waypoint: usize,
    pos: Vec2,
) -> Option<((usize, Cell), (usize, Cell), (LinkId, u64))> {
    let points = &unit.path.waypoints;
    let cell = |k: usize| unit.grid.cell_at(unit.map.world_to_grid(points[k]));
    for k in [waypoint.checked_sub(1), Some(waypoint)]
        .into_iter()
        .flatten()
    {
        if k + 1 >= points.len() {
            continue;
        }
        let (a, b) = (cell(k), cell(k + 1));
        if unit.grid.is_move(a, b) {
            continue;
        }
        let Some(link) = unit.grid.crossing(a, b) else {
            continue;
        };
        if k == waypoint && pos.distance(unit.grid.cell_center(a)) > ENTRY_REACH {
            continue;
        }
        // Come out at the exit already (the exit ends its path: the waypoint stays on it).
        if k < waypoint && pos.distance(unit.grid.cell_center(b)) <= ENTRY_REACH {
            continue;
        }
        return Some(((k, a), (k + 1, b), link));
    }
    None
}

/// A unit that lost its path while crossing a link (its new order failed, or was taken back
/// with no other): it comes out at the exit at once, its place in the link freed.
pub(crate) fn out_at_once(
    entity: Entity,
    crossing: Crossing,
    (map, transform): (&NavMap, &mut Transform),
    out: (&mut Claims, &mut Commands),
) {
    let at = map.cell_to_world(crossing.to);
    transform.translation = at.extend(transform.translation.z);
    end_crossing(entity, &crossing, out);
}

/// Ends the unit's crossing: it stands on the exit's center, walking on toward the waypoint
/// after it (or arriving there, if the exit ends its path). Its position and heading.
fn come_out(ctx: &mut Ctx, unit: &Unit, progress: &mut PathProgress) -> (Vec2, Vec2) {
    let crossing = progress.crossing.take().expect("a crossing to end");
    let at = unit.grid.cell_center(crossing.to);
    progress.leg = None;
    progress.offset = Vec2::ZERO;
    progress.stalled = 0.0;
    progress.stall_anchor = at;
    let points = &unit.path.waypoints;
    let count = points.len();
    let cell = |k: usize| unit.grid.cell_at(unit.map.world_to_grid(points[k]));
    // The path's waypoint on the exit: the crossing's, or (a new path came while the unit was
    // inside) the new path's first on it.
    let exit = (crossing.exit_waypoint < count && cell(crossing.exit_waypoint) == crossing.to)
        .then_some(crossing.exit_waypoint)
        .or_else(|| (0..count).find(|&k| cell(k) == crossing.to));
    if let Some(exit) = exit {
        progress.waypoint = (exit + 1).min(count - 1);
        let cells = &unit.path.corridor;
        let from = progress.cell_index.min(cells.len());
        let on_exit = cells[from..].iter().position(|&c| c == crossing.to);
        if let Some(i) = on_exit
            .map(|i| from + i)
            .or_else(|| cells.iter().position(|&c| c == crossing.to))
        {
            progress.cell_index = i + 1;
            progress.next = cells.get(progress.cell_index).copied();
        }
        let ahead = unit.map.world_to_grid(points[progress.waypoint]) - at;
        if ahead.length_squared() > 1e-6 {
            progress.heading = ahead.normalize();
        }
    } else if progress.state.is_underway() {
        // The new path leads from elsewhere: the same order, searched again from here.
        ctx.submit(unit.entity, unit.path.request.clone(), PathOrigin::Blocked);
        progress.state = progress.state.wait(0.0);
    }
    end_crossing(unit.entity, &crossing, (ctx.claims, &mut ctx.commands));
    (at, progress.heading)
}
