//! The time-sliced path queue: requests wait here, at most a few start per frame, inline
//! searches advance within a per-frame budget and resume next frame, worker searches run on
//! `AsyncComputeTaskPool` and report back over a `crossbeam-channel`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bevy::ecs::entity::EntityHashMap;
use bevy::ecs::lifecycle::HookContext;
use bevy::ecs::world::DeferredWorld;
use bevy::prelude::*;
use bevy::tasks::AsyncComputeTaskPool;
use crossbeam_channel::{Receiver, Sender};

use crate::core::{
    AStar, Cell, CellOverlay, GoalPolicy, NavGrid, Path as CorePath, PathError, SearchConfig,
    SearchStep, Smoother, cell_center, finish_in_slices, polyline_cells, smooth_path_in_steps,
    with_scratch,
};

use super::claims::Claims;
use super::components::{Path, PathFailure, PathGoal, PathRequest, PathStatus};
use super::map::NavMap;
use super::movement::Mover;
use super::outcomes::{OutcomeKind, PathOutcome};
use super::settings::{TilepathSettings, WorkerMode};

/// A request that has no outcome yet.
#[derive(Clone, Copy, Debug)]
struct Ticket {
    id: u64,
    frame: u64,
}

/// The goal of a job, resolved to cells.
#[derive(Clone, Debug)]
enum JobGoal {
    Single(Cell),
    Nearest(Vec<Cell>),
}

/// One search to run.
#[derive(Clone, Debug)]
struct Job {
    entity: Entity,
    ticket: u64,
    map: Entity,
    goal: JobGoal,
    policy: GoalPolicy,
    priority: i32,
    /// Frame it entered the waiting list.
    enqueued: u64,
}

/// What a search produced.
struct JobResult {
    job: Job,
    /// Grid version the search ran against.
    version: u64,
    result: Result<CorePath, PathError>,
    /// Smoothed waypoints in grid space (empty if smoothing is off or no path).
    smoothed: Vec<Vec2>,
    /// Whether it ran on a worker against a snapshot.
    worker: bool,
}

struct InlineJob {
    job: Job,
    search: Box<AStar>,
    radius: f32,
    /// The overlay, kept for the second attempt (see [`soften`]).
    overlay: Vec<(Cell, CellOverlay)>,
    start: Cell,
}

/// Stopped units are searched around as if blocked; when that leaves no path at all (a goal inside
/// a crowd), the search runs again with them as a heavy penalty instead, so the unit still gets as
/// close as it can and the movement layer stops it beside the crowd.
fn soften(overlay: &[(Cell, CellOverlay)]) -> Option<Vec<(Cell, CellOverlay)>> {
    overlay
        .iter()
        .any(|(_, o)| *o == CellOverlay::Blocked)
        .then(|| {
            overlay
                .iter()
                .map(|&(c, o)| match o {
                    CellOverlay::Blocked => (c, CellOverlay::Penalty(STOPPED_PENALTY)),
                    other => (c, other),
                })
                .collect()
        })
}

/// Penalty of a stopped unit's cell in the second attempt: 20 straight steps.
const STOPPED_PENALTY: u32 = 20 * 65536;

/// An outcome ready to be delivered.
struct Ready {
    entity: Entity,
    ticket: u64,
    kind: OutcomeKind,
    path: Option<Path>,
    latency: u32,
}

/// A clock of the calling thread's CPU time (wall time where unavailable).
#[derive(Clone, Copy, Debug)]
pub(crate) struct CpuClock(Duration);

impl CpuClock {
    pub(crate) fn now() -> Self {
        #[cfg(unix)]
        {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: `ts` is a valid, writable timespec.
            if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0 {
                return CpuClock(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32));
            }
        }
        CpuClock(START.get_or_init(Instant::now).elapsed())
    }

    pub(crate) fn elapsed(self) -> Duration {
        Self::now().0.saturating_sub(self.0)
    }
}

static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

