//! Service: start at most `searches_per_frame` searches a frame (the start policy picks which),
//! inline or on workers, and advance inline searches and their smoothing within the frame's
//! budget.

use std::time::Duration;

use bevy::ecs::entity::EntityHashSet;
use bevy::prelude::*;

use crate::core::{Cell, CellOverlay, GoalTree};
use crate::plugin::agent::NavAgent;
use crate::plugin::claims::Claims;
use crate::plugin::classes::ClassId;
use crate::plugin::diagnostics::{Cost, FrameTally, Phase, PhaseTimer, TilepathFrameStats};
use crate::plugin::map::NavMap;
use crate::plugin::outcomes::SearchKind;
use crate::plugin::pursuit::Anchors;
use crate::plugin::request::{PathFailure, PathStatus, PendingRequests};
use crate::plugin::settings::{TilepathSettings, WorkerMode};
use crate::plugin::traffic::PassageTraffic;

use super::delivery::take_report;
use super::inline::{InlineJob, SLICE, Slice, Smoothing};
use super::job::{
    Job, Overlay, SearchResult, claim_price, grow_overlay, price_stopped, with_traffic,
};
use super::path_queue::PathQueue;
use super::policy::aged_priority;
use super::refine::{BEHIND_FRAMES, BURST_RESTS, REST_SHARE, RestUnits};
use super::shared::{Member, SharedSearch, SharedStep};
use super::validate::{Inside, unit_cell};

/// Where a unit searched for stands, its body, and whether it is crossing a link.
type Placed = (
    &'static Transform,
    Option<&'static NavAgent>,
    Inside<'static>,
);
use super::workers::{HANDOFF_PER_RUNNER, Pace, WorkerSearch};

/// Grows the searches' scratch space to a new map's size as soon as the map appears, so the
/// first frames with requests do not pay for it (measured: about 20 ms for two 512 x 512
/// scratches, mostly first-touch page faults): the inline searches' here, the worker searches'
/// on a worker (in lockstep mode the first results were 15-30 ms late without it, and their
/// tick waited for them; 3-4 ms with it).
pub(crate) fn prepare_scratch(
    mut queue: ResMut<PathQueue>,
    settings: Res<TilepathSettings>,
    maps: Query<&NavMap, Added<NavMap>>,
) {
    for map in &maps {
        match settings.workers {
            WorkerMode::Inline => {
                let want = settings.max_inline_searches.max(1);
                while queue.pool.len() < want {
                    queue.pool.push(Box::default());
                }
                for search in &mut queue.pool {
                    search.reserve_for(map.grid());
                }
                if settings.share_searches {
                    queue.trees.reserve_for(map.grid());
                }
            }
            WorkerMode::Async { max_in_flight } => {
                let grid = map.snapshot_of(ClassId::default());
                queue.workers.warm(grid, max_in_flight.max(1));
            }
        }
    }
}

/// Fewer requests than this to one cell (not a group order's) search alone where the grid has
/// a jump table ([`TilepathSettings::jump_tables`]) rather than sharing a tree: a jump point
/// search reading the table costs a tenth of an A* or less on the MovingAI maps, while a shared
/// tree costs at least one A* (a backward search from the goal to every member), more the
/// further apart they start. 2,000 random requests on 512 x 512, where a few goals repeat: see
/// BENCHMARKS.md, how the defaults were chosen: search.
const SHARE_WITH_JUMP_TABLE: usize = 8;

/// Whether the first of `members` requests to one cell searches alone ([`SHARE_WITH_JUMP_TABLE`]):
/// few of them, single-goal requests (a group order's members share for their lanes), on a
/// grid whose searches read a jump table.
fn alone_with_jump_table(
    first: &Job,
    members: usize,
    grid: &crate::core::NavGrid,
    settings: &TilepathSettings,
) -> bool {
    members < SHARE_WITH_JUMP_TABLE
        && matches!(first.goal, super::job::JobGoal::Single(_))
        && grid.has_jump_table()
        && settings.search.jumps_on(grid)
}

/// Starts waiting searches (the service system's borrowed parameters).
struct Starter<'a, 'w, 's, 'sw, 'ss> {
    settings: &'a TilepathSettings,
    claims: &'a Claims,
    traffic: &'a PassageTraffic,
    anchors: &'a Anchors,
    maps: &'a Query<'w, 's, &'static NavMap>,
    units: &'a Query<'w, 's, Placed>,
    statuses: &'a mut Query<'sw, 'ss, &'static mut PathStatus>,
}

