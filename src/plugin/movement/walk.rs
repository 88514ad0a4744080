//! One unit's frame on its path: a new path started, the unit tracked along its corridor (claims,
//! occupancy, intent), the crowd's decision taken, and the step walked (with avoidance, pushes'
//! offsets and a grid edited under it), arriving at the end.

use bevy::prelude::*;

use crate::core::{Body, Cell, overlaps_blocked, walkable};

use super::super::claims::Intent;
use super::super::request::{PathOrigin, PathStatus};
use super::avoid::avoid;
use super::claiming::{publish_intent, release_all, update_claims};
use super::cross::cross;
use super::crowd::{Action, Situation, decide, may_stop_short, near_goal};
use super::errands::{arrive, in_the_way, on_errand, react, stand, stop_here};
use super::follow::{Walk, Walked, track};
use super::neighbours::Neighbours;
use super::passage;
use super::state::{Errand, MoveState, PathProgress};
use super::unit::{Ctx, Unit};
use super::walls::{catch_up, held_back, pushed_off};

/// A unit that avoidance lets go on less than this share of its step is held back by the crowd
/// (its time counts as waiting, toward the crowd's last resorts).
const HELD_BACK: f32 = 0.1;

/// A new path: start on it (a one-waypoint path arrives at once, with its message).
pub(super) fn start_path(ctx: &mut Ctx, unit: &Unit, progress: &mut PathProgress, pos: Vec2) {
    release_all(ctx.claims, unit.entity, progress);
    let old_map = progress
        .map
        .replace(unit.map_entity)
        .unwrap_or(unit.map_entity);
    ctx.claims
        .set_stopped(old_map, unit.entity, progress.stopped_cell.take(), None, 0);
    if old_map != unit.map_entity {
        ctx.claims
            .set_moving_at(old_map, unit.entity, progress.moving_cell.take(), None);
    }
    progress.waypoint = 1;
    progress.cell_index = 1;
    progress.leg = None;
    progress.speed_factor = 1.0;
    // The stall clock (the crowd's last resort) starts when the unit sets off. A new path for a
    // unit already on its way keeps it: a follower wedged at a gate gets a new path every second
    // or so as its target walks on, and would never reach the last resort.
    if !progress.state.is_underway() {
        progress.stalled = 0.0;
        progress.stall_anchor = pos;
    }
    progress.state = match progress.state.walking_through_from() {
        _ if unit.path.waypoints.is_empty() => MoveState::Arrived,
        // A repath while walking through others keeps walking through.
        Some(from) => MoveState::WalkingThrough { from },
        None => MoveState::Moving,
    };
    // A new order given while the unit stepped aside or made way replaces those.
    if !on_errand(ctx.book, unit, &progress.errand) {
        progress.errand = Errand::None;
    }
    if progress.heading == Vec2::ZERO {
        progress.heading = Vec2::X;
    }
    let cells = &unit.path.corridor;
    let count = unit.path.waypoints.len();
    if count > 1 && !walkable(unit.grid, pos, grid_waypoint(unit, 1), unit.wall_radius) {
        // Smoothing assumed the start cell's center: go there first if the unit stands
        // elsewhere in it and cannot see the next waypoint.
        progress.waypoint = 0;
    }
    // A path without corridor cells (built by hand, or loaded) is walked along its waypoints
    // to its goal; it claims nothing ahead.
    let goal = cells.last().copied().unwrap_or(unit.path.goal);
    if progress.goal != Some(goal) {
        progress.goal = Some(goal);
        progress.closest = pos.distance(unit.grid.cell_center(goal));
        progress.wall_replans = 0;
    }
}

/// The goal of the unit's path: the last cell of its corridor (or, if it has none, its goal).
fn goal_of(unit: &Unit, progress: &PathProgress) -> Cell {
    progress.goal.unwrap_or(unit.path.goal)
}

/// The path's waypoint `i` in grid space.
fn grid_waypoint(unit: &Unit, i: usize) -> Vec2 {
    unit.map.world_to_grid(unit.path.waypoints[i])
}