/// Per-frame figures of the plugin's main-thread work (read them for your own HUD; the plugin
/// also publishes them as Bevy diagnostics, see [`TilepathDiagnostics`](crate::TilepathDiagnostics)).
#[derive(Resource, Clone, Debug, Default)]
pub struct TilepathFrameStats {
    /// Main-thread time spent in the plugin's systems this frame so far.
    pub main_thread: Duration,
    /// Main-thread time of the last complete frame.
    pub last_main_thread: Duration,
    /// CPU time the plugin's systems used this frame so far (wall time minus the time their
    /// threads were preempted; equal to wall time where thread CPU clocks are unavailable).
    pub main_thread_cpu: Duration,
    /// CPU time of the last complete frame.
    pub last_main_thread_cpu: Duration,
    /// This frame so far: time in collect, service and receive.
    pub phases: [Duration; 3],
    /// The last complete frame: time in collect, service and receive.
    pub last_phases: [Duration; 3],
    /// Searches started this frame.
    pub started: u32,
    /// Searches finished (outcomes delivered) in the last complete frame.
    pub last_finished: u32,
    /// Outcomes delivered this frame so far.
    pub finished: u32,
    /// Requests waiting at the end of the last frame.
    pub queue_len: usize,
    /// Searches in progress (inline or on workers) at the end of the last frame.
    pub in_flight: usize,
    /// Mean latency in frames of the outcomes of the last frame.
    pub last_latency_frames: f64,
    latency_sum: u64,
    /// Expansions done on the main thread this frame so far.
    pub expansions: u64,
    /// Cells expanded by the most recent inline searches (debug overlay), capped.
    pub recent_expanded: Vec<(Entity, Vec<Cell>)>,
}

/// The queue of path requests and searches in progress.
#[derive(Resource)]
pub struct PathQueue {
    next_ticket: u64,
    pending: EntityHashMap<Ticket>,
    /// Set when a request left `pending` without its job (cancel, replace, despawn).
    stale_waiting: bool,
    incoming: Vec<(Entity, u64)>,
    waiting: Vec<Job>,
    inline: Vec<InlineJob>,
    in_flight: usize,
    /// Searches kept for reuse (boxed so moving them in and out of jobs stays cheap).
    #[allow(clippy::vec_box)]
    pool: Vec<Box<AStar>>,
    sender: Sender<JobResult>,
    receiver: Receiver<JobResult>,
    results: Vec<JobResult>,
    to_smooth: Vec<Finished>,
    ready: Vec<Ready>,
    frame: u64,
}

impl Default for PathQueue {
    fn default() -> Self {
        let (sender, receiver) = crossbeam_channel::unbounded();
        PathQueue {
            next_ticket: 1,
            pending: EntityHashMap::default(),
            stale_waiting: false,
            incoming: Vec::new(),
            waiting: Vec::new(),
            inline: Vec::new(),
            in_flight: 0,
            pool: Vec::new(),
            sender,
            receiver,
            results: Vec::new(),
            to_smooth: Vec::new(),
            ready: Vec::new(),
            frame: 0,
        }
    }
}

impl PathQueue {
    /// Requests waiting to start.
    pub fn waiting_len(&self) -> usize {
        self.waiting.len() + self.incoming.len()
    }

    /// Searches in progress (inline and on workers).
    pub fn in_flight(&self) -> usize {
        self.inline.len() + self.in_flight + self.to_smooth.len()
    }

    /// Searches running: inline searches in progress, or searches on workers (smoothing not
    /// included).
    pub fn searching(&self) -> usize {
        self.inline.len() + self.in_flight
    }

    /// Requests without an outcome delivered yet.
    pub fn pending_len(&self) -> usize {
        self.pending.len() + self.ready.len()
    }

    /// Whether `entity` has a request without an outcome.
    pub fn is_pending(&self, entity: Entity) -> bool {
        self.pending.contains_key(&entity)
    }

    fn is_current(&self, entity: Entity, ticket: u64) -> bool {
        self.pending.get(&entity).is_some_and(|t| t.id == ticket)
    }

    /// Queues a cancelled outcome for `entity`'s pending request, if any.
    fn cancel(&mut self, entity: Entity) {
        if let Some(t) = self.pending.remove(&entity) {
            self.stale_waiting = true;
            let latency = (self.frame - t.frame) as u32;
            self.ready.push(Ready {
                entity,
                ticket: t.id,
                kind: OutcomeKind::Cancelled,
                path: None,
                latency,
            });
        }
    }

    fn fail(&mut self, entity: Entity, ticket: u64, failure: PathFailure) {
        if let Some(t) = self.pending.remove(&entity) {
            debug_assert_eq!(t.id, ticket);
            self.ready.push(Ready {
                entity,
                ticket,
                kind: OutcomeKind::Failed(failure),
                path: None,
                latency: (self.frame - t.frame) as u32,
            });
        }
    }
}