impl Starter<'_, '_, '_, '_, '_> {
    /// Starts up to `slots` searches (never more than `searches_per_frame` in a frame): highest
    /// aged priority first, FIFO among equals. Inline searches begin here; worker searches are
    /// spawned on the `AsyncComputeTaskPool`.
    /// Starting stops once the phase's clock reaches `until` (after one start at least): with
    /// workers, a start (claims overlay, grid snapshot) is main-thread work, and up to
    /// `HANDOFF_PER_RUNNER` a runner may be due in one frame (measured: 1.6-2.5 ms a frame
    /// starting 64 searches among 10,000 moving units). The jobs not started wait on, keeping
    /// their age.
    fn start(
        &mut self,
        queue: &mut PathQueue,
        book: &mut PendingRequests,
        tally: &mut PhaseTimer,
        slots: usize,
        until: Duration,
    ) {
        let settings = self.settings;
        let (frame, ageing) = (book.frame, settings.ageing_frames);
        let left = settings
            .searches_per_frame
            .saturating_sub(tally.started as usize);
        let (starting, looked) =
            queue
                .waiting
                .take_starts(slots.min(left), left, frame, |j: &Job| {
                    (
                        aged_priority(j.priority, j.enqueued, frame, ageing),
                        j.ticket,
                    )
                });
        tally.charge(Cost::Pick(looked));
        let share = settings.share_searches
            && settings.search.turn_penalty == 0
            && settings.search.max_expansions.is_none();
        let mut starting = std::collections::VecDeque::from(starting);
        let mut first = true;
        while let Some(job) = starting.pop_front() {
            if !first && tally.elapsed() >= until || queue.workers.full() {
                queue.waiting.push(job);
                queue.waiting.extend(starting.drain(..));
                break;
            }
            first = false;
            tally.started += 1;
            tally.charge(Cost::Start);
            let Some((start, radius)) = self.place(queue, book, &job) else {
                continue;
            };
            match job.shared_goal() {
                Some(goal) if share => {
                    // Requests starting with it to the same goal join it too.
                    let same = |j: &Job| {
                        (j.map, j.class) == (job.map, job.class) && j.shared_goal() == Some(goal)
                    };
                    let (joining, rest): (Vec<Job>, Vec<Job>) = starting.drain(..).partition(same);
                    starting.extend(rest);
                    queue.waiting.extend(joining);
                    self.start_shared(queue, book, tally, job, goal, start, radius);
                }
                _ => self.start_own(queue, book, tally, job, start, radius),
            }
        }
    }

    /// Where `job`'s unit stands and its body radius; `None` (and the job failed) if its map or
    /// place is gone. Its status says searching only once a search takes it
    /// ([`Starter::searching`]): a request placed and then sent back to wait stays queued.
    fn place(
        &mut self,
        queue: &mut PathQueue,
        book: &mut PendingRequests,
        job: &Job,
    ) -> Option<(Cell, f32)> {
        let Ok(map) = self.maps.get(job.map) else {
            queue.fail(book, job.entity, job.ticket, PathFailure::NoMap);
            return None;
        };
        // Despawned meanwhile (its request was forgotten) or without a place.
        let start = self
            .units
            .get(job.entity)
            .ok()
            .and_then(|(transform, agent, inside)| {
                Some((unit_cell(map, transform, inside)?, agent))
            });
        let Some((start, agent)) = start else {
            queue.fail(book, job.entity, job.ticket, PathFailure::StartOutOfBounds);
            return None;
        };
        // Smoothing keeps the body clear of the class grid's walls, grown by its footprint.
        let radius = agent.map_or(0.0, |a| a.radius);
        Some((start, map.wall_radius_of(job.class, radius)))
    }

    /// Marks `entity`'s request as being searched for.
    fn searching(&mut self, entity: Entity) {
        if let Ok(mut s) = self.statuses.get_mut(entity) {
            *s = PathStatus::Searching;
        }
    }

    /// Starts `job`'s own search, inline or on a worker; its claims overlay, and its route
    /// through the region map if it takes one inline, are counted in `tally`.
    fn start_own(
        &mut self,
        queue: &mut PathQueue,
        book: &mut PendingRequests,
        tally: &mut FrameTally,
        job: Job,
        start: Cell,
        radius: f32,
    ) {
        self.searching(job.entity);
        let settings = self.settings;
        let map = self.maps.get(job.map).expect("placed on it");
        let origin = book.origin(job.entity);
        let overlay = Overlay::new(
            (self.claims, self.traffic, self.anchors),
            settings,
            &job,
            map,
            start,
            origin,
        );
        tally.charge(Cost::Overlay(overlay.cells.len() as u64));
        let mut job = job;
        job.priced = overlay.traffic.map(|_| book.frame);
        let grid = map.grid_of(job.class);
        // The region map's route does not know the traffic priced in passages.
        let regions = (job.wants_regions(start, origin, settings, grid)
            && overlay.traffic != Some(true))
        .then(|| queue.regions.current(job.map, job.class, grid).cloned())
        .flatten();
        match settings.workers {
            WorkerMode::Inline => {
                let search = queue.pool.pop().unwrap_or_default();
                match InlineJob::begin(
                    search,
                    grid,
                    regions.as_deref(),
                    job,
                    start,
                    radius,
                    overlay,
                    &settings.search,
                ) {
                    Ok(inline) => {
                        tally.charge_on(grid, Cost::Route(inline.route_pops()));
                        queue.inline.push(inline)
                    }
                    Err((job, search, e)) => {
                        queue.fail(book, job.entity, job.ticket, e.into());
                        queue.pool.push(search);
                    }
                }
            }
            WorkerMode::Async { max_in_flight } => {
                let grid = map.snapshot_of(job.class);
                let priority = aged(&job, book.frame, settings.ageing_frames);
                queue.workers.spawn(
                    job,
                    WorkerSearch {
                        grid,
                        start,
                        config: settings.search,
                        overlay,
                        smoothing: settings
                            .smoothing
                            .then_some(settings.smooth_before_delivery),
                        radius,
                        regions,
                    },
                    priority,
                    max_in_flight,
                )
            }
        }
    }

    /// Starts a shared search to `goal` for `first` and every waiting request that shares its
    /// goal, or adds them to the one in progress; a tree for `goal` in the cache goes on where
    /// it stopped.
    #[allow(clippy::too_many_arguments)]
    fn start_shared(
        &mut self,
        queue: &mut PathQueue,
        book: &mut PendingRequests,
        tally: &mut FrameTally,
        first: Job,
        goal: Cell,
        start: Cell,
        radius: f32,
    ) {
        let (map_entity, class) = (first.map, first.class);
        let mut members = self.gather(queue, book, Member::new(first, start, radius), goal);
        let map = self.maps.get(map_entity).expect("placed on it");
        let grid = map.grid_of(class);
        let inline = self.settings.workers == WorkerMode::Inline;
        if inline
            && let Some(s) = queue
                .shared
                .iter_mut()
                .find(|s| (s.map, s.class, s.goal) == (map_entity, class, goal))
        {
            for m in &members {
                self.searching(m.job.entity);
            }
            s.add(grid, members);
            return;
        }
        // A lone request with no tree to reuse searches alone: a tree for it would cost as much
        // as its own A*, and random goals would only churn the cache. So does the first of a
        // few requests to one cell where jump tables serve (the others wait for their own
        // turns): see `alone_with_jump_table`.
        if !queue.trees.has((map_entity, class), goal, grid.version())
            && (members.len() == 1
                || alone_with_jump_table(&members[0].job, members.len(), grid, self.settings))
        {
            let mut members = members.into_iter();
            let m = members.next().expect("one member at least");
            queue.waiting.extend(members.map(|m| m.job));
            self.start_own(queue, book, tally, m.job, m.start, m.radius);
            return;
        }
        let (tree, overlay, fresh) = self.tree_for(queue, book, tally, (map, &mut members), goal);
        for m in &members {
            self.searching(m.job.entity);
        }
        let config = &self.settings.search;
        let mut shared = SharedSearch::new(
            (map_entity, class),
            goal,
            tree,
            overlay,
            fresh,
            self.settings.lanes,
        );
        shared.add(grid, members);
        match self.settings.workers {
            WorkerMode::Inline => queue.shared.push(shared),
            WorkerMode::Async { max_in_flight } => {
                let smoothing = self
                    .settings
                    .smoothing
                    .then_some(self.settings.smooth_before_delivery);
                let grid = map.snapshot_of(class);
                queue
                    .workers
                    .spawn_shared(shared, grid, *config, smoothing, max_in_flight);
            }
        }
    }

    /// The members of a shared search to `goal`: `first`, and every waiting request of its map
    /// and class that shares its goal and is placed.
    fn gather(
        &mut self,
        queue: &mut PathQueue,
        book: &mut PendingRequests,
        first: Member,
        goal: Cell,
    ) -> Vec<Member> {
        let (map_entity, class) = (first.job.map, first.job.class);
        let mut members = vec![first];
        let joining = if queue.waiting.has_goal(map_entity, class, goal) {
            queue.waiting.extract_if(|j| {
                (j.map, j.class) == (map_entity, class) && j.shared_goal() == Some(goal)
            })
        } else {
            Vec::new()
        };
        for job in joining {
            if !book.is_current(job.entity, job.ticket) {
                continue;
            }
            if let Some((start, radius)) = self.place(queue, book, &job) {
                members.push(Member::new(job, start, radius));
            }
        }
        members
    }

    /// The tree a shared search to `goal` grows, with its overlay, and whether it is fresh: the
    /// cache's, which priced the traffic of its time, unless members are searched again for
    /// traffic it did not see; else a new one with the members' overlay.
    fn tree_for(
        &self,
        queue: &mut PathQueue,
        book: &PendingRequests,
        tally: &mut FrameTally,
        (map, members): (&NavMap, &mut [Member]),
        goal: Cell,
    ) -> (Box<GoalTree>, Vec<(Cell, CellOverlay)>, bool) {
        let (map_entity, class) = (members[0].job.map, members[0].job.class);
        let grid = map.grid_of(class);
        let cached = if members.iter().any(|m| m.job.repriced) {
            None
        } else {
            queue.trees.take((map_entity, class), goal, grid.version())
        };
        if let Some((tree, overlay)) = cached {
            return (tree, overlay, false);
        }
        let follows = members
            .iter()
            .all(|m| m.job.follows(book.origin(m.job.entity)));
        let (overlay, priced) = shared_overlay(
            (self.claims, self.traffic, self.anchors),
            self.settings,
            (map_entity, class, goal, follows),
            map,
            members,
        );
        tally.charge(Cost::Overlay(overlay.len() as u64));
        if priced.is_some() {
            for m in members.iter_mut() {
                m.job.priced = Some(book.frame);
            }
        }
        (queue.trees.fresh(), overlay, true)
    }
}

