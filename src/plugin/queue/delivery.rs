//! Receive: finished searches (inline, and from the worker channel) are checked against grid
//! edits made meanwhile and become outcomes; outcomes are delivered, exactly one per request, as
//! [`PathStatus`], [`NavPath`], a [`PathOutcome`] message and the same as an entity event.

use std::time::Duration;

use bevy::prelude::*;

use crate::core::{Cell, NavGrid, Path, passage_crossings};
use crate::plugin::diagnostics::{Cost, FrameTally, Phase, PhaseTimer, TilepathFrameStats};
use crate::plugin::map::NavMap;
use crate::plugin::movement::mover::Mover;
use crate::plugin::movement::state::PathProgress;
use crate::plugin::movement::vehicle::{DriveProgress, DriveSettings, DriveStatus, Vehicle};

/// The plans of the units that are vehicles now (one that stopped being a vehicle plans no more).
type Drives<'w, 's> = Query<'w, 's, &'static DriveProgress, With<Vehicle>>;
use crate::plugin::outcomes::{NavPath, OutcomeKind, PathOutcome, SearchKind};
use crate::plugin::request::{PathFailure, PathStatus, PendingRequests};
use crate::plugin::settings::TilepathSettings;
use crate::plugin::traffic::PassageTraffic;

use super::job::{Job, SearchResult};
use super::path_queue::{PathQueue, Ready};
use super::refine::{Patch, Refining, Rest, Rests, corridor, patch};
use super::workers::WorkerReport;

/// Priority boost of a worker search that has to run again because the grid changed under it
/// (ahead of newer requests).
const RESEARCH_BOOST: i32 = 1000;

/// What to do with a finished search.
enum Verdict {
    /// Its request was cancelled, replaced or despawned meanwhile: its outcome is already out.
    Stale,
    /// The grid changed under a worker's snapshot and its path is no longer legal: search again.
    Again(Job),
    /// It becomes its request's outcome.
    Outcome(Ready),
}

/// A wide unit's path delivered after at least this many wide units' paths (recorded since its
/// search priced passage traffic) cross one of its passages the other way is searched again
/// (once), with their traffic priced: see
/// [`CrowdSettings::passage_traffic`](crate::CrowdSettings::passage_traffic). One: with three,
/// of two columns of eight tanks searched in the same frame, ordered past each other and
/// delivered in turns, the first two of the second column kept their bridge (the other
/// column's first two were all they had not seen) and met the first column on it.
const REPRICE_AT: usize = 1;

/// Judges a finished search. `walked`: whether the plugin's movement walks the unit (only then
/// are its crossings recorded in `traffic`: nothing else would drop them as it walks past).
fn judge(
    r: SearchResult,
    book: &mut PendingRequests,
    (map, traffic, walked): (Option<&NavMap>, &mut PassageTraffic, bool),
    frame: u64,
) -> Verdict {
    let SearchResult {
        job,
        version,
        result,
        smoothed,
        worker,
        search,
        rest,
    } = r;
    if !book.is_current(job.entity, job.ticket) {
        return Verdict::Stale;
    }
    let Some(map) = map else {
        let ticket = book.take(job.entity, job.ticket).expect("checked current");
        let kind = OutcomeKind::Failed(PathFailure::NoMap);
        return Verdict::Outcome(Ready::new((job.entity, ticket), kind, None, None));
    };
    let grid = map.grid_of(job.class);
    let found = result.map(|p| with_corridor(grid, p, smoothed, rest));
    if worker && version != grid.version() && !still_valid(grid, &found) {
        // The grid changed while the worker searched and smoothed on its snapshot, and the
        // path is no longer legal: search again.
        return Verdict::Again(Job {
            priority: job.priority.saturating_add(RESEARCH_BOOST),
            enqueued: frame,
            ..job
        });
    }
    if let Ok((_, _, corridor)) = &found
        && let Some(again) = reprice(&job, (map, grid, corridor), (traffic, walked), frame)
    {
        return Verdict::Again(again);
    }
    let ticket = book.take(job.entity, job.ticket).expect("checked current");
    let (kind, path) = match found {
        Ok((p, points, corridor)) => {
            let waypoints = points.iter().map(|&g| map.grid_to_world(g)).collect();
            let path = NavPath {
                cells: p.cells,
                waypoints,
                corridor,
                cost: p.cost,
                length: p.length,
                goal: p.goal,
                map: job.map,
                class: job.class,
                origin: ticket.origin,
                search,
                ticket: ticket.id,
                request: job.request,
            };
            (
                OutcomeKind::Found {
                    length: p.length,
                    search,
                },
                Some(path),
            )
        }
        Err(e) => (OutcomeKind::Failed(e.into()), None),
    };
    Verdict::Outcome(Ready::new((job.entity, ticket), kind, path, rest))
}