pub(crate) fn on_request_insert(mut world: DeferredWorld, ctx: HookContext) {
    let Some(mut queue) = world.get_resource_mut::<PathQueue>() else {
        return;
    };
    // A replaced request ends as cancelled.
    queue.cancel(ctx.entity);
    let id = queue.next_ticket;
    queue.next_ticket += 1;
    let frame = queue.frame;
    queue.pending.insert(ctx.entity, Ticket { id, frame });
    queue.incoming.push((ctx.entity, id));
    if let Some(mut status) = world.get_mut::<PathStatus>(ctx.entity) {
        *status = PathStatus::Queued;
    }
}

pub(crate) fn on_request_remove(mut world: DeferredWorld, ctx: HookContext) {
    if let Some(mut queue) = world.get_resource_mut::<PathQueue>() {
        queue.cancel(ctx.entity);
    }
}

pub(crate) fn on_request_despawn(mut world: DeferredWorld, ctx: HookContext) {
    // Runs before `on_remove`: forget the request so no outcome is sent for a unit that is gone.
    if let Some(mut queue) = world.get_resource_mut::<PathQueue>()
        && queue.pending.remove(&ctx.entity).is_some()
    {
        queue.stale_waiting = true;
    }
}

/// Finds the map a request refers to.
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

fn failure_of(e: PathError) -> PathFailure {
    match e {
        PathError::StartOutOfBounds(_) => PathFailure::StartOutOfBounds,
        PathError::GoalOutOfBounds(_) => PathFailure::GoalOutOfBounds,
        PathError::StartBlocked(_) => PathFailure::StartBlocked,
        PathError::GoalBlocked(_) => PathFailure::GoalBlocked,
        PathError::Unreachable => PathFailure::Unreachable,
        PathError::NoPath | PathError::NotStarted => PathFailure::NoPath,
        PathError::LimitExceeded { .. } => PathFailure::SearchLimitExceeded,
        PathError::NoGoals => PathFailure::NoGoals,
    }
}

fn unit_cell(map: &NavMap, transform: &Transform) -> Option<Cell> {
    map.world_to_cell(transform.translation.truncate())
}

/// Collect: validate new requests (bad goals and unreachable goals fail at once, through the
/// island labels, without searching) and put the rest in the waiting list.
pub(crate) fn collect_requests(
    mut queue: ResMut<PathQueue>,
    mut stats: ResMut<TilepathFrameStats>,
    settings: Res<TilepathSettings>,
    requests: Query<(&PathRequest, &Transform)>,
    maps: Query<(Entity, &NavMap)>,
) {
    let t0 = Instant::now();
    let c0 = CpuClock::now();
    let budget = settings.time_budget.saturating_sub(stats.main_thread) / 4;
    let mut incoming = std::mem::take(&mut queue.incoming).into_iter();
    let frame = queue.frame;
    // Validation is cheap but not free (a nearest-reachable goal scans around it): a quarter of
    // the frame's budget at most; the rest waits for the next frame, in order.
    for (entity, ticket) in incoming.by_ref() {
        if t0.elapsed() >= budget {
            queue.incoming.push((entity, ticket));
            break;
        }
        if !queue.is_current(entity, ticket) {
            continue;
        }
        let Ok((request, transform)) = requests.get(entity) else {
            continue;
        };
        let Some(map_entity) = pick_map(request.map, &maps) else {
            queue.fail(entity, ticket, PathFailure::NoMap);
            continue;
        };
        let (_, map) = maps.get(map_entity).expect("picked map exists");
        let grid = map.grid();
        let goal = match &request.goal {
            PathGoal::World(p) if !p.is_finite() => {
                queue.fail(entity, ticket, PathFailure::GoalNotFinite);
                continue;
            }
            PathGoal::World(p) => match map.world_to_cell(*p) {
                Some(c) => JobGoal::Single(c),
                None => {
                    queue.fail(entity, ticket, PathFailure::GoalOutOfBounds);
                    continue;
                }
            },
            PathGoal::Cell(c) => JobGoal::Single(*c),
            PathGoal::NearestOf(cells) => JobGoal::Nearest(cells.clone()),
        };
        // Check the ends now: bad input and unreachable goals end here, without a search.
        let Some(start) = unit_cell(map, transform) else {
            queue.fail(entity, ticket, PathFailure::StartOutOfBounds);
            continue;
        };
        let check = match &goal {
            JobGoal::Single(g) => {
                crate::core::resolve_ends(grid, start, *g, request.policy).map(|_| ())
            }
            JobGoal::Nearest(goals) => crate::core::check_nearest(grid, start, goals),
        };
        if let Err(e) = check {
            queue.fail(entity, ticket, failure_of(e));
            continue;
        }
        queue.waiting.push(Job {
            entity,
            ticket,
            map: map_entity,
            goal,
            policy: request.policy,
            priority: request.priority,
            enqueued: frame,
        });
    }
    queue.incoming.extend(incoming);
    stats.main_thread_cpu += c0.elapsed();
    stats.phases[0] += t0.elapsed();
    stats.main_thread += t0.elapsed();
}