/// `job`'s aged priority at `frame` (see `policy`), as a priority of the workers' hand-off.
fn aged(job: &Job, frame: u64, ageing: u32) -> i32 {
    aged_priority(job.priority, job.enqueued, frame, ageing).clamp(i32::MIN as i64, i32::MAX as i64)
        as i32
}

/// The overlay of a shared search to `goal`: claims and stopped cells of units that are not its
/// members, within the claim radius of the box of their starts, and for a wide class the
/// passage traffic against the way from the box's center to the goal (and whether it looked at
/// traffic, and priced some: see [`with_traffic`]). A search serving only follow orders
/// (`follows`) leaves out the claims and cells of units following its members' targets
/// (`anchors`), and prices the other claims and stopped units at
/// [`TilepathSettings::follow_claim_penalty`] ([`claim_price`], [`price_stopped`]).
fn shared_overlay(
    (claims, traffic, anchors): (&Claims, &PassageTraffic, &Anchors),
    settings: &TilepathSettings,
    (map_entity, class, goal, follows): (Entity, ClassId, Cell, bool),
    map: &NavMap,
    members: &[Member],
) -> (Vec<(Cell, CellOverlay)>, Option<bool>) {
    let ids: EntityHashSet = members.iter().map(|m| m.job.entity).collect();
    let (lo, hi) = members.iter().fold(
        (Cell::splat(i32::MAX), Cell::splat(i32::MIN)),
        |(lo, hi), m| (lo.min(m.start), hi.max(m.start)),
    );
    let costs = map.grid().rules().costs;
    let claimed = costs.from_tiles(claim_price(settings, follows));
    // The members' targets, each once (followers of one target share their searches).
    let mut targets: Vec<Entity> = Vec::new();
    if follows {
        targets.extend(
            members
                .iter()
                .filter_map(|m| anchors.target_of(m.job.entity)),
        );
        targets.sort_unstable();
        targets.dedup();
    }
    let mut cells = claims.overlay_around(
        map_entity,
        |e| ids.contains(&e) || anchors.follows_one_of(e, &targets),
        (lo, hi),
        settings.claim_radius,
        claimed,
        settings.avoid_stopped_units,
    );
    if follows {
        price_stopped(&mut cells, claimed);
    }
    let footprint = map.footprint_of(class);
    let way = goal - (lo + hi) / 2;
    with_traffic(
        grow_overlay(cells, footprint),
        traffic,
        settings,
        (map_entity, footprint, costs),
        |e| ids.contains(&e),
        way,
    )
}