/// A found path with its grid-space waypoints (the smoothed ones, or the cells' centers) and the
/// cells they cross.
fn with_corridor(
    grid: &NavGrid,
    p: Path,
    smoothed: Vec<Vec2>,
    rest: Option<Rest>,
) -> (Path, Vec<Vec2>, Vec<Cell>) {
    let (points, corridor) = if smoothed.is_empty() {
        let centers = p.cells.iter().map(|&c| grid.cell_center(c)).collect();
        (centers, p.cells.clone())
    } else {
        let corridor = corridor(grid, &p.cells, &smoothed, rest);
        (smoothed, corridor)
    };
    (p, points, corridor)
}

/// Whether a path a worker found on a snapshot of a grid changed since is still legal step by
/// step and its lines cross no cell blocked since (the whole path is smoothed on the worker).
fn still_valid<E>(grid: &NavGrid, found: &Result<(Path, Vec<Vec2>, Vec<Cell>), E>) -> bool {
    found.as_ref().is_ok_and(|(p, _, corridor)| {
        grid.steps_allowed(&p.cells) && corridor.iter().all(|&c| grid.is_walkable(c))
    })
}

/// A wide unit's path along `corridor`: searched again (the job returned) if an army coming
/// the other way through one of its passages was delivered after its search priced the
/// traffic; else its crossings are recorded now (if the plugin's movement walks it: `walked`),
/// for the searches judged after it to see. (Its crossings are found only if the check or the
/// record needs them.)
fn reprice(
    job: &Job,
    (map, grid, corridor): (&NavMap, &NavGrid, &[Cell]),
    (traffic, walked): (&mut PassageTraffic, bool),
    frame: u64,
) -> Option<Job> {
    let priced = job.priced.filter(|_| !job.repriced);
    if map.footprint_of(job.class) == 0 || (priced.is_none() && !walked) {
        return None;
    }
    let crossings = passage_crossings(grid, corridor);
    if let Some(since) = priced
        && traffic.unseen_against(job.map, job.entity, &crossings, since) >= REPRICE_AT
    {
        return Some(Job {
            priority: job.priority.saturating_add(RESEARCH_BOOST),
            enqueued: frame,
            priced: None,
            repriced: true,
            ..job.clone()
        });
    }
    if walked {
        traffic.record_crossings(job.entity, job.map, job.ticket, crossings, frame);
    }
    None
}

