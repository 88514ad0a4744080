//! Collect: new requests are validated (bad goals and goals on another island fail at once,
//! through the island labels, without searching; a request to the unit's own cell is found at
//! once) and the rest join the waiting list.

use bevy::prelude::*;

use crate::core::{Cell, Path, check_nearest, resolve_ends};
use crate::plugin::classes::ClassId;
use crate::plugin::diagnostics::{Cost, FrameTally, Phase, PhaseTimer};
use crate::plugin::map::NavMap;
use crate::plugin::movement::state::{MAX_WALL_REPLANS, PathProgress};
use crate::plugin::movement::vehicle::DriveProgress;
use crate::plugin::outcomes::SearchKind;
use crate::plugin::pursuit::stop_within;
use crate::plugin::request::{PathFailure, PathGoal, PathOrigin, PathRequest, PendingRequests};
use crate::plugin::settings::TilepathSettings;

use super::job::{Job, JobGoal, SearchResult};
use super::path_queue::PathQueue;

/// The map a request refers to: the one it names, or the only one there is.
fn pick_map(request_map: Option<Entity>, maps: &Query<(Entity, &NavMap)>) -> Option<Entity> {
    match request_map {
        Some(m) => maps.get(m).ok().map(|(e, _)| e),
        None => {
            let mut it = maps.iter();
            let first = it.next()?;
            it.next().is_none().then_some(first.0)
        }
    }
}

/// The cell a unit stands on.
pub(super) fn unit_cell(map: &NavMap, transform: &Transform, inside: Inside) -> Option<Cell> {
    let crossing = inside
        .0
        .and_then(|p| p.crossing)
        .or_else(|| inside.1.and_then(|d| d.crossing));
    // Inside a link, it comes out at the exit whatever its new path: it searches from there
    // (where it stands could be a blocked cell under a walked link's line).
    crossing
        .map(|c| c.to)
        .or_else(|| map.world_to_cell(transform.translation.truncate()))
}

/// What says whether a unit is crossing a link: a walking unit's progress, a vehicle's.
pub(super) type Inside<'a> = (Option<&'a PathProgress>, Option<&'a DriveProgress>);

/// Checks one request against its map: the job to queue, or why it fails now.
fn validate(
    entity: Entity,
    ticket: u64,
    request: PathRequest,
    (transform, inside): (&Transform, Inside),
    class: ClassId,
    maps: &Query<(Entity, &NavMap)>,
    units: &Query<(&Transform, Option<&ClassId>)>,
    frame: u64,
) -> Result<(Job, Cell), PathFailure> {
    let map_entity = pick_map(request.map, maps).ok_or(PathFailure::NoMap)?;
    let (_, map) = maps.get(map_entity).map_err(|_| PathFailure::NoMap)?;
    let start = unit_cell(map, transform, inside).ok_or(PathFailure::StartOutOfBounds)?;
    let goal = match &request.goal {
        PathGoal::World(p) if !p.is_finite() => return Err(PathFailure::GoalNotFinite),
        PathGoal::World(p) => {
            JobGoal::Single(map.world_to_cell(*p).ok_or(PathFailure::GoalOutOfBounds)?)
        }
        PathGoal::Cell(c) => JobGoal::Single(*c),
        PathGoal::NearestOf(cells) => JobGoal::Nearest(cells.clone()),
        PathGoal::Slot { slot, target } => JobGoal::Slot {
            slot: *slot,
            target: *target,
        },
        PathGoal::Entity { target, range } => {
            JobGoal::Single(follow_goal(map, transform, units, *target, *range, start)?)
        }
    };
    // Check the ends now: bad input and unreachable goals end here, without a search.
    let grid = match map.class_grid(class) {
        Some(Err(_)) => return Err(PathFailure::UnitTooWide),
        _ => map.grid_of(class),
    };
    match &goal {
        JobGoal::Single(g) | JobGoal::Slot { slot: g, .. } => {
            resolve_ends(grid, start, *g, request.policy).map(|_| ())
        }
        JobGoal::Nearest(goals) => check_nearest(grid, start, goals),
    }?;
    let job = Job {
        entity,
        ticket,
        map: map_entity,
        class,
        goal,
        policy: request.policy,
        priority: request.priority,
        enqueued: frame,
        request,
        alone: false,
        priced: None,
        repriced: false,
    };
    Ok((job, start))
}

/// A request to the cell its unit stands on (a unit stopped or holding its position, a
/// follower in range) needs no search: its path is that cell, found at once on the grid of
/// the version given. `None` for every other job.
fn there_already(maps: &Query<(Entity, &NavMap)>, job: &Job, start: Cell) -> Option<u64> {
    let here = match job.goal {
        JobGoal::Single(goal) | JobGoal::Slot { slot: goal, .. } => goal == start,
        JobGoal::Nearest(_) => false,
    };
    let (_, map) = maps.get(job.map).ok().filter(|_| here)?;
    Some(map.grid_of(job.class).version())
}