/// Service: start at most `searches_per_frame` searches (highest aged priority first, FIFO among
/// equals) and advance inline searches within the frame's budgets.
#[allow(clippy::too_many_arguments)]
pub(crate) fn service_queue(
    mut queue: ResMut<PathQueue>,
    mut book: ResMut<PendingRequests>,
    tally: ResMut<FrameTally>,
    mut stats: ResMut<TilepathFrameStats>,
    settings: Res<TilepathSettings>,
    claims: Res<Claims>,
    traffic: Res<PassageTraffic>,
    anchors: Res<Anchors>,
    maps: Query<&'static NavMap>,
    units: Query<Placed>,
    mut statuses: Query<&'static mut PathStatus>,
    rest_units: RestUnits,
    time: Res<Time>,
) {
    let lockstep = settings.lockstep.as_ref();
    let mut tally = PhaseTimer::start(tally, Phase::Service, lockstep.is_some());
    let budget = service_budget(&settings, &tally, &queue);
    let queue = &mut *queue;
    let book = &mut *book;

    // Drop waiting jobs that were cancelled, replaced or despawned.
    if std::mem::take(&mut book.stale) {
        queue
            .waiting
            .retain(|j| book.is_current(j.entity, j.ticket));
    }

    smooth_urgent_rests(
        queue,
        book.frame,
        (&rest_units, &maps),
        (&mut tally, &mut stats),
        &settings,
        (budget, time.elapsed_secs()),
    );
    take_reports(queue, book, &mut tally, &settings);
    let max_inline = settings.max_inline_searches.max(1);
    let slots = free_slots(queue, &settings, max_inline);
    preempt(queue, book, &settings);
    let mut starter = Starter {
        settings: &settings,
        claims: &claims,
        traffic: &traffic,
        anchors: &anchors,
        maps: &maps,
        units: &units,
        statuses: &mut statuses,
    };
    starter.start(queue, book, &mut tally, slots, budget);

    let mut work = Work {
        settings: &settings,
        maps: &maps,
        stats: &mut stats,
        budget,
        max_inline,
    };
    work.until_budget(queue, book, &mut starter, &mut tally);
}

