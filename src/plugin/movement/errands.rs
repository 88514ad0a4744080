//! Errands and stops: the unit in a unit's way as the crowd decision sees it, the reactions a
//! waiting unit carries out (repath, take a free cell, step aside), making way when asked,
//! arriving (or taking a free cell when the goal is taken) and stopping (resuming the order a
//! unit stepped aside from).

use bevy::math::Vec2;
use bevy::prelude::Entity;

use crate::core::{Cell, NavGrid};

use super::super::claims::Claims;
use super::super::pursuit::Anchors;
use super::super::request::{PathGoal, PathOrigin, PathRequest, PathStatus, PendingRequests};
use super::claiming::{publish_intent, release_all};
use super::crowd::{InTheWay, Reaction};
use super::mover::Arrived;
use super::state::{Errand, MoveState, PathProgress};
use super::unit::{Ctx, Unit};

/// How far (in steps) a unit meeting another head-on looks for a cell to step aside to.
const STEP_ASIDE_REACH: u32 = 16;

/// How far (in steps) a unit whose goal is taken looks for a free cell.
const FREE_CELL_REACH: u32 = 12;

/// How many free cells after the nearest a follower whose goal is taken weighs (those as few
/// steps away), for the one nearest its target.
const FOLLOWER_FREE_CELLS: usize = 12;

/// The unit in `next` (not this one), as the crowd decision sees it.
pub(super) fn in_the_way(
    claims: &Claims,
    gives_way: &dyn Fn(Entity, Entity) -> bool,
    unit: &Unit,
    here: Cell,
    next: Cell,
    goal: Cell,
) -> Option<InTheWay> {
    let map = unit.map_entity;
    if let Some(other) = claims.stopped_at(map, next).filter(|&e| e != unit.entity) {
        return Some(InTheWay::Stopped {
            unit: other,
            on_goal: next == goal,
            wedged: unit.grid.is_one_wide(next),
        });
    }
    let other = claims.moving_at(map, next).filter(|&e| e != unit.entity)?;
    let theirs = claims.intent(other);
    // A unit waiting at a one-way passage's end for this one to come out stands aside for it
    // (with pushing, it is shoved out of the way like a stopped unit).
    if theirs.is_some_and(|t| t.patient && t.next == Some(here)) {
        return Some(InTheWay::Stopped {
            unit: other,
            on_goal: next == goal,
            wedged: false,
        });
    }
    Some(InTheWay::Moving {
        unit: other,
        head_on: theirs.is_some_and(|t| t.next == Some(here)),
        waits: theirs.is_some_and(|t| t.waiting),
        patient: theirs.is_some_and(|t| t.patient),
        passable: !unit.grid.is_one_wide(here) && !unit.grid.is_one_wide(next),
        we_yield: gives_way(unit.entity, other),
    })
}

/// Carries out a waiting unit's reaction.
pub(super) fn react(
    ctx: &mut Ctx,
    unit: &Unit,
    progress: &mut PathProgress,
    here: Cell,
    goal: Cell,
    reaction: Reaction,
) {
    let entity = unit.entity;
    let request = unit.path.request.clone();
    let (request, origin) = match reaction {
        Reaction::Repath => (request, PathOrigin::Stuck),
        Reaction::TakeFreeCell => match free_cell_near(ctx.claims, ctx.anchors, unit, goal) {
            Some(free) => {
                ctx.claims.reserve(unit.map_entity, free, entity);
                (redirect(progress, request, free), PathOrigin::GoalTaken)
            }
            None => {
                progress.state = MoveState::Arrived;
                return;
            }
        },
        Reaction::StepAside { for_unit } => {
            // Onto the nearest cell off the other's path (in a corridor one tile wide: out of
            // it, not just out of the cells it claims, or they meet again a few cells on), then
            // resume the order.
            let map = unit.map_entity;
            let claims = &*ctx.claims;
            let their_path = (ctx.corridor_of)(for_unit);
            let Some(side) = nearest_cell(
                unit.grid,
                (here, STEP_ASIDE_REACH),
                |_| true,
                |c| {
                    !claims.claimants(map, c).contains(&for_unit)
                        && !their_path.contains(&c)
                        && claims.stopped_at(map, c).is_none()
                        && claims.moving_at(map, c).is_none()
                },
                None,
            ) else {
                return;
            };
            let resume = match std::mem::take(&mut progress.errand) {
                Errand::SteppingAside { resume, .. } => resume,
                _ => request,
            };
            progress.errand = Errand::SteppingAside { to: side, resume };
            progress.yields += 1;
            let trip = PathRequest::to_cell(side).with_priority(ctx.crowd.errand_priority);
            ctx.submit(entity, trip, PathOrigin::StepAside);
            progress.state = progress.state.wait(ctx.dt);
            return;
        }
    };
    progress.stuck_repaths += 1;
    progress.state = progress.state.wait(ctx.dt);
    ctx.submit(entity, request, origin);
}