/// One frame of one unit: its new position and heading, or `None` if it does not move.
pub(super) fn step_unit(
    ctx: &mut Ctx,
    unit: &Unit,
    progress: &mut PathProgress,
    pos: Vec2,
    new_path: bool,
) -> Option<(Vec2, Vec2)> {
    let pending = unit.status != PathStatus::Found;
    if pending && unit.status != PathStatus::Queued && progress.state.is_underway() {
        // Failed or cancelled requests stop the unit where it is.
        progress.state = MoveState::Idle;
        release_all(ctx.claims, unit.entity, progress);
    }
    if let Some(step) = cross(ctx, unit, progress, pos) {
        return step;
    }
    let here = unit.grid.cell_at(pos);
    if !progress.state.is_underway() {
        stand(ctx, unit, progress, here);
        return None;
    }
    let next = keep_track(ctx, unit, progress, pos, here, new_path);
    let goal = goal_of(unit, progress);
    let situation = situation(ctx, unit, progress, (here, next, goal), pending);
    match decide(&situation, ctx.crowd) {
        Action::StopHere => {
            stop_here(ctx, unit, progress, here);
            None
        }
        Action::Wait {
            ask_to_make_way,
            then,
        } => {
            progress.state = progress.state.wait(situation.waited);
            progress.patient = situation.patient();
            if let Some(idle) = ask_to_make_way {
                ctx.claims.ask_to_make_way(idle, unit.entity);
            }
            if let Some(reaction) = then {
                react(ctx, unit, progress, here, goal, reaction);
            }
            None
        }
        Action::Go {
            start_walking_through,
        } => {
            progress.patient = false;
            progress.state = if start_walking_through {
                MoveState::WalkingThrough { from: pos }
            } else {
                progress.state.go()
            };
            Some(walk(ctx, unit, progress, pos, pending))
        }
    }
}

/// What the crowd's decision looks at for the unit on `here`, its next cell `next` and its
/// `goal` (see [`decide`]).
fn situation(
    ctx: &Ctx,
    unit: &Unit,
    progress: &PathProgress,
    (here, next, goal): (Cell, Option<Cell>, Cell),
    pending: bool,
) -> Situation {
    let corridor = &unit.path.corridor;
    let passage_closed = next.filter(|&c| c != here).is_some_and(|next| {
        passage::passage_closed(
            ctx.claims,
            (unit.grid, unit.map.grid(), unit.footprint),
            unit.map_entity,
            unit.entity,
            (here, next),
            corridor.get(progress.cell_index..).unwrap_or_default(),
            unit.mover.speed,
            ctx.clock,
            ctx.crowd.one_way_turn,
        )
    });
    let mut situation = Situation {
        held_back: progress.leg.is_some() && held_back(progress),
        stalled: progress.stalled,
        passage_closed,
        in_the_way: next
            .filter(|&c| c != here)
            .and_then(|next| in_the_way(ctx.claims, ctx.gives_way, unit, here, next, goal)),
        waited: progress.state.waited() + ctx.dt,
        wait_time: unit.mover.wait_time,
        blocked: progress.blocked,
        walking_through: progress.state.walking_through_from().is_some(),
        near_goal: false,
        free_here: ctx
            .claims
            .stopped_at(unit.map_entity, here)
            .is_none_or(|e| e == unit.entity),
        pending,
        stuck_repaths: progress.stuck_repaths,
        making_way: matches!(progress.errand, Errand::MakingWay { .. }),
        yields: progress.yields,
        wide: unit.footprint > 0,
    };
    situation.near_goal = may_stop_short(&situation)
        && near_goal((unit.grid, unit.map.grid()), here, goal, ctx.crowd);
    situation
}

/// Tracks the unit along its corridor (passed cells, progress toward the goal, the end of
/// walking through), keeps its claims, occupancy and intent up to date; returns its next cell.
fn keep_track(
    ctx: &mut Ctx,
    unit: &Unit,
    progress: &mut PathProgress,
    pos: Vec2,
    here: Cell,
    new_path: bool,
) -> Option<Cell> {
    let (entity, map) = (unit.entity, unit.map_entity);
    let cells = &unit.path.corridor;
    // Passed cells (only when the unit entered another cell or got a new path: with thousands
    // of units, reading each one's path every frame is what costs, in cache misses).
    let index_before = progress.cell_index;
    if new_path || progress.moving_cell != Some(here) {
        progress.cell_index = track(cells, progress.cell_index, here);
    }
    // A unit loaded from a saved game claims its cells ahead anew.
    let retrack = new_path || progress.cell_index != index_before || unit.resumed;
    if pos.distance_squared(progress.stall_anchor) > 1.0 {
        progress.stalled = 0.0;
        progress.stall_anchor = pos;
    } else {
        progress.stalled += ctx.dt;
    }
    if new_path {
        progress.end = grid_waypoint(unit, unit.path.waypoints.len() - 1);
    }
    if retrack {
        progress.next = cells.get(progress.cell_index).copied();
    }
    let next = progress.next;
    // Progress is getting closer to the goal than ever before on this order: walking back and
    // forth between two routes in a crowd is not.
    let goal = goal_of(unit, progress);
    let to_goal = pos.distance(unit.grid.cell_center(goal));
    let closer = to_goal < progress.closest - 1.0;
    if closer {
        progress.closest = to_goal;
        progress.wall_replans = 0;
    }
    let next_taken = || {
        next.is_some_and(|c| {
            ctx.claims.stopped_at(map, c).is_some_and(|e| e != entity)
                || ctx.claims.moving_at(map, c).is_some_and(|e| e != entity)
        })
    };
    let walked_through = progress
        .state
        .walking_through_from()
        .map(|from| pos.distance(from) >= ctx.crowd.walk_through_for && !next_taken());
    if closer && walked_through.is_none() || walked_through == Some(true) {
        progress.blocked = 0.0;
        progress.stuck_repaths = 0;
        progress.state = progress.state.stop_walking_through();
    }
    if retrack {
        update_claims(ctx.claims, unit, progress);
    }
    if progress.moving_cell != Some(here) {
        ctx.claims
            .set_moving_at(map, entity, progress.moving_cell, Some(here));
        progress.moving_cell = Some(here);
    }
    let waiting = progress.state.waited() > 0.0;
    if waiting {
        progress.blocked += ctx.dt;
    }
    let intent = Intent {
        here,
        next,
        waiting,
        patient: waiting && progress.patient,
        footprint: unit.footprint,
    };
    publish_intent(ctx.claims, entity, progress, Some(intent));
    next
}