/// Rests no unit will walk leave; the others go most urgent first. Urgent rests are smoothed
/// first, within their share of the budget (inline a quarter of the whole budget, not of what
/// is left once delivery's reserve is gone, or half of it while a burst of late rests waits;
/// with workers, whose paths come smoothed whole, rests come only from a loaded save and may
/// take half, the main thread running no searches; a quarter of the share at least, however
/// long the triage took): those due (their units are about to walk raw cell centers), then the
/// late unless the queue is behind (its searches go first then).
fn smooth_urgent_rests(
    queue: &mut PathQueue,
    frame: u64,
    (rest_units, maps): (&RestUnits, &Query<&'static NavMap>),
    (tally, stats): (&mut PhaseTimer, &mut TilepathFrameStats),
    settings: &TilepathSettings,
    (budget, now): (Duration, f32),
) {
    let rests = queue.refining.triage(rest_units, maps, frame, now);
    tally.charge(Cost::Triage {
        rests: rests.looked.0,
        reads: rests.looked.1,
    });
    stats.refining = queue.refining.len();
    stats.oldest_rest_frames = rests.oldest.min(u32::MAX as u64) as u32;
    stats.walking_raw = rests.walking_raw;
    let behind = u64::from(queue.oldest_wait) > BEHIND_FRAMES;
    let burst = !behind && rests.late >= BURST_RESTS;
    let share = match settings.workers {
        WorkerMode::Inline if burst => (settings.time_budget / 2).min(budget),
        WorkerMode::Inline => (settings.time_budget / REST_SHARE).min(budget),
        WorkerMode::Async { .. } => budget / 2,
    };
    let until = share.max(tally.elapsed() + share / 4);
    let mut urgent = rests.due + if behind { 0 } else { rests.late };
    while urgent > 0 && tally.elapsed() < until {
        if refine_step(queue, maps, tally, frame) {
            urgent -= 1;
        }
    }
}

/// In lockstep mode, when worker searches handed off at tick `now` are due (see
/// [`Lockstep::worker_budget`](crate::Lockstep::worker_budget)); `None` otherwise (they are
/// taken back whenever they are done).
fn worker_pace(settings: &TilepathSettings, now: u64) -> Option<Pace> {
    let lockstep = settings.lockstep.as_ref()?;
    let runners = match settings.workers {
        WorkerMode::Async { max_in_flight } => max_in_flight.max(1) as u64,
        WorkerMode::Inline => 1,
    };
    let per_runner = u64::try_from(lockstep.worker_budget.as_nanos()).unwrap_or(u64::MAX);
    Some(Pace {
        now,
        ticks: u64::from(lockstep.worker_ticks.max(1)),
        per_tick: per_runner.saturating_mul(runners).max(1),
    })
}

/// Worker searches done since the last receive phase free their slots now (they are judged
/// and delivered in this frame's receive phase); in lockstep mode, those due this tick
/// (waiting for them if they are late) and no others.
fn take_reports(
    queue: &mut PathQueue,
    book: &mut PendingRequests,
    tally: &mut PhaseTimer,
    settings: &TilepathSettings,
) {
    let lockstep = settings.lockstep.as_ref();
    let mut reports = std::mem::take(&mut queue.results);
    let due = lockstep.map(|_| book.frame);
    queue.workers.set_pace(worker_pace(settings, book.frame));
    while let Some(report) = queue.workers.next_report(due) {
        tally.charge(Cost::Report);
        take_report(
            queue,
            book,
            report,
            &mut reports,
            book.frame,
            settings.tree_cache,
        );
    }
    queue.results = reports;
    tally.worker_wait += queue.workers.take_waited();
}

/// Searches that may start: as many as there are free slots (inline searches in progress, or
/// worker searches handed off: `HANDOFF_PER_RUNNER` per runner).
fn free_slots(queue: &PathQueue, settings: &TilepathSettings, max_inline: usize) -> usize {
    match settings.workers {
        WorkerMode::Inline => max_inline.saturating_sub(queue.inline.len() + queue.shared.len()),
        // (In lockstep mode a search holds its slot until it is due, done or not: a runner has
        // `worker_ticks` times the slots, so it is handed as many searches a tick.)
        WorkerMode::Async { max_in_flight } => {
            let ticks = settings
                .lockstep
                .as_ref()
                .map_or(1, |l| l.worker_ticks.max(1) as usize);
            (max_in_flight.max(1) * HANDOFF_PER_RUNNER * ticks)
                .saturating_sub(queue.workers.in_flight())
        }
    }
}

/// With every runner busy, a more urgent request (waiting here, or handed off) than a search
/// running stops that search (it waits again), so the urgent one runs within a frame or two.
/// (Jobs of ended requests left the waiting list already, or never came back to it from a
/// worker.) Not in lockstep mode.
fn preempt(queue: &mut PathQueue, book: &PendingRequests, settings: &TilepathSettings) {
    if let WorkerMode::Async { max_in_flight } = settings.workers
        && settings.lockstep.is_none()
    {
        let (frame, ageing) = (book.frame, settings.ageing_frames);
        let waiting = queue.waiting.iter().map(|j| aged(j, frame, ageing)).max();
        if let Some(priority) = waiting.max(queue.workers.waiting_priority()) {
            queue.workers.preempt_for(priority, max_in_flight.max(1));
        }
    }
}

/// The service system's budgeted loop and what it reads.
struct Work<'a, 'w, 's> {
    settings: &'a TilepathSettings,
    maps: &'a Query<'w, 's, &'static NavMap>,
    stats: &'a mut TilepathFrameStats,
    budget: Duration,
    max_inline: usize,
}