/// Grows the inline searches' scratch space to a new map's size as soon as the map appears, so
/// the first frames with requests do not pay for it (measured: about 20 ms for two 512 x 512
/// scratches, mostly first-touch page faults).
pub(crate) fn prepare_scratch(
    mut queue: ResMut<PathQueue>,
    settings: Res<TilepathSettings>,
    maps: Query<&NavMap, Added<NavMap>>,
) {
    if settings.workers != WorkerMode::Inline {
        return;
    }
    for map in &maps {
        let want = settings.max_inline_searches.max(1);
        while queue.pool.len() < want {
            queue.pool.push(Box::default());
        }
        for search in &mut queue.pool {
            search.reserve_for(map.grid());
        }
    }
}

/// Per-search overlay: claimed cells of units near the searcher, and cells of stopped units.
fn overlay_for(
    claims: &Claims,
    settings: &TilepathSettings,
    map: &NavMap,
    entity: Entity,
    start: Cell,
) -> Vec<(Cell, CellOverlay)> {
    claims.overlay_for(
        entity,
        start,
        settings.claim_radius,
        map.grid().rules().costs.from_tiles(settings.claim_penalty),
        settings.avoid_stopped_units,
    )
}

/// Service: start at most `searches_per_frame` searches (highest aged priority first, FIFO among
/// equals) and advance inline searches within the frame's budgets.
#[allow(clippy::too_many_arguments)]
pub(crate) fn service_queue(
    mut queue: ResMut<PathQueue>,
    mut stats: ResMut<TilepathFrameStats>,
    settings: Res<TilepathSettings>,
    claims: Res<Claims>,
    maps: Query<&'static NavMap>,
    units: Query<(&'static Transform, Option<&'static Mover>)>,
    mut statuses: Query<&'static mut PathStatus>,
) {
    let t0 = Instant::now();
    let c0 = CpuClock::now();
    // Room is left for the receive phase (as long as it took last frame, at most a quarter of the
    // budget), so the frame as a whole stays within the budget.
    let reserve = stats.last_phases[2].min(settings.time_budget / 4);
    let budget = settings
        .time_budget
        .saturating_sub(stats.main_thread)
        .saturating_sub(reserve);
    let queue = &mut *queue;

    // Drop waiting jobs that were cancelled, replaced or despawned.
    if queue.stale_waiting {
        let pending = &queue.pending;
        queue
            .waiting
            .retain(|j| pending.get(&j.entity).is_some_and(|t| t.id == j.ticket));
        queue.stale_waiting = false;
    }

    // Start searches: as many as there are free slots (inline searches in progress, or worker
    // searches in flight), at most `searches_per_frame` per frame.
    let max_inline = settings.max_inline_searches.max(1);
    let slots = match settings.workers {
        WorkerMode::Inline => max_inline.saturating_sub(queue.inline.len()),
        WorkerMode::Async { max_in_flight } => max_in_flight.saturating_sub(queue.in_flight),
    };
    let mut starter = Starter {
        settings: &settings,
        claims: &claims,
        maps: &maps,
        units: &units,
        statuses: &mut statuses,
    };
    starter.start(queue, &mut stats, slots);

    // Advance inline searches round-robin in slices, and smooth finished ones a few waypoints at
    // a time, until a budget runs out.
    let mut expansions_left = settings.expansion_budget as u64;
    const SLICE: u32 = 256;
    let mut k = 0;
    // A step begins only if one as long as the longest so far this frame still fits.
    let (mut longest, mut last) = (Duration::ZERO, t0.elapsed());
    loop {
        let elapsed = t0.elapsed();
        longest = longest.max(elapsed - last);
        last = elapsed;
        if elapsed + longest >= budget {
            break;
        }
        if let Some(next) = queue.to_smooth.last_mut() {
            // Smoothing resumes too: a few waypoint decisions at a time.
            let Ok(map) = maps.get(next.job.map) else {
                let done = queue.to_smooth.pop().expect("checked");
                queue.fail(done.job.entity, done.job.ticket, PathFailure::NoMap);
                continue;
            };
            if let Some(points) = next.smoother.step(map.grid(), 1) {
                let mut done = queue.to_smooth.pop().expect("checked");
                done.smoothed = points;
                queue.results.push(done.into_result());
            }
            continue;
        }
        // A slot freed up: start the next waiting search, within this frame's start limit.
        if settings.workers == WorkerMode::Inline
            && queue.inline.len() < max_inline
            && !queue.waiting.is_empty()
            && (stats.started as usize) < settings.searches_per_frame
        {
            starter.start(queue, &mut stats, max_inline - queue.inline.len());
            continue;
        }
        if queue.inline.is_empty() || expansions_left == 0 {
            break;
        }
        if k >= queue.inline.len() {
            k = 0;
        }
        let job = &mut queue.inline[k];
        if queue
            .pending
            .get(&job.job.entity)
            .is_none_or(|t| t.id != job.job.ticket)
        {
            let done = queue.inline.swap_remove(k);
            queue.pool.push(done.search);
            continue;
        }
        let Ok(map) = maps.get(job.job.map) else {
            let done = queue.inline.swap_remove(k);
            queue.fail(done.job.entity, done.job.ticket, PathFailure::NoMap);
            queue.pool.push(done.search);
            continue;
        };
        let grid = map.grid();
        let before = job.search.expansions();
        let slice = SLICE.min(expansions_left.min(u32::MAX as u64) as u32);
        let step = job.search.step(grid, slice);
        let done_exp = job.search.expansions().saturating_sub(before);
        expansions_left = expansions_left.saturating_sub(done_exp.max(1));
        stats.expansions += done_exp;
        match step {
            SearchStep::Pending => k += 1,
            SearchStep::Failed(PathError::NoPath) if let Some(soft) = soften(&job.overlay) => {
                let config = settings.search;
                if begin(&mut job.search, grid, job.start, &job.job, &config, &soft).is_err() {
                    k += 1;
                }
                job.overlay = soft;
            }
            finished => {
                let done = queue.inline.swap_remove(k);
                if settings.record_expanded {
                    if stats.recent_expanded.len() >= 8 {
                        stats.recent_expanded.remove(0);
                    }
                    stats
                        .recent_expanded
                        .push((done.job.entity, done.search.closed_cells(grid)));
                }
                let result = match finished {
                    SearchStep::Found(p) => Ok(p),
                    SearchStep::Failed(e) => Err(e),
                    SearchStep::Pending => unreachable!(),
                };
                let smoother = Smoother::new(
                    result.as_ref().map_or(&[][..], |p| p.cells.as_slice()),
                    done.radius,
                );
                let finished = Finished {
                    job: done.job,
                    version: grid.version(),
                    result,
                    smoothed: Vec::new(),
                    smoother,
                };
                if settings.smoothing && finished.result.is_ok() {
                    queue.to_smooth.push(finished);
                } else {
                    queue.results.push(finished.into_result());
                }
                queue.pool.push(done.search);
            }
        }
    }
    stats.main_thread_cpu += c0.elapsed();
    stats.phases[1] += t0.elapsed();
    stats.main_thread += t0.elapsed();
}