/// Walks the unit along its waypoints for this frame (a new path if even its cell center cannot
/// see the next waypoint) and arrives at the end; returns its position and heading.
fn walk(
    ctx: &mut Ctx,
    unit: &Unit,
    progress: &mut PathProgress,
    pos: Vec2,
    pending: bool,
) -> (Vec2, Vec2) {
    // A grid edit since the leg was planned: plan it again from here, so a unit never walks on
    // into a wall dropped across its leg (it stops short of it if the new grid blocks its way,
    // and waits there for its new path).
    let version = unit.edits_version;
    if progress.grid_version != version {
        progress.grid_version = version;
        progress.leg = None;
    }
    let distance = unit.mover.speed * ctx.dt;
    if unit.controlled && progress.waypoint >= unit.path.waypoints.len() {
        return walk_to_end(ctx, unit, progress, pos, distance, pending);
    }
    // Pushed off its curve: it walks the curve with the push's offset, fading (a new curve
    // starts where the unit is).
    if progress.leg.is_none() {
        progress.offset = Vec2::ZERO;
    }
    let waypoint = |i: usize| grid_waypoint(unit, i);
    let walk = Walk {
        grid: unit.grid,
        waypoints: &waypoint,
        waypoint_count: unit.path.waypoints.len(),
        radius: unit.wall_radius,
        turning_radius: unit.mover.turning_radius,
        corridor: &unit.path.corridor,
        cell_index: progress.cell_index,
    };
    let on_curve = curve_catches_up(&walk, progress, pos);
    // Pressed back more than TETHER behind it: the point waits for the body (and the time
    // counts as waiting, toward the crowd's last resort).
    let tethered = held_back(progress);
    if tethered {
        progress.blocked += ctx.dt;
    }
    let along_curve = if tethered { 0.0 } else { distance };
    let mut walked = if progress.state == MoveState::Moving
        && let Some(index) = ctx.neighbours
    {
        step_among(
            ctx,
            index,
            unit,
            progress,
            &walk,
            (pos, on_curve),
            along_curve,
        )
    } else {
        progress.avoidance = None;
        advance(&walk, progress, on_curve, along_curve)
    };
    if tethered {
        walked.pos = catch_up(unit, progress, pos, distance);
    } else if progress.offset != Vec2::ZERO {
        walked.pos = pushed_off(unit, progress, pos, walked.pos, ctx.dt);
    }
    after_step(ctx, unit, progress, walked, pending)
}

/// Steps the unit's point on its curve by `along` along it.
fn advance(walk: &Walk, progress: &mut PathProgress, on_curve: Vec2, along: f32) -> Walked {
    walk.advance(
        &mut progress.waypoint,
        &mut progress.leg,
        &mut progress.speed_factor,
        on_curve,
        progress.heading,
        along,
    )
}

/// The point of the unit's curve, where the body at `pos` is off it by the push's offset.
/// Pushed ahead of that point, the point catches up (the push was progress), and the offset is
/// what is left.
fn curve_catches_up(walk: &Walk, progress: &mut PathProgress, pos: Vec2) -> Vec2 {
    let mut on_curve = pos - progress.offset;
    let ahead = progress.offset.dot(progress.heading);
    if ahead > 0.0 {
        let time = ahead / progress.speed_factor.max(1e-3);
        on_curve = advance(walk, progress, on_curve, time).pos;
        progress.offset = pos - on_curve;
    }
    on_curve
}