impl Work<'_, '_, '_> {
    /// Advances inline
    /// searches round-robin in slices (shared ones first), starts waiting ones as slots free up,
    /// smooths found paths a line check at a time and, with nothing else to do, the other rests,
    /// until a budget runs out.
    fn until_budget(
        &mut self,
        queue: &mut PathQueue,
        book: &mut PendingRequests,
        starter: &mut Starter,
        tally: &mut PhaseTimer,
    ) {
        let (settings, maps, max_inline) = (self.settings, self.maps, self.max_inline);
        let mut expansions_left = settings.expansion_budget as u64;
        let mut k = 0;
        // A step begins only if one as long as the longest so far this frame still fits.
        let (mut longest, mut last) = (Duration::ZERO, tally.elapsed());

        loop {
            let elapsed = tally.elapsed();
            longest = longest.max(elapsed - last);
            last = elapsed;
            if elapsed + longest >= self.budget {
                break;
            }
            if !queue.to_smooth.is_empty() {
                smooth_step(queue, book, maps, tally);
                continue;
            }
            // A slot freed up: start the next waiting search, within this frame's start limit.
            let running = queue.inline.len() + queue.shared.len();
            if settings.workers == WorkerMode::Inline
                && running < max_inline
                && !queue.waiting.is_empty()
                && (tally.started as usize) < settings.searches_per_frame
            {
                starter.start(queue, book, tally, max_inline - running, self.budget);
                continue;
            }
            if running == 0 || expansions_left == 0 {
                // Nothing else to do: smooth the rest of delivered paths.
                if !queue.refining.is_empty() {
                    refine_step(queue, maps, tally, book.frame);
                    continue;
                }
                break;
            }
            // Shared searches first (each serves many units), the most urgent one first.
            if !queue.shared.is_empty() {
                let urgent = (0..queue.shared.len())
                    .max_by_key(|&i| queue.shared[i].priority())
                    .unwrap_or(0);
                queue.shared.swap(0, urgent);
                shared_step(queue, book, maps, settings, tally, &mut expansions_left);
                continue;
            }
            if k >= queue.inline.len() {
                k = 0;
            }
            let mut ctx = Slicing {
                settings,
                maps,
                tally,
                stats: self.stats,
                expansions_left: &mut expansions_left,
            };
            if ctx.slice(queue, book, k) {
                k += 1;
            }
        }
    }
}