/// Starts waiting searches (the service system's borrowed parameters).
struct Starter<'a, 'w, 's, 'sw, 'ss> {
    settings: &'a TilepathSettings,
    claims: &'a Claims,
    maps: &'a Query<'w, 's, &'static NavMap>,
    units: &'a Query<'w, 's, (&'static Transform, Option<&'static Mover>)>,
    statuses: &'a mut Query<'sw, 'ss, &'static mut PathStatus>,
}

impl Starter<'_, '_, '_, '_, '_> {
    /// Starts up to `slots` searches (never more than `searches_per_frame` in a frame): highest
    /// aged priority first, FIFO among equals. Inline searches begin here; worker searches are
    /// spawned on the `AsyncComputeTaskPool`.
    fn start(&mut self, queue: &mut PathQueue, stats: &mut TilepathFrameStats, slots: usize) {
        let settings = self.settings;
        let frame = queue.frame;
        let capacity = slots.min(
            settings
                .searches_per_frame
                .saturating_sub(stats.started as usize),
        );
        let ageing = settings.ageing_frames.max(1) as u64;
        let aged = |j: &Job| j.priority as i64 + ((frame - j.enqueued) / ageing) as i64;
        let take = capacity.min(queue.waiting.len());
        if take == 0 {
            return;
        }
        if take < queue.waiting.len() {
            queue.waiting.select_nth_unstable_by(take - 1, |a, b| {
                aged(b).cmp(&aged(a)).then(a.ticket.cmp(&b.ticket))
            });
        }
        let mut starting: Vec<Job> = queue.waiting.drain(..take).collect();
        starting.sort_by(|a, b| aged(b).cmp(&aged(a)).then(a.ticket.cmp(&b.ticket)));
        for job in starting {
            stats.started += 1;
            let Ok(map) = self.maps.get(job.map) else {
                queue.fail(job.entity, job.ticket, PathFailure::NoMap);
                continue;
            };
            let Ok((transform, mover)) = self.units.get(job.entity) else {
                continue;
            };
            let Some(start) = unit_cell(map, transform) else {
                queue.fail(job.entity, job.ticket, PathFailure::StartOutOfBounds);
                continue;
            };
            let radius = mover.map_or(0.0, |m| m.radius);
            let overlay = overlay_for(self.claims, settings, map, job.entity, start);
            if let Ok(mut s) = self.statuses.get_mut(job.entity) {
                *s = PathStatus::Searching;
            }
            match settings.workers {
                WorkerMode::Inline => {
                    let mut search = queue.pool.pop().unwrap_or_default();
                    let begun = begin(
                        &mut search,
                        map.grid(),
                        start,
                        &job,
                        &settings.search,
                        &overlay,
                    );
                    match begun {
                        Ok(()) => queue.inline.push(InlineJob {
                            job,
                            search,
                            radius,
                            overlay,
                            start,
                        }),
                        Err(e) => {
                            queue.fail(job.entity, job.ticket, failure_of(e));
                            queue.pool.push(search);
                        }
                    }
                }
                WorkerMode::Async { .. } => {
                    let snapshot = map.snapshot();
                    let sender = queue.sender.clone();
                    let config = settings.search;
                    let smoothing = settings.smoothing;
                    queue.in_flight += 1;
                    AsyncComputeTaskPool::get()
                        .spawn(async move {
                            let result = run_job(
                                &snapshot, start, &job, &config, &overlay, smoothing, radius,
                            );
                            // The receiver lives as long as the plugin's queue; if it is gone the
                            // app is shutting down and the result has nowhere to go.
                            let _ = sender.send(result);
                        })
                        .detach();
                }
            }
        }
    }
}