/// The end of the path: stop, or, if another unit got there first, take the nearest free cell
/// instead of stacking.
pub(super) fn arrive(
    ctx: &mut Ctx,
    unit: &Unit,
    progress: &mut PathProgress,
    cell: Cell,
    pending: bool,
) {
    let taken = ctx
        .claims
        .stopped_at(unit.map_entity, cell)
        .is_some_and(|e| e != unit.entity);
    if taken
        && !pending
        && let Some(free) = free_cell_near(ctx.claims, ctx.anchors, unit, cell)
    {
        ctx.claims.reserve(unit.map_entity, free, unit.entity);
        let request = redirect(progress, unit.path.request.clone(), free);
        progress.state = progress.state.wait(ctx.dt);
        ctx.submit(unit.entity, request, PathOrigin::GoalTaken);
        return;
    }
    stop_here(ctx, unit, progress, cell);
}

/// An idle or arrived unit: occupies its cell, and makes way if asked.
pub(super) fn stand(ctx: &mut Ctx, unit: &Unit, progress: &mut PathProgress, here: Cell) {
    let (entity, map) = (unit.entity, unit.map_entity);
    publish_intent(ctx.claims, entity, progress, None);
    if progress.stopped_cell != Some(here) {
        occupy(ctx.claims, unit, progress, here);
    }
    // Asked to make way: step onto the nearest cell nobody stands on or claims (off the asking
    // unit's claimed cells) and stay there.
    if ctx.claims.take_make_way(entity).is_some()
        && unit.status != PathStatus::Queued
        && !unit.holds
    {
        let claims = &*ctx.claims;
        let free = nearest_cell(
            unit.grid,
            (here, ctx.crowd.make_way_reach),
            |_| true,
            |c| {
                claims.stopped_at(map, c).is_none()
                    && claims.moving_at(map, c).is_none()
                    && claims.claimants(map, c).is_empty()
            },
            None,
        );
        if let Some(free) = free {
            progress.errand = Errand::MakingWay { to: free };
            let trip = PathRequest::to_cell(free).with_priority(ctx.crowd.errand_priority);
            ctx.submit(entity, trip, PathOrigin::MakeWay);
        }
    }
}

/// The unit stops on `cell`: claims released, the cell occupied, [`Arrived`] sent (or the order
/// it stepped aside from resumed).
pub(super) fn stop_here(ctx: &mut Ctx, unit: &Unit, progress: &mut PathProgress, cell: Cell) {
    let entity = unit.entity;
    progress.state = MoveState::Arrived;
    progress.leg = None;
    progress.blocked = 0.0;
    progress.stuck_repaths = 0;
    release_all(ctx.claims, entity, progress);
    publish_intent(ctx.claims, entity, progress, None);
    occupy(ctx.claims, unit, progress, cell);
    let on_errand = on_errand(ctx.book, unit, &progress.errand);
    match std::mem::take(&mut progress.errand) {
        Errand::SteppingAside { resume, .. } if on_errand => {
            ctx.submit(entity, resume, PathOrigin::Resume);
        }
        Errand::MakingWay { .. } if on_errand => {}
        _ => {
            progress.yields = 0;
            ctx.arrived.write(Arrived { entity, cell });
            ctx.commands.trigger(Arrived { entity, cell });
        }
    }
}

/// Whether `request` is an order to go to `cell` (a step-aside or make-way trip).
fn heading_to(request: &PathRequest, cell: Cell) -> bool {
    match request.goal {
        PathGoal::Cell(c) | PathGoal::Slot { slot: c, .. } => c == cell,
        _ => false,
    }
}

/// Whether the unit is still on `errand`: its latest request (the one waiting for an outcome,
/// or the one its path answers) goes to the errand's cell (a new order replaces the errand).
pub(super) fn on_errand(book: &PendingRequests, unit: &Unit, errand: &Errand) -> bool {
    errand.cell().is_some_and(|c| {
        let latest = book.request(unit.entity).unwrap_or(&unit.path.request);
        heading_to(latest, c)
    })
}

/// The nearest cell around `cell` that no unit stands on, claims or goes to instead of its own
/// taken goal: where a unit whose goal is taken goes instead. A follower takes, of the free
/// cells as few steps away as the nearest, the one nearest its target (where `anchors` saw it
/// this frame): the first found could lie on the far side, out of range.
fn free_cell_near(claims: &Claims, anchors: &Anchors, unit: &Unit, cell: Cell) -> Option<Cell> {
    let map = unit.map_entity;
    let free = |c: Cell| {
        claims.stopped_at(map, c).is_none()
            && claims.claimants(map, c).is_empty()
            && claims.reserved_at(map, c).is_none_or(|e| e == unit.entity)
    };
    let target = unit.follows.and_then(|t| anchors.target_at(t, map));
    // Reached round the units standing in the crowd, as its search will go: a free cell in a
    // pocket ringed by standing units has no way in, and the search for it would walk the
    // whole map before it failed.
    let through = |c: Cell| claims.stopped_at(map, c).is_none_or(|e| e == unit.entity);
    nearest_cell(unit.grid, (cell, FREE_CELL_REACH), through, free, target)
}