/// A moving unit's step among the units near (local avoidance on): the step along the curve,
/// tried on a copy, then turned aside for the units near.
fn step_among(
    ctx: &mut Ctx,
    index: &Neighbours,
    unit: &Unit,
    progress: &mut PathProgress,
    walk: &Walk,
    (pos, on_curve): (Vec2, Vec2),
    along_curve: f32,
) -> Walked {
    let (mut waypoint, mut leg, mut factor) =
        (progress.waypoint, progress.leg, progress.speed_factor);
    let step = walk.advance(
        &mut waypoint,
        &mut leg,
        &mut factor,
        on_curve,
        progress.heading,
        along_curve,
    );
    let me = Body {
        position: pos,
        velocity: progress.heading * unit.mover.speed * progress.speed_factor,
        radius: unit.radius,
    };
    let avoided = (!step.blocked)
        .then(|| {
            avoid(
                index,
                ctx.crowd,
                // Walls as they are (the real radius), not grown by a class's footprint.
                unit.map.grid(),
                unit.map_entity,
                unit.entity,
                me,
                step.pos - on_curve,
                unit.mover.speed,
                ctx.dt,
                &mut ctx.scratch,
            )
        })
        .flatten();
    progress.avoidance = avoided.map(|a| a.velocity);
    match avoided {
        None => {
            (progress.waypoint, progress.leg, progress.speed_factor) = (waypoint, leg, factor);
            step
        }
        Some(a) => {
            progress.offset += a.aside;
            if a.along < HELD_BACK {
                // Held back by the crowd: as good as waiting for it.
                progress.blocked += ctx.dt;
            }
            advance(walk, progress, on_curve, along_curve * a.along)
        }
    }
}

/// After the frame's step: a unit stopped short of a wall searches again; the heading taken;
/// arrival at the end. Returns the position and heading.
fn after_step(
    ctx: &mut Ctx,
    unit: &Unit,
    progress: &mut PathProgress,
    walked: Walked,
    pending: bool,
) -> (Vec2, Vec2) {
    // Stopped short of a wall edited across its way: it searches again, ahead of every other
    // request (a repath after the edit still waiting for its turn gives way to this one).
    let repath_waiting = || {
        matches!(
            ctx.book.origin(unit.entity),
            Some(PathOrigin::GridEdit | PathOrigin::Revealed)
        )
    };
    if walked.blocked && (!pending || repath_waiting()) {
        ctx.submit(unit.entity, unit.path.request.clone(), PathOrigin::Blocked);
        progress.wall_replans = progress.wall_replans.saturating_add(1);
        progress.state = progress.state.wait(0.0);
    }
    progress.heading = walked.heading;
    // A body its controller moves, lagging behind the point of its curve, walks on to the end
    // once that point is there (see `walk_to_end`).
    let body_there = !unit.controlled || progress.offset.length() <= unit.mover.arrival_tolerance;
    if progress.waypoint >= unit.path.waypoints.len() && body_there
        || walked.pos.distance(progress.end) <= unit.mover.arrival_tolerance
    {
        arrive(ctx, unit, progress, unit.grid.cell_at(walked.pos), pending);
    }
    (walked.pos, walked.heading)
}

/// A unit whose controller moves it, its curve walked but its body short of the end (a slow
/// controller, a body held back by its contacts): it walks straight on toward the end, arriving
/// within its radius of it (another body may stand on the end itself), where it stands if a
/// wall is in the way, or if it has not got anywhere for its wait time (pressed by others).
fn walk_to_end(
    ctx: &mut Ctx,
    unit: &Unit,
    progress: &mut PathProgress,
    pos: Vec2,
    distance: f32,
    pending: bool,
) -> (Vec2, Vec2) {
    progress.leg = None;
    progress.offset = Vec2::ZERO;
    let to = pos + (progress.end - pos).clamp_length_max(distance);
    let blocked = overlaps_blocked(unit.grid, to, unit.wall_radius);
    let to = if blocked { pos } else { to };
    progress.heading = (progress.end - pos).normalize_or(progress.heading);
    let close = to.distance(progress.end) <= unit.radius.max(unit.mover.arrival_tolerance);
    if blocked || close || progress.stalled > unit.mover.wait_time {
        arrive(ctx, unit, progress, unit.grid.cell_at(to), pending);
    }
    (to, progress.heading)
}