/// The service phase's share of the frame's budget, what the collect phase spent being gone.
/// Room is left for the receive phase, so the frame as a whole stays within the budget: as long
/// as it took last frame (at most a quarter of the budget), or what delivering the outcomes
/// waiting costs at nominal rates if that is more (at most half the budget: a shared search finds
/// paths faster than a quarter of the budget delivers them). Half the budget whenever an outcome
/// waited (as an earlier build did) halved a busy game's searching: requests failing at validation
/// put one there in most frames, and `soak --units 500` used 0.9 ms of its 2 ms budget a frame
/// while requests waited 400 frames.
fn service_budget(settings: &TilepathSettings, tally: &PhaseTimer, queue: &PathQueue) -> Duration {
    let budget = settings.time_budget;
    let last = tally.last_receive_spent.min(budget / 4);
    let reserve = if queue.ready_len() > 0 {
        last.max(queue.delivery_cost(budget / 2))
    } else {
        last
    };
    budget.saturating_sub(tally.spent()).saturating_sub(reserve)
}

/// One step of the first inline shared search: a slice of its tree's growth, or one member
/// served (its path to smoothing or the results); a search with every member served leaves its
/// tree in the cache.
fn shared_step(
    queue: &mut PathQueue,
    book: &mut PendingRequests,
    maps: &Query<&'static NavMap>,
    settings: &TilepathSettings,
    tally: &mut FrameTally,
    expansions_left: &mut u64,
) {
    let Ok(map) = maps.get(queue.shared[0].map) else {
        let gone = queue.shared.swap_remove(0);
        let (tree, _) = gone.into_tree();
        queue.trees.recycle(tree);
        return;
    };
    let grid = map.grid_of(queue.shared[0].class);
    let mut search = queue.pool.pop().unwrap_or_default();
    let shared = &mut queue.shared[0];
    let before = shared.before_step();
    let slice = SLICE.min((*expansions_left).min(u32::MAX as u64) as u32);
    let step = shared.step(grid, slice, &mut search, &settings.search, |j| {
        book.is_current(j.entity, j.ticket)
    });
    let grown = shared.expansions().saturating_sub(before.expansions);
    *expansions_left = expansions_left.saturating_sub(grown.max(1));
    tally.expansions += grown;
    for cost in shared.step_costs(before, &step, &search) {
        tally.charge_on(grid, cost);
    }
    match step {
        SharedStep::Growing => {}
        SharedStep::Served(result, radius) => {
            if settings.smoothing {
                let first = settings.smooth_before_delivery;
                queue
                    .to_smooth
                    .push(Smoothing::new(grid, result, radius, first));
            } else {
                queue.results.push(result);
            }
        }
        SharedStep::Alone(job) => queue.waiting.push(Job {
            enqueued: book.frame,
            ..job
        }),
        SharedStep::Idle => {
            let done = queue.shared.swap_remove(0);
            let (key, goal) = ((done.map, done.class), done.goal);
            let (tree, overlay) = done.into_tree();
            queue
                .trees
                .put(key, goal, tree, overlay, book.frame, settings.tree_cache);
        }
    }
    queue.pool.push(search);
}

/// One line check of the inline smoothing last begun; a smoothed path becomes a result.
fn smooth_step(
    queue: &mut PathQueue,
    book: &mut PendingRequests,
    maps: &Query<&'static NavMap>,
    tally: &mut FrameTally,
) {
    tally.charge(Cost::LineCheck);
    let Some(next) = queue.to_smooth.last_mut() else {
        return;
    };
    let Ok(map) = maps.get(next.result.job.map) else {
        let job = queue.to_smooth.pop().expect("checked").result.job;
        queue.fail(book, job.entity, job.ticket, PathFailure::NoMap);
        return;
    };
    let grid = map.grid_of(next.result.job.class);
    let before = next.work();
    let points = next.step(grid);
    tally.charge_on(grid, Cost::Cells(next.work() - before));
    if let Some(points) = points {
        let done = queue.to_smooth.pop().expect("checked").finish(grid, points);
        // Its raw rest's cell centers added, found by a pass over the path.
        tally.charge(Cost::PathCells(
            done.result.as_ref().map_or(0, |p| p.cells.len() as u64),
        ));
        queue.results.push(done);
    }
}