/// Receive: take finished searches (from inline slices and the worker channel), judge them, and
/// deliver outcomes while the budget lasts (the rest go out next frame, oldest first).
#[allow(clippy::too_many_arguments)]
pub(crate) fn receive_results(
    mut queue: ResMut<PathQueue>,
    mut book: ResMut<PendingRequests>,
    tally: ResMut<FrameTally>,
    mut stats: ResMut<TilepathFrameStats>,
    settings: Res<TilepathSettings>,
    maps: Query<&NavMap>,
    mut statuses: Query<&mut PathStatus>,
    mut commands: Commands,
    mut writer: MessageWriter<PathOutcome>,
    mut traffic: ResMut<PassageTraffic>,
    movers: Query<(), With<Mover>>,
    drives: (Option<Res<DriveSettings>>, Drives),
) {
    let mut tally = PhaseTimer::start(tally, Phase::Receive, settings.lockstep.is_some());
    let budget = settings.time_budget.saturating_sub(tally.spent());
    let queue = &mut *queue;
    let book = &mut *book;
    judge_results(
        queue,
        book,
        (&mut tally, budget),
        (&maps, &mut traffic, &movers),
        &settings,
    );
    // Vehicles' outcomes wait for their plans where the movement plugin drives them.
    let drives = drives.0.is_some().then_some(&drives.1);
    deliver_ready(
        queue,
        book,
        (&mut tally, budget),
        (&mut statuses, &mut commands, &mut writer),
        drives,
    );
    stats.queue_len = queue.waiting_len() + book.submitted.len();
    stats.searching = queue.searching();
    stats.smoothing = queue.smoothing();
    stats.region_maps_building = queue.regions.building();
    queue.oldest_wait = book.oldest_wait(book.frame);
    stats.oldest_wait_frames = queue.oldest_wait;
    tally.charge(Cost::Pending(book.len() as u64));
}

/// Takes the worker results the budget allows (the rest waits in the channel; in lockstep mode
/// they are taken when due, at the start of the service phase), then judges finished searches:
/// judging builds each path's waypoints and corridor, within the budget too (at least one a
/// frame); the rest waits for the next frame.
fn judge_results(
    queue: &mut PathQueue,
    book: &mut PendingRequests,
    (tally, budget): (&mut PhaseTimer, Duration),
    (maps, traffic, movers): (
        &Query<&NavMap>,
        &mut PassageTraffic,
        &Query<(), With<Mover>>,
    ),
    settings: &TilepathSettings,
) {
    let frame = book.frame;
    let mut results = std::mem::take(&mut queue.results);
    while settings.lockstep.is_none() && tally.elapsed() < budget / 2 {
        let Some(report) = queue.workers.next_report(None) else {
            break;
        };
        take_report(
            queue,
            book,
            report,
            &mut results,
            frame,
            settings.tree_cache,
        );
    }
    let mut results = results.into_iter();
    for r in results.by_ref() {
        let cells = r.result.as_ref().map_or(0, |p| p.cells.len() as u64);
        let map = maps.get(r.job.map).ok();
        let walked = movers.contains(r.job.entity);
        match judge(r, book, (map, traffic, walked), frame) {
            Verdict::Stale => {}
            Verdict::Again(job) => queue.waiting.push(job),
            Verdict::Outcome(ready) => queue.ready.push(ready),
        }
        tally.charge(Cost::Deliver(cells));
        if tally.elapsed() >= budget {
            break;
        }
    }
    queue.results.extend(results);
}

/// Delivers the outcomes ready, within the budget: cancellations first (they happened before
/// this frame's searches ended), then the rest. A vehicle's found path goes to it at once, and
/// its outcome when its plan settles (see [`drive_of`]).
fn deliver_ready(
    queue: &mut PathQueue,
    book: &mut PendingRequests,
    (tally, budget): (&mut PhaseTimer, Duration),
    (statuses, commands, writer): (
        &mut Query<&mut PathStatus>,
        &mut Commands,
        &mut MessageWriter<PathOutcome>,
    ),
    drives: Option<&Drives>,
) {
    let frame = book.frame;
    book.in_delivery += book.cancelled.len();
    let cancelled = (book.cancelled.drain(..))
        .map(|c| Ready::new((c.entity, c.ticket), OutcomeKind::Cancelled, None, None));
    let mut to_deliver: Vec<Ready> = cancelled.collect();
    to_deliver.append(&mut queue.ready);
    let mut to_deliver = to_deliver.into_iter();
    let mut held = Vec::new();
    for mut ready in to_deliver.by_ref() {
        match drive_of(&ready, drives) {
            Drive::Now => {}
            Drive::Give => {
                start_refining(queue, &mut ready, frame);
                give_path(&mut ready, commands);
                held.push(ready);
                continue;
            }
            Drive::Wait => {
                held.push(ready);
                continue;
            }
            Drive::Settled(kind) => {
                if let OutcomeKind::Failed(_) = kind {
                    // No plan: the path it cannot drive goes (as a failed search's would).
                    ready.given = false;
                }
                ready.kind = kind;
            }
        }
        let latency = (frame - ready.ticket.frame) as u32;
        let cells = ready.path.as_ref().map_or(0, |p| p.cells.len() as u64);
        if let OutcomeKind::Found {
            search: SearchKind::Shared,
            ..
        } = ready.kind
        {
            tally.shared += 1;
        }
        start_refining(queue, &mut ready, frame);
        deliver(ready, latency, book, statuses, commands, writer);
        book.in_delivery -= 1;
        tally.finished += 1;
        tally.latency_sum += latency as u64;
        tally.charge(Cost::Outcome(cells));
        if tally.elapsed() >= budget {
            break;
        }
    }
    queue.ready.extend(held);
    queue.ready.extend(to_deliver);
}