/// The nearest walkable cell around `from`, other than `from` (breadth-first, within
/// `max_steps`, only through cells `through` accepts), that `ok` accepts; with `toward` (grid
/// space), of those as few steps away as the nearest, the one nearest `toward` (weighing
/// [`FOLLOWER_FREE_CELLS`] after the first).
fn nearest_cell(
    grid: &NavGrid,
    (from, max_steps): (Cell, u32),
    through: impl Fn(Cell) -> bool,
    ok: impl Fn(Cell) -> bool,
    toward: Option<Vec2>,
) -> Option<Cell> {
    let mut cells = grid
        .cells_outward_through(from, max_steps, through)
        .skip(1)
        .filter(|&c| ok(c));
    let first = cells.next()?;
    let Some(toward) = toward else {
        return Some(first);
    };
    let steps = grid.open_steps(from, first);
    let off = |c: Cell| grid.cell_center(c).distance_squared(toward);
    let as_near = cells
        .take(FOLLOWER_FREE_CELLS)
        .filter(|&c| grid.open_steps(from, c) == steps);
    std::iter::once(first)
        .chain(as_near)
        .min_by(|&a, &b| off(a).total_cmp(&off(b)))
}

/// `request` sent to `free` instead of its goal (taken by a stopped unit); a unit stepping aside
/// steps aside to `free` instead.
fn redirect(progress: &mut PathProgress, mut request: PathRequest, free: Cell) -> PathRequest {
    if let Errand::SteppingAside { to, .. } = &mut progress.errand
        && heading_to(&request, *to)
    {
        *to = free;
    }
    request.goal = match request.goal {
        PathGoal::Slot { target, .. } => PathGoal::Slot { slot: free, target },
        _ => PathGoal::Cell(free),
    };
    request
}

/// The unit no longer moves: it stands on `cell` (its body's footprint occupied).
fn occupy(claims: &mut Claims, unit: &Unit, progress: &mut PathProgress, cell: Cell) {
    let (entity, map) = (unit.entity, unit.map_entity);
    claims.set_moving_at(map, entity, progress.moving_cell.take(), None);
    claims.set_stopped(
        map,
        entity,
        progress.stopped_cell,
        Some(cell),
        unit.footprint,
    );
    progress.stopped_cell = Some(cell);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_free_cell_is_the_first_found_or_of_the_nearest_the_one_toward_a_point() {
        let grid = NavGrid::new(20, 20).unwrap();
        let taken = [Cell::new(10, 10), Cell::new(9, 10), Cell::new(11, 11)];
        let free = |c: Cell| !taken.contains(&c);
        let first = nearest_cell(
            &grid,
            (Cell::new(10, 10), FREE_CELL_REACH),
            |_| true,
            free,
            None,
        )
        .unwrap();
        assert_eq!(grid.open_steps(Cell::new(10, 10), first), 1);
        // A point to the north-west: of the free cells a step away, the one nearest it, not the
        // first found (east).
        assert_eq!(first, Cell::new(11, 10));
        let north_west = Vec2::new(5.5, 13.5);
        let toward = nearest_cell(
            &grid,
            (Cell::new(10, 10), FREE_CELL_REACH),
            |_| true,
            free,
            Some(north_west),
        );
        assert_eq!(toward, Some(Cell::new(9, 11)));
        let east = Vec2::new(14.5, 10.5);
        // Never farther than the nearest free cell, however near the point lies beyond.
        let far = nearest_cell(
            &grid,
            (Cell::new(10, 10), FREE_CELL_REACH),
            |_| true,
            |c| c != Cell::new(10, 10) && c.x < 10,
            Some(east),
        );
        assert_eq!(grid.open_steps(Cell::new(10, 10), far.unwrap()), 1);
        // Ringed by units standing on the cells round it, a unit reaches no cell beyond them.
        let ring: Vec<Cell> = grid.cells_outward(Cell::new(10, 10), 1).skip(1).collect();
        let through = |c: Cell| !ring.contains(&c);
        let beyond = |c: Cell| !ring.contains(&c) && c != Cell::new(10, 10);
        let pocket = (Cell::new(10, 10), FREE_CELL_REACH);
        assert_eq!(nearest_cell(&grid, pocket, through, beyond, None), None);
        // A gap in the ring: through it, to the nearest cell beyond it.
        let through = |c: Cell| !ring.contains(&c) || c == Cell::new(11, 10);
        let out = nearest_cell(&grid, pocket, through, beyond, None).unwrap();
        assert_eq!(grid.open_steps(Cell::new(11, 10), out), 1);
    }
}