/// One line check of the last rest of a delivered path (the most urgent at the frame's start:
/// see `refine::triage`); a smoothed rest goes to be patched in. Returns whether that rest left
/// the queue.
fn refine_step(
    queue: &mut PathQueue,
    maps: &Query<&'static NavMap>,
    tally: &mut FrameTally,
    frame: u64,
) -> bool {
    tally.charge(Cost::LineCheck);
    let Some((next, urgency)) = queue.refining.last_mut() else {
        return true;
    };
    let Ok(map) = maps.get(next.map) else {
        if let Some(gone) = queue.refining.pop() {
            let (entity, ticket, delivered) = (gone.entity, gone.ticket, gone.delivered);
            queue.refining.left(entity, ticket, delivered, frame, false);
        }
        return true;
    };
    let before = next.work();
    let grid = map.grid_of(next.class);
    let done = next.step(grid, 1, urgency);
    tally.charge_on(grid, Cost::Cells(next.work() - before));
    let Some(done) = done else {
        return false;
    };
    queue.refining.pop();
    queue.refined.push(done);
    true
}

/// What slicing inline searches needs from the service system.
struct Slicing<'a, 'w, 's> {
    settings: &'a TilepathSettings,
    maps: &'a Query<'w, 's, &'static NavMap>,
    tally: &'a mut FrameTally,
    stats: &'a mut TilepathFrameStats,
    expansions_left: &'a mut u64,
}

impl Slicing<'_, '_, '_> {
    /// Advances inline search `k` by one slice; a finished search leaves for smoothing or the
    /// results. Returns whether the round-robin moves on to the next search (`false` when this
    /// one left the list, or restarted and goes on now).
    fn slice(&mut self, queue: &mut PathQueue, book: &mut PendingRequests, k: usize) -> bool {
        let job = &mut queue.inline[k];
        if !book.is_current(job.job.entity, job.job.ticket) {
            let done = queue.inline.swap_remove(k);
            queue.pool.push(done.search);
            return false;
        }
        let Ok(map) = self.maps.get(job.job.map) else {
            let done = queue.inline.swap_remove(k);
            queue.fail(book, done.job.entity, done.job.ticket, PathFailure::NoMap);
            queue.pool.push(done.search);
            return false;
        };
        let grid = map.grid_of(job.job.class);
        let (before, scans_before) = (job.expansions(), job.scan_expansions());
        let slice = SLICE.min((*self.expansions_left).min(u32::MAX as u64) as u32);
        let step = job.slice(grid, slice, &self.settings.search);
        let done_exp = job.expansions().saturating_sub(before);
        *self.expansions_left = self.expansions_left.saturating_sub(done_exp.max(1));
        self.tally.expansions += done_exp;
        match job.kind() {
            SearchKind::Hierarchical => self.tally.charge_on(grid, Cost::Legs(done_exp)),
            kind => {
                let table = kind == SearchKind::JumpPoints && grid.has_jump_table();
                let scans = job.scan_expansions().saturating_sub(scans_before);
                for cost in Cost::of_search(table, done_exp, scans) {
                    self.tally.charge_on(grid, cost);
                }
            }
        }
        self.tally.charge(Cost::Step);
        let result = match step {
            Slice::Pending => return true,
            Slice::Restarted => return false,
            Slice::Done(result) => result,
        };
        let done = queue.inline.swap_remove(k);
        if self.settings.record_expanded {
            let recent = &mut self.stats.recent_expanded;
            if recent.len() >= 8 {
                recent.remove(0);
            }
            recent.push((done.job.map, done.search.closed_cells(grid)));
        }
        let found = result.is_ok();
        let search = done.kind();
        let result = SearchResult {
            job: done.job,
            version: grid.version(),
            result,
            smoothed: Vec::new(),
            worker: false,
            search,
            rest: None,
        };
        if self.settings.smoothing && found {
            let first = self.settings.smooth_before_delivery;
            queue
                .to_smooth
                .push(Smoothing::new(grid, result, done.radius, first));
        } else {
            queue.results.push(result);
        }
        queue.pool.push(done.search);
        false
    }
}