/// Where a ready outcome stands against the plan of legal turns its unit drives by, if the unit
/// is a [`Vehicle`](crate::Vehicle): a found path is only drivable once the vehicle has a plan
/// for it, so its outcome waits for that plan.
enum Drive {
    /// Not a vehicle's found path (or vehicles are not driven): it goes out now.
    Now,
    /// A vehicle's found path: the path goes to the vehicle now, the outcome waits.
    Give,
    /// The vehicle is still planning.
    Wait,
    /// The plan settled, and the outcome is this: found (it drives), failed with
    /// [`PathFailure::NoDrivableWay`] (no plan reaches the goal), or cancelled (a newer path
    /// came to it first).
    Settled(OutcomeKind),
}

/// See [`Drive`]; `drives` are the vehicles' plans, `None` where no movement drives them.
fn drive_of(ready: &Ready, drives: Option<&Drives>) -> Drive {
    let OutcomeKind::Found { .. } = ready.kind else {
        return Drive::Now;
    };
    let Some(progress) = drives.and_then(|d| d.get(ready.entity).ok()) else {
        return Drive::Now;
    };
    if !ready.given {
        return Drive::Give;
    }
    let ticket = ready.ticket.id;
    match (progress.ticket, progress.status) {
        (Some(t), _) if t > ticket => Drive::Settled(OutcomeKind::Cancelled),
        (Some(t), DriveStatus::NoWay) if t == ticket => {
            Drive::Settled(OutcomeKind::Failed(PathFailure::NoDrivableWay))
        }
        (Some(t), DriveStatus::Driving | DriveStatus::Arrived)
            if t == ticket && !progress.replan =>
        {
            Drive::Settled(ready.kind)
        }
        _ => Drive::Wait,
    }
}

/// Gives a vehicle its found path ahead of the outcome (see [`Drive::Give`]).
fn give_path(ready: &mut Ready, commands: &mut Commands) {
    if let Some(path) = ready.path.take()
        && let Ok(mut e) = commands.get_entity(ready.entity)
    {
        e.try_insert(path);
    }
    ready.given = true;
}

/// One worker report: results to judge, jobs to wait again (a stopped search's, a shared
/// search's members it did not serve or could not, if their requests are still pending), its
/// tree to the cache, smoothed rests to patch in.
pub(super) fn take_report(
    queue: &mut PathQueue,
    book: &PendingRequests,
    report: WorkerReport,
    results: &mut Vec<SearchResult>,
    frame: u64,
    tree_cache: usize,
) {
    let pending = |j: &Job| book.is_current(j.entity, j.ticket);
    match report {
        WorkerReport::One(_, r, _) => results.push(r),
        // Stopped for a more urgent search: it waits again, keeping its age.
        WorkerReport::Stopped(_, job) => queue.waiting.extend(Some(job).filter(pending)),
        WorkerReport::Served(_, r) => results.push(r),
        WorkerReport::Shared(_, s) => {
            queue.waiting.extend(s.unserved.into_iter().filter(pending));
            let alone = s.alone.into_iter().filter(pending);
            queue.waiting.extend(alone.map(|job| Job {
                enqueued: frame,
                ..job
            }));
            queue
                .trees
                .put(s.key, s.goal, s.tree, s.overlay, frame, tree_cache);
        }
    }
}