/// The path of a job whose unit stands on its goal, `start` (see [`there_already`]).
fn found_here(job: Job, start: Cell, version: u64) -> SearchResult {
    let path = Path {
        cells: vec![start],
        cost: 0,
        length: 0.0,
        expansions: 0,
        goal: start,
        goal_index: None,
    };
    SearchResult {
        job,
        version,
        result: Ok(path),
        smoothed: Vec::new(),
        worker: false,
        search: SearchKind::Own,
        rest: None,
    }
}

/// The cell a follower standing on `start` goes for: the one its `target` stands on, or its
/// own if the target is as close as a follower with `range` comes already.
fn follow_goal(
    map: &NavMap,
    follower: &Transform,
    units: &Query<(&Transform, Option<&ClassId>)>,
    target: Entity,
    range: f32,
    start: Cell,
) -> Result<Cell, PathFailure> {
    if !(range.is_finite() && range >= 0.0) {
        return Err(PathFailure::BadRange);
    }
    let (at, _) = units.get(target).map_err(|_| PathFailure::TargetGone)?;
    let at = at.translation.truncate();
    if !at.is_finite() {
        return Err(PathFailure::GoalNotFinite);
    }
    let goal = map.world_to_cell(at).ok_or(PathFailure::GoalOutOfBounds)?;
    let here = map.world_to_grid(follower.translation.truncate());
    Ok(
        if here.distance(map.world_to_grid(at)) <= stop_within(range) {
            start
        } else {
            goal
        },
    )
}

/// Collect: validates the requests made since last frame, in order, within a quarter of what is
/// left of the frame's budget (validation is cheap but not free: a nearest-reachable goal scans
/// around it); the rest wait for the next frame.
pub(crate) fn collect_requests(
    mut queue: ResMut<PathQueue>,
    mut book: ResMut<PendingRequests>,
    tally: ResMut<FrameTally>,
    settings: Res<TilepathSettings>,
    transforms: Query<(&Transform, Option<&ClassId>)>,
    progress: Query<Inside<'static>>,
    maps: Query<(Entity, &NavMap)>,
) {
    let mut timer = PhaseTimer::start(tally, Phase::Collect, settings.lockstep.is_some());
    let budget = settings.time_budget.saturating_sub(timer.spent()) / 4;
    let frame = book.frame;
    let mut submitted = std::mem::take(&mut book.submitted).into_iter();
    for s in submitted.by_ref() {
        if timer.elapsed() >= budget {
            book.submitted.push(s);
            break;
        }
        timer.charge(Cost::Validate);
        let Some(request) = book
            .request(s.entity)
            .filter(|_| book.is_current(s.entity, s.ticket))
        else {
            continue;
        };
        let request = request.clone();
        // A unit without a place in the world stands on no map cell.
        let Ok((transform, class)) = transforms.get(s.entity) else {
            queue.fail(&mut book, s.entity, s.ticket, PathFailure::StartOutOfBounds);
            continue;
        };
        let origin = book.origin(s.entity).unwrap_or_default();
        let inside = progress.get(s.entity).unwrap_or_default();
        // Its way blocked by a wall again and again, its plans coming back the same: its body
        // cannot follow them.
        if origin == PathOrigin::Blocked
            && inside.0.is_some_and(|p| p.wall_replans > MAX_WALL_REPLANS)
        {
            queue.fail(&mut book, s.entity, s.ticket, PathFailure::UnitTooWide);
            continue;
        }
        let class = ClassId::of(class);
        match validate(
            s.entity,
            s.ticket,
            request,
            (transform, inside),
            class,
            &maps,
            &transforms,
            frame,
        ) {
            Ok((job, start)) => match there_already(&maps, &job, start) {
                Some(version) => queue.results.push(found_here(job, start, version)),
                None => queue.waiting.push(ranked(job, origin, &settings)),
            },
            Err(failure) => queue.fail(&mut book, s.entity, s.ticket, failure),
        }
    }
    book.submitted.extend(submitted);
}

/// `job` as it waits, by who asked for it: how urgent it is, and whether it searches alone.
fn ranked(mut job: Job, origin: PathOrigin, settings: &TilepathSettings) -> Job {
    // The game's orders, the short trips of units making way for them, and followers stopping
    // in range (a path to where they stand), before the plugin's repaths.
    if matches!(
        origin,
        PathOrigin::User | PathOrigin::MakeWay | PathOrigin::StepAside | PathOrigin::InRange
    ) {
        job.priority = job.priority.saturating_add(settings.user_priority);
    }
    // A unit stopped short of a wall across its way stands still until its new path comes:
    // ahead of orders.
    if origin == PathOrigin::Blocked {
        job.priority = job
            .priority
            .saturating_add(settings.user_priority.saturating_mul(2));
    }
    // Searches around units in the way need the claims as they are now, not as a shared (or
    // cached) tree saw them: they search alone. Followers of one target share theirs.
    job.alone = !matches!(
        origin,
        PathOrigin::User | PathOrigin::GridEdit | PathOrigin::Revealed | PathOrigin::Pursuit
    );
    job
}