/// An inline search that finished, waiting to be smoothed.
struct Finished {
    job: Job,
    version: u64,
    result: Result<CorePath, PathError>,
    smoothed: Vec<Vec2>,
    smoother: Smoother,
}

impl Finished {
    fn into_result(self) -> JobResult {
        JobResult {
            job: self.job,
            version: self.version,
            result: self.result,
            smoothed: self.smoothed,
            worker: false,
        }
    }
}

fn begin(
    search: &mut AStar,
    grid: &NavGrid,
    start: Cell,
    job: &Job,
    config: &SearchConfig,
    overlay: &[(Cell, CellOverlay)],
) -> Result<(), PathError> {
    let config = SearchConfig {
        goal_policy: job.policy,
        ..*config
    };
    match &job.goal {
        JobGoal::Single(goal) => search.begin_with_overlay(grid, start, *goal, &config, overlay),
        JobGoal::Nearest(goals) => search.begin_nearest(grid, start, goals, &config),
    }
}

/// How long a worker search runs before it yields its thread (see [`Cooperative`]).
const WORKER_YIELD_EVERY: Duration = Duration::from_micros(200);

/// Makes a long computation on a worker thread give way now and then (`yield_now` every
/// [`WORKER_YIELD_EVERY`]), so the frame's threads, woken while it runs, wait for a core at most
/// that long instead of the scheduler's full time slice. Measured on 2 cores (`perf sched`):
/// without it the main thread and Bevy's compute thread waited 2-4 ms for the core a worker
/// search held, in most frames where a search was spawned.
struct Cooperative {
    since: Instant,
}