/// The rest of a path about to be delivered is smoothed afterwards, inline (see `refine`; a path
/// found on a worker comes smoothed whole and has none).
fn start_refining(queue: &mut PathQueue, ready: &mut Ready, frame: u64) {
    let Some(path) = &ready.path else {
        return;
    };
    let rest = ready
        .rest
        .take()
        .map(|rest| Refining::new(ready.entity, path, rest, (frame, frame)));
    queue.refining.delivered(ready.entity, path.ticket, rest);
}

/// Delivers one outcome: the unit's status and path (unless a newer request of the unit is
/// pending), the message and the entity event.
fn deliver(
    ready: Ready,
    latency: u32,
    book: &PendingRequests,
    statuses: &mut Query<&mut PathStatus>,
    commands: &mut Commands,
    writer: &mut MessageWriter<PathOutcome>,
) {
    let Ready {
        entity,
        ticket,
        kind,
        path,
        given,
        ..
    } = ready;
    // A vehicle's path cancelled by a newer one given to it leaves its status and path alone.
    let superseded = given && kind == OutcomeKind::Cancelled;
    let replaced = book.contains(entity) || superseded;
    if let Ok(mut status) = statuses.get_mut(entity)
        && !replaced
    {
        *status = match kind {
            OutcomeKind::Found { .. } => PathStatus::Found,
            OutcomeKind::Failed(f) => PathStatus::Failed(f),
            OutcomeKind::Cancelled => PathStatus::Cancelled,
        };
    }
    if let Ok(mut e) = commands.get_entity(entity) {
        match path {
            Some(p) => {
                e.try_insert(p);
            }
            None if !replaced && !given => {
                e.try_remove::<NavPath>();
            }
            None => {}
        }
    }
    let outcome = PathOutcome {
        entity,
        ticket: ticket.id,
        origin: ticket.origin,
        kind,
        latency_frames: latency,
    };
    writer.write(outcome);
    commands.trigger(outcome);
}

/// Receive: patches smoothed rests into their units' paths (without marking the path changed:
/// the unit walks on as before, now toward smoothed waypoints), and reports the frame's rests
/// that left ([`TilepathFrameStats::smoothed_rests`]).
pub(crate) fn apply_refined(
    mut queue: ResMut<PathQueue>,
    book: Res<PendingRequests>,
    maps: Query<&NavMap>,
    mut paths: Query<(&mut NavPath, Option<&PathProgress>)>,
    mut stats: ResMut<TilepathFrameStats>,
) {
    let queue = &mut *queue;
    let frame = book.frame;
    for refined in std::mem::take(&mut queue.refined) {
        let left = |rests: &mut Rests, smoothed| {
            rests.left(
                refined.entity,
                refined.ticket,
                refined.delivered,
                frame,
                smoothed,
            );
        };
        let unit = paths.get_mut(refined.entity).ok();
        let Some(((mut path, progress), map)) =
            unit.and_then(|u| Some((u.0.map, u)).and_then(|(m, u)| Some((u, maps.get(m).ok()?))))
        else {
            left(&mut queue.refining, false);
            continue;
        };
        let walking_to = progress.map_or(0, |p| p.waypoint);
        queue.patched.insert(refined.entity);
        let path = path.bypass_change_detection();
        let (rest, since) = match patch(path, map, &refined, walking_to) {
            Patch::Done => {
                left(&mut queue.refining, true);
                continue;
            }
            Patch::Stale => {
                left(&mut queue.refining, false);
                continue;
            }
            Patch::Again(rest) => (rest, refined.since),
            Patch::Next(rest) => (rest, frame),
        };
        let again = Refining::new(refined.entity, path, rest, (since, refined.delivered));
        queue.refining.again(again, frame);
    }
    let waits = &mut queue.refining.waits;
    stats.smoothed_rests = std::mem::take(&mut waits.smoothed);
    stats.abandoned_rests = std::mem::take(&mut waits.abandoned);
}