impl Cooperative {
    fn new() -> Self {
        Cooperative {
            since: Instant::now(),
        }
    }

    /// Called between slices of work: yields the thread once `WORKER_YIELD_EVERY` has passed.
    fn pause_point(&mut self) {
        if self.since.elapsed() >= WORKER_YIELD_EVERY {
            std::thread::yield_now();
            self.since = Instant::now();
        }
    }
}

/// A whole search on a worker thread, with that thread's reusable scratch.
fn run_job(
    grid: &Arc<NavGrid>,
    start: Cell,
    job: &Job,
    config: &SearchConfig,
    overlay: &[(Cell, CellOverlay)],
    smoothing: bool,
    radius: f32,
) -> JobResult {
    // Searches in 256-pop slices and smoothing 4 line checks at a time, giving way between them.
    let mut co = Cooperative::new();
    let result = with_scratch(|search| {
        begin(search, grid, start, job, config, overlay)?;
        match finish_in_slices(search, grid, 256, || co.pause_point()) {
            Err(PathError::NoPath) if let Some(soft) = soften(overlay) => {
                begin(search, grid, start, job, config, &soft)?;
                finish_in_slices(search, grid, 256, || co.pause_point())
            }
            other => other,
        }
    });
    let smoothed = match (&result, smoothing) {
        (Ok(p), true) => smooth_path_in_steps(grid, &p.cells, radius, 4, || co.pause_point()),
        _ => Vec::new(),
    };
    JobResult {
        job: job.clone(),
        version: grid.version(),
        result,
        smoothed,
        worker: true,
    }
}

/// Receive: take finished searches (from inline slices and the worker channel), check worker
/// results against grid edits made meanwhile (searching again where the path is no longer
/// valid), and deliver outcomes: [`PathStatus`], [`Path`], a [`PathOutcome`] message and the same
/// as an entity event.
pub(crate) fn receive_results(
    mut queue: ResMut<PathQueue>,
    mut stats: ResMut<TilepathFrameStats>,
    settings: Res<TilepathSettings>,
    maps: Query<&NavMap>,
    mut statuses: Query<&mut PathStatus>,
    mut commands: Commands,
    mut writer: MessageWriter<PathOutcome>,
) {
    let t0 = Instant::now();
    let c0 = CpuClock::now();
    let budget = settings.time_budget.saturating_sub(stats.main_thread);
    let queue = &mut *queue;
    let frame = queue.frame;
    let mut results = std::mem::take(&mut queue.results);
    // Worker results: take what the budget allows; the rest waits in the channel.
    while t0.elapsed() < budget / 2 {
        match queue.receiver.try_recv() {
            Ok(r) => {
                queue.in_flight -= 1;
                results.push(r);
            }
            Err(_) => break,
        }
    }
    for r in results {
        let JobResult {
            job,
            version,
            result,
            smoothed,
            worker,
        } = r;
        if !queue.is_current(job.entity, job.ticket) {
            continue; // cancelled, replaced or despawned meanwhile: its outcome is already out
        }
        let Ok(map) = maps.get(job.map) else {
            queue.fail(job.entity, job.ticket, PathFailure::NoMap);
            continue;
        };
        let grid = map.grid();
        if worker && version != grid.version() {
            // The grid changed while the worker searched its snapshot: keep the path only if
            // it is still legal step by step, else search again (ahead of newer requests).
            let still_valid = match &result {
                Ok(p) => p.cells.windows(2).all(|w| grid.can_step(w[0], w[1])),
                Err(_) => false,
            };
            if !still_valid {
                queue.waiting.push(Job {
                    priority: job.priority.saturating_add(1000),
                    enqueued: frame,
                    ..job
                });
                continue;
            }
        }
        match result {
            Ok(p) => {
                let ticket = queue.pending.remove(&job.entity).expect("checked current");
                // Grid-space waypoints: the smoothed ones, or the cells' centers.
                let points = if smoothed.is_empty() {
                    p.cells.iter().map(|&c| cell_center(c)).collect()
                } else {
                    smoothed
                };
                let waypoints = points.iter().map(|&g| map.grid_to_world(g)).collect();
                let corridor = polyline_cells(&points);
                queue.ready.push(Ready {
                    entity: job.entity,
                    ticket: job.ticket,
                    kind: OutcomeKind::Found { length: p.length },
                    path: Some(Path {
                        cells: p.cells,
                        waypoints,
                        corridor,
                        cost: p.cost,
                        length: p.length,
                        goal: p.goal,
                        map: job.map,
                    }),
                    latency: (frame - ticket.frame) as u32,
                });
            }
            Err(e) => queue.fail(job.entity, job.ticket, failure_of(e)),
        }
    }
    // Deliver ready outcomes (exactly one per request) while the budget lasts; the rest go out
    // next frame, oldest first.
    let mut pending_delivery = std::mem::take(&mut queue.ready).into_iter();
    for ready in pending_delivery.by_ref() {
        let Ready {
            entity,
            ticket,
            kind,
            path,
            latency,
        } = ready;
        let replaced = queue.pending.contains_key(&entity);
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
                None if !replaced => {
                    e.try_remove::<Path>();
                }
                None => {}
            }
        }
        let outcome = PathOutcome {
            entity,
            ticket,
            kind,
            latency_frames: latency,
        };
        writer.write(outcome);
        commands.trigger(outcome);
        stats.finished += 1;
        stats.latency_sum += latency as u64;
        if t0.elapsed() >= budget {
            break;
        }
    }
    queue.ready.extend(pending_delivery);
    stats.queue_len = queue.waiting_len();
    stats.in_flight = queue.in_flight();
    stats.main_thread_cpu += c0.elapsed();
    stats.phases[2] += t0.elapsed();
    stats.main_thread += t0.elapsed();
}

/// End of frame: roll the per-frame figures over and advance the queue's frame counter.
pub(crate) fn end_frame(mut queue: ResMut<PathQueue>, mut stats: ResMut<TilepathFrameStats>) {
    queue.frame += 1;
    stats.last_main_thread = stats.main_thread;
    stats.last_main_thread_cpu = std::mem::take(&mut stats.main_thread_cpu);
    stats.last_phases = std::mem::take(&mut stats.phases);
    stats.last_finished = stats.finished;
    stats.last_latency_frames = if stats.finished > 0 {
        stats.latency_sum as f64 / stats.finished as f64
    } else {
        0.0
    };
    stats.main_thread = Duration::ZERO;
    stats.started = 0;
    stats.finished = 0;
    stats.latency_sum = 0;
    stats.expansions = 0;
}

/// Repaths units whose path crosses a cell edited this frame through [`NavMap::set_terrain`] or
/// [`NavMap::set_walkable`] (only those units: the rest keep their paths).
pub(crate) fn repath_on_change(
    mut maps: Query<(Entity, &mut NavMap)>,
    units: Query<(
        Entity,
        &Path,
        &PathRequest,
        Option<&super::movement::PathProgress>,
    )>,
    queue: Res<PathQueue>,
    mut commands: Commands,
) {
    for (map_entity, mut map) in &mut maps {
        if map.changed_cells().is_empty() {
            continue;
        }
        // The changed cells and their neighbours: a unit's body may overlap a neighbour of the
        // corridor cell it walks through.
        let near_changed: std::collections::HashSet<Cell> = map
            .take_changed()
            .into_iter()
            .flat_map(|c| {
                (-1..=1).flat_map(move |dy| (-1..=1).map(move |dx| c + Cell::new(dx, dy)))
            })
            .collect();
        let grid = map.grid();
        for (entity, path, request, progress) in &units {
            if path.map != map_entity || queue.is_pending(entity) {
                continue;
            }
            // The cells still ahead of the unit's body: its corridor and their neighbours.
            let from = progress.map_or(0, |p| p.cell_index.saturating_sub(1));
            let rest = &path.corridor[from.min(path.corridor.len())..];
            let crosses = rest
                .iter()
                .any(|c| !grid.is_walkable(*c) || near_changed.contains(c));
            if crosses {
                commands.entity(entity).insert(request.clone());
            }
        }
    }
}
