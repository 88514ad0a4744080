//! Worker searches: handed to runners on Bevy's `AsyncComputeTaskPool` (at most
//! [`WorkerMode::Async::max_in_flight`](crate::WorkerMode) of them), each search against an
//! immutable snapshot of the grid; a runner serves handed-off searches, most urgent first, one
//! after the other for as long as there are any (a slot no longer waits a frame's round trip per
//! search), taking turns with the other runners in slices and giving way to the frame's own
//! threads now and then; results go back over a `crossbeam-channel`.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bevy::tasks::AsyncComputeTaskPool;
use crossbeam_channel::{Receiver, Sender};

use bevy::prelude::Vec2;

use crate::core::{
    AStar, Cell, CellOverlay, GoalTree, NavGrid, Path, PathError, RegionMap, SearchConfig,
    SearchStep, Smoother,
};

use crate::plugin::cooperative::Cooperative;
use crate::plugin::map::GridSnapshot;
use crate::plugin::outcomes::SearchKind;

use crate::plugin::diagnostics::Cost;

use super::job::{Job, Overlay, SearchResult, begin, begin_any};
use super::shared::{MapClass, SharedSearch, SharedStep};

/// What a worker sends back.
pub(super) enum WorkerReport {
    /// A unit's own search (the flight's id), and the work it counted (nominal nanoseconds,
    /// see [`Cost`]).
    One(u64, SearchResult, u64),
    /// A unit's own search stopped for a more urgent one (see [`WorkerChannel::preempt_for`]):
    /// its job waits again.
    Stopped(u64, Job),
    /// One member of a shared search served (sent as soon as it is, so a large group's paths
    /// arrive while the worker serves the rest; it does not end the search in flight), and the
    /// flight's id.
    Served(u64, SearchResult),
    /// A shared search done (or stopped): the members it could not serve, and its tree.
    Shared(u64, SharedReport),
}

/// A shared search done on a worker.
pub(super) struct SharedReport {
    /// The map and class of the grid it searched.
    pub(super) key: MapClass,
    pub(super) goal: Cell,
    pub(super) alone: Vec<Job>,
    /// Members not served before it was stopped: they wait again.
    pub(super) unserved: Vec<Job>,
    pub(super) tree: Box<GoalTree>,
    pub(super) overlay: Vec<(Cell, CellOverlay)>,
    /// The work it counted (nominal nanoseconds, see [`Cost`]).
    pub(super) counted: u64,
}

/// Searches handed off per runner at most (running, waiting for a runner, or done and not yet
/// taken back): enough that a runner never runs out of work between two frames (the busy mix
/// of `examples/soak` at 2,000 units asks for 20 searches a frame and more), few enough that
/// the queue's own order (ageing, priorities) still decides most of what runs next. A more
/// urgent request stops a running search (see [`WorkerChannel::preempt_for`]).
pub(super) const HANDOFF_PER_RUNNER: usize = 16;

/// The channel worker searches report on, and the searches out.
pub(super) struct WorkerChannel {
    sender: Sender<WorkerReport>,
    receiver: Receiver<WorkerReport>,
    /// Searches handed off whose result has not been received.
    flights: Vec<Flight>,
    next_id: u64,
    /// Searches handed off that no runner has taken yet, and the runners alive.
    handoff: Arc<Mutex<Handoff>>,
    /// Scratch spaces of worker searches.
    scratch: ScratchPool,
    /// In lockstep mode, when searches handed off now are due (see
    /// [`WorkerChannel::next_report`]); `None`: their results are taken as soon as they come.
    pace: Option<Pace>,
    /// Reports received before their flight is due, in the order they came.
    early: Vec<WorkerReport>,
    /// Wall time spent waiting for due reports since [`WorkerChannel::take_waited`].
    waited: Duration,
    /// The work handed off and not taken back, as expected (see [`Ledger`]).
    ledger: Ledger,
}

/// When worker searches are due in lockstep mode.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pace {
    /// This tick.
    pub(super) now: u64,
    /// Ticks from handing a search off to taking it back, at least
    /// ([`Lockstep::worker_ticks`](crate::Lockstep::worker_ticks)).
    pub(super) ticks: u64,
    /// The work all runners together are expected to finish in a tick, in nominal nanoseconds
    /// ([`Lockstep::worker_budget`](crate::Lockstep::worker_budget) times the runners).
    pub(super) per_tick: u64,
}

/// The work handed to the runners, counted like the main thread's budget ([`Cost`]'s nominal
/// nanoseconds), so that lockstep mode hands off no more than the runners finish before it is
/// due (see [`WorkerChannel::full`]). A search's work is known once it is done; until then it
/// is expected from its size (the tiles between its start and goal; for a shared search, the
/// square of its farthest member's) at the work per tile of the searches of its kind taken back
/// so far. Taken back in the same order on every machine, so the expectation is the same on
/// every machine.
struct Ledger {
    /// Expected work of the flights not taken back.
    outstanding: u64,
    /// Work per tile of size, of own searches and of shared ones (whose size is the square of
    /// their farthest member's tiles: a tree grows over an area): a running mean (an eighth of
    /// each search taken back).
    per_tile: [u64; 2],
}

impl Default for Ledger {
    fn default() -> Self {
        // Before any search is taken back: about what own searches through a region map and
        // shared trees counted a tile on 512 x 512 maps (`stress --units 2000 --lockstep`).
        Ledger {
            outstanding: 0,
            per_tile: PRIOR_PER_TILE,
        }
    }
}

/// [`Ledger::per_tile`] before any search is taken back.
const PRIOR_PER_TILE: [u64; 2] = [2_000, 250];

impl Ledger {
    /// The work a search of `kind` (0: own, 1: shared) and `size` tiles is expected to take.
    fn expect(&self, kind: usize, size: u64) -> u64 {
        self.per_tile[kind].saturating_mul(size.max(1))
    }

    /// A flight taken back that was expected to take `expected`, and took `counted` (if it
    /// ran to its end).
    fn settle(&mut self, kind: usize, size: u64, expected: u64, counted: Option<u64>) {
        self.outstanding = self.outstanding.saturating_sub(expected);
        if let Some(counted) = counted {
            let seen = counted / size.max(1);
            self.per_tile[kind] = (self.per_tile[kind] * 7 + seen).div_ceil(8).max(1);
        }
    }
}

impl Default for WorkerChannel {
    fn default() -> Self {
        let (sender, receiver) = crossbeam_channel::unbounded();
        WorkerChannel {
            sender,
            receiver,
            flights: Vec::new(),
            next_id: 0,
            handoff: Arc::default(),
            scratch: ScratchPool::default(),
            pace: None,
            early: Vec::new(),
            waited: Duration::ZERO,
            ledger: Ledger::default(),
        }
    }
}

/// Work handed to the runners.
#[derive(Default)]
struct Handoff {
    /// Searches no runner has taken yet.
    tasks: Vec<Task>,
    /// Runners alive (each serves tasks until there are none).
    runners: usize,
}

/// A search handed to the runners.
struct Task {
    id: u64,
    priority: i32,
    /// Set when it is to stop (see [`WorkerChannel::preempt_for`]).
    stop: Arc<AtomicBool>,
    /// Shared with its [`Flight`].
    state: Arc<AtomicU8>,
    work: Work,
}

/// What a [`Task`] does.
enum Work {
    One(Job, Box<WorkerSearch>),
    Shared {
        shared: Box<SharedSearch>,
        grid: GridSnapshot,
        config: SearchConfig,
        smoothing: Option<usize>,
    },
}

/// What a worker search needs besides its job.
pub(super) struct WorkerSearch {
    pub(super) grid: GridSnapshot,
    pub(super) start: Cell,
    pub(super) config: SearchConfig,
    pub(super) overlay: Overlay,
    /// Steps smoothed before delivery (`None`: no smoothing).
    pub(super) smoothing: Option<usize>,
    pub(super) radius: f32,
    /// The map's region map, for a long request (see [`begin_any`]).
    pub(super) regions: Option<Arc<RegionMap>>,
}

/// A search handed off.
struct Flight {
    id: u64,
    /// Its priority (a shared search's: its most urgent member's).
    priority: i32,
    /// Set to stop it at its next pause point.
    stop: Arc<AtomicBool>,
    /// Handed off, running or done (see [`HANDED_OFF`]).
    state: Arc<AtomicU8>,
    /// The tick its report is taken back at, in lockstep mode.
    due: Option<u64>,
    /// Shared (1) or own (0), its size in tiles and its expected work (see [`Ledger`]).
    kind: usize,
    size: u64,
    expected: u64,
}

/// A flight's state: handed off and waiting for a runner, ...
const HANDED_OFF: u8 = 0;
/// ... a runner works on it, ...
const RUNNING: u8 = 1;
/// ... or done, its report not taken back yet.
const DONE: u8 = 2;

impl WorkerChannel {
    /// Searches handed off whose result has not been received.
    pub(super) fn in_flight(&self) -> usize {
        self.flights.len()
    }

    /// Of those, the ones a runner works on now.
    pub(super) fn running(&self) -> usize {
        self.flights
            .iter()
            .filter(|f| f.state.load(Ordering::Relaxed) == RUNNING)
            .count()
    }

    /// The highest priority of the searches handed off that no runner has taken yet.
    pub(super) fn waiting_priority(&self) -> Option<i32> {
        self.flights
            .iter()
            .filter(|f| f.state.load(Ordering::Relaxed) == HANDED_OFF)
            .map(|f| f.priority)
            .max()
    }

    /// With every runner busy, a request of `priority` (waiting in the queue or handed off) would
    /// wait for them: the least urgent running search below that priority is stopped at its next
    /// pause point (within about 200 us of its work), its job (or a shared search's members not
    /// yet served, its tree kept in the cache) waiting again, so a runner takes the urgent one
    /// next. One at a time.
    pub(super) fn preempt_for(&mut self, priority: i32, runners: usize) {
        if self.running() < runners || self.flights.iter().any(|f| f.stop.load(Ordering::Relaxed)) {
            return;
        }
        if let Some(f) = self
            .flights
            .iter()
            .filter(|f| f.priority < priority && f.state.load(Ordering::Relaxed) == RUNNING)
            .min_by_key(|f| (f.priority, std::cmp::Reverse(f.id)))
        {
            f.stop.store(true, Ordering::Relaxed);
        }
    }

    /// Whether, in lockstep mode, the work handed off and not taken back is expected to keep
    /// the runners busy for [`Pace::ticks`] ticks: no more is handed off until some comes
    /// back. Never with nothing in flight, so a search bigger than that still goes (due as
    /// many ticks later as it is expected to take).
    pub(super) fn full(&self) -> bool {
        self.pace.is_some_and(|p| {
            !self.flights.is_empty()
                && self.ledger.outstanding >= p.per_tick.saturating_mul(p.ticks)
        })
    }

    /// Hands `work` of `priority` and `size` tiles (see [`Ledger`]) to the runners, starting
    /// one if fewer than `runners` are alive.
    fn hand_off(&mut self, priority: i32, work: Work, size: u64, runners: usize) {
        let kind = usize::from(matches!(work, Work::Shared { .. }));
        let expected = self.ledger.expect(kind, size);
        self.ledger.outstanding += expected;
        // Due once the runners are expected to have done it and the work ahead of it.
        let due = self.pace.map(|p| {
            let ticks = self.ledger.outstanding.div_ceil(p.per_tick.max(1));
            p.now + p.ticks.max(ticks)
        });
        let (id, stop, state) = (
            self.next_id,
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicU8::new(HANDED_OFF)),
        );
        self.next_id += 1;
        self.flights.push(Flight {
            id,
            priority,
            stop: stop.clone(),
            state: state.clone(),
            due,
            kind,
            size,
            expected,
        });
        let task = Task {
            id,
            priority,
            stop,
            state,
            work,
        };
        let start_runner = {
            let mut handoff = self.handoff.lock().expect("runners do not panic");
            handoff.tasks.push(task);
            let start = handoff.runners < runners.max(1);
            if start {
                handoff.runners += 1;
            }
            start
        };
        if start_runner {
            let (handoff, sender, scratch) = (
                self.handoff.clone(),
                self.sender.clone(),
                self.scratch.clone(),
            );
            AsyncComputeTaskPool::get()
                .spawn(run_tasks(handoff, sender, scratch))
                .detach();
        }
    }

    /// Gets `count` scratch spaces ready for searches of `grid` on a worker, touched there (see
    /// `prepare_scratch`).
    pub(super) fn warm(&mut self, grid: GridSnapshot, count: usize) {
        let pool = self.scratch.clone();
        let work = async move {
            let mut ready: Vec<Box<AStar>> = pool
                .lock()
                .map(|mut p| std::mem::take(&mut *p))
                .unwrap_or_default();
            ready.resize_with(ready.len().max(count), Box::default);
            for search in &mut ready {
                search.reserve_for(&grid);
            }
            if let Ok(mut p) = pool.lock() {
                p.extend(ready);
            }
        };
        match AsyncComputeTaskPool::try_get() {
            Some(tasks) => tasks.spawn(work).detach(),
            None => bevy::tasks::block_on(work),
        }
    }

    /// Hands `job` to the runners with `priority` (its aged priority); its result comes back
    /// through [`Self::next_report`].
    pub(super) fn spawn(&mut self, job: Job, search: WorkerSearch, priority: i32, runners: usize) {
        let size = job.size_from(search.start);
        self.hand_off(priority, Work::One(job, Box::new(search)), size, runners);
    }

    /// Hands a shared search against `grid` to the runners.
    pub(super) fn spawn_shared(
        &mut self,
        shared: SharedSearch,
        grid: GridSnapshot,
        config: SearchConfig,
        smoothing: Option<usize>,
        runners: usize,
    ) {
        let (priority, size) = (shared.priority(), shared.size());
        let work = Work::Shared {
            shared: Box::new(shared),
            grid,
            config,
            smoothing,
        };
        self.hand_off(priority, work, size, runners);
    }

    /// Searches handed off from now on are due as `pace` says (lockstep mode), or taken back as
    /// soon as they are done (`None`).
    pub(super) fn set_pace(&mut self, pace: Option<Pace>) {
        self.pace = pace;
    }

    /// The next report to take back: any that came (`frame` is `None`), or in lockstep mode
    /// those of the searches due at or before tick `frame`, in the order they were handed off,
    /// waiting for each one's runner to finish it, and no others (they wait until they are
    /// due). A flight's reports come in the order its runner sent them. (A game switching modes
    /// loses nothing: reports held for lockstep are taken first once it is off, and searches
    /// handed off before it was on are due at once.)
    pub(super) fn next_report(&mut self, frame: Option<u64>) -> Option<WorkerReport> {
        let Some(frame) = frame else {
            if !self.early.is_empty() {
                let r = self.early.remove(0);
                return Some(self.taken(r));
            }
            return self.receiver.try_recv().ok().map(|r| self.taken(r));
        };
        let id = self
            .flights
            .iter()
            .filter(|f| f.due.is_none_or(|d| d <= frame))
            .map(|f| f.id)
            .min()?;
        if let Some(i) = self.early.iter().position(|r| r.id() == id) {
            let r = self.early.remove(i);
            return Some(self.taken(r));
        }
        loop {
            // A runner never ends without reporting its task; the receiver's sender half lives
            // in `self`, so this waits for the runner, never forever on a closed channel.
            let r = match self.receiver.try_recv() {
                Ok(r) => r,
                Err(_) => {
                    let t = Instant::now();
                    let r = self.receiver.recv().ok();
                    self.waited += t.elapsed();
                    r?
                }
            };
            if r.id() == id {
                return Some(self.taken(r));
            }
            self.early.push(r);
        }
    }

    /// Wall time spent waiting for reports due (lockstep mode) since the last call.
    pub(super) fn take_waited(&mut self) -> Duration {
        std::mem::take(&mut self.waited)
    }

    /// `r` taken back: a report that ends its flight lands it, and settles its work.
    fn taken(&mut self, r: WorkerReport) -> WorkerReport {
        let counted = match &r {
            WorkerReport::Served(..) => return r,
            WorkerReport::Stopped(..) => None,
            WorkerReport::One(_, _, counted) => Some(*counted),
            WorkerReport::Shared(_, s) => Some(s.counted),
        };
        let id = r.id();
        if let Some(i) = self.flights.iter().position(|f| f.id == id) {
            let f = self.flights.remove(i);
            self.ledger.settle(f.kind, f.size, f.expected, counted);
        }
        r
    }
}

impl WorkerReport {
    /// The id of the flight it reports on.
    fn id(&self) -> u64 {
        match self {
            WorkerReport::One(id, ..)
            | WorkerReport::Stopped(id, _)
            | WorkerReport::Served(id, _)
            | WorkerReport::Shared(id, _) => *id,
        }
    }
}

/// A runner: takes the most urgent task handed off (first handed off among equals), runs it,
/// sends its report, and goes on until none is left.
async fn run_tasks(
    handoff: Arc<Mutex<Handoff>>,
    sender: Sender<WorkerReport>,
    scratch: ScratchPool,
) {
    let mut co = Cooperative::new();
    loop {
        let task = {
            let Ok(mut h) = handoff.lock() else { return };
            let next = (0..h.tasks.len())
                .max_by_key(|&i| (h.tasks[i].priority, std::cmp::Reverse(h.tasks[i].id)));
            match next {
                Some(i) => h.tasks.swap_remove(i),
                None => {
                    // Under the lock: a task handed off from now on starts a new runner.
                    h.runners -= 1;
                    return;
                }
            }
        };
        task.state.store(RUNNING, Ordering::Relaxed);
        co.stop = Some(task.stop);
        let id = task.id;
        // The receiver lives as long as the plugin's queue; if it is gone the app is shutting
        // down and the result has nowhere to go.
        let report = match task.work {
            Work::One(job, search) => {
                match run_job(job, &search, Scratch::take(&scratch), &mut co).await {
                    Ok((result, counted)) => WorkerReport::One(id, result, counted),
                    Err(job) => WorkerReport::Stopped(id, job),
                }
            }
            Work::Shared {
                shared,
                grid,
                config,
                smoothing,
            } => {
                let scratch = Scratch::take(&scratch);
                let report = run_shared(
                    id, *shared, &grid, &config, smoothing, &sender, scratch, &mut co,
                )
                .await;
                WorkerReport::Shared(id, report)
            }
        };
        // Done: no longer running (a search stopped for an urgent one frees its runner now,
        // whenever its report is taken back).
        task.state.store(DONE, Ordering::Relaxed);
        let _ = sender.send(report);
        co.pause_point().await;
    }
}

/// Search scratch spaces kept for worker searches (one each while it runs).
type ScratchPool = Arc<Mutex<Vec<Box<AStar>>>>;

/// A worker search's scratch space, taken from the pool and given back when dropped. Held
/// across the search's pause points, where other searches run on the same thread (a
/// thread-local scratch could not be).
struct Scratch {
    search: Option<Box<AStar>>,
    pool: ScratchPool,
}

impl Scratch {
    fn take(pool: &ScratchPool) -> Self {
        let search = pool.lock().ok().and_then(|mut p| p.pop());
        Scratch {
            search: Some(search.unwrap_or_default()),
            pool: pool.clone(),
        }
    }

    fn get(&mut self) -> &mut AStar {
        self.search.as_mut().expect("held until dropped")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let (Some(search), Ok(mut pool)) = (self.search.take(), self.pool.lock()) {
            pool.push(search);
        }
    }
}

/// Heap pops per slice of a worker search between pause points.
const WORKER_SLICE: u32 = 256;

/// Line checks per step of a worker's smoothing between pause points.
const WORKER_SMOOTH_STEP: u32 = 4;

/// Steps `search` until it ends, giving way between slices, its work added to `counted`;
/// `None` if asked to stop.
async fn finish(
    search: &mut AStar,
    grid: &NavGrid,
    co: &mut Cooperative,
    counted: &mut u64,
) -> Option<Result<Path, PathError>> {
    let result = loop {
        match search.step(grid, WORKER_SLICE) {
            SearchStep::Pending if co.stopped() => return None,
            SearchStep::Pending => co.pause_point().await,
            SearchStep::Found(p) => break Ok(p),
            SearchStep::Failed(e) => break Err(e),
        }
    };
    // Counted as the main thread counts a search's expansions.
    let table = search.used_jump_points() && grid.has_jump_table();
    let costs = Cost::of_search(table, search.expansions(), search.scan_expansions());
    *counted += costs.iter().map(|&c| c.nanos_on(grid)).sum::<u64>();
    Some(result)
}

/// A whole search on a worker (through the region map if it has one, flat if that fails, and
/// again with stopped units as a penalty if nothing is found around them), and which it was,
/// its work added to `counted`; `None` if asked to stop.
async fn search_job(
    job: &Job,
    s: &WorkerSearch,
    search: &mut AStar,
    co: &mut Cooperative,
    counted: &mut u64,
) -> Option<(Result<Path, PathError>, SearchKind)> {
    let grid = &*s.grid;
    let overlay = &s.overlay;
    let regions = s.regions.as_deref();
    match begin_any(search, grid, regions, s.start, job, &s.config, overlay) {
        Err(e) => return Some((Err(e), SearchKind::Own)),
        Ok(Some(mut h)) => loop {
            let step = h.step(grid, search, WORKER_SLICE);
            if !matches!(step, SearchStep::Pending) {
                *counted += Cost::Route(h.route_pops()).nanos_on(grid)
                    + Cost::Legs(h.expansions()).nanos_on(grid);
            }
            match step {
                SearchStep::Pending if co.stopped() => return None,
                SearchStep::Pending => co.pause_point().await,
                SearchStep::Found(p) => return Some((Ok(p), SearchKind::Hierarchical)),
                // A leg blocked by the overlay: search flat.
                SearchStep::Failed(_) => {
                    if let Err(e) = begin(search, grid, s.start, job, &s.config, overlay) {
                        return Some((Err(e), SearchKind::Own));
                    }
                    break;
                }
            }
        },
        Ok(None) => {}
    }
    let result = finish(search, grid, co, counted).await?;
    // Blocking stopped units (or a stuck unit's jam) left no way at all, or none short enough
    // to take: search again with them priced.
    let fallback = match &result {
        Err(PathError::NoPath | PathError::LimitExceeded { .. }) => s.overlay.soften(),
        _ => None,
    };
    let result = match fallback {
        Some(soft) => match begin(search, grid, s.start, job, &s.config, &soft) {
            Ok(()) => finish(search, grid, co, counted).await?,
            Err(e) => Err(e),
        },
        None => result,
    };
    let kind = if search.used_jump_points() {
        SearchKind::JumpPoints
    } else {
        SearchKind::Own
    };
    Some((result, kind))
}

/// A whole search and its smoothing on a worker, and the work it counted; the job back if it
/// was asked to stop.
async fn run_job(
    job: Job,
    s: &WorkerSearch,
    mut scratch: Scratch,
    co: &mut Cooperative,
) -> Result<(SearchResult, u64), Job> {
    let grid = &*s.grid;
    let mut counted = Cost::Start.nanos_on(grid);
    let Some((result, search)) = search_job(&job, s, scratch.get(), co, &mut counted).await else {
        return Err(job);
    };
    drop(scratch);
    let smoothed = match (&result, s.smoothing) {
        (Ok(p), Some(first)) => {
            smooth_on_worker(grid, &p.cells, s.radius, first, co, &mut counted).await
        }
        _ => Vec::new(),
    };
    let result = SearchResult {
        job,
        version: grid.version(),
        result,
        smoothed,
        worker: true,
        search,
        rest: None,
    };
    Ok((result, counted))
}

/// `cells` smoothed on the worker, all of them, so no rest is left for the main thread (see
/// `refine`): a path longer than `first` steps with one forward pass ([`Smoother::forward`]:
/// the first leg the same waypoints a leading smoother gives inline, the rest the leading
/// chunks chained, a twentieth of a whole smoothing's work), a shorter one (or all of them,
/// `first` = `usize::MAX`) whole. Measured with `soak --units 2000 --workers 2` (3,000 + 300
/// frames): the rests left raw and smoothed on the main thread took half its budget (and their
/// triage a quarter) for 4 % of them smoothed within 30 frames, while the worker thread was
/// busy 15 % of the time; request to outcome p50 / p99 21 / 52 frames, 1 / 4 with the forward
/// pass here, 39 / 113 with whole smoothing here (the worker thread busy all the time).
async fn smooth_on_worker(
    grid: &NavGrid,
    cells: &[Cell],
    radius: f32,
    first: usize,
    co: &mut Cooperative,
    counted: &mut u64,
) -> Vec<Vec2> {
    let mut smoother = if cells.len() <= first.saturating_add(1) {
        Smoother::new(grid, cells, radius)
    } else {
        Smoother::forward(grid, cells, radius)
    };
    loop {
        *counted += Cost::LineCheck.nanos_on(grid);
        if let Some(points) = smoother.step(grid, WORKER_SMOOTH_STEP) {
            *counted += Cost::Cells(smoother.work()).nanos_on(grid);
            return points;
        }
        co.pause_point().await;
    }
}

/// A whole shared search on a worker: the tree grown, every member served, smoothed and sent
/// at once; asked to stop, the members not yet served go back.
async fn run_shared(
    id: u64,
    mut shared: SharedSearch,
    grid: &NavGrid,
    config: &SearchConfig,
    smoothing: Option<usize>,
    sender: &Sender<WorkerReport>,
    mut scratch: Scratch,
    co: &mut Cooperative,
) -> SharedReport {
    let mut alone = Vec::new();
    let mut unserved = Vec::new();
    let mut counted = Cost::Start.nanos_on(grid);
    loop {
        if co.stopped() {
            unserved = shared.unserved();
            break;
        }
        // Counted as the main thread counts a shared search's steps.
        let before = shared.before_step();
        let step = shared.step(grid, WORKER_SLICE, scratch.get(), config, |_| true);
        counted += shared
            .step_costs(before, &step, scratch.get())
            .map(|c| c.nanos_on(grid))
            .sum::<u64>();
        match step {
            SharedStep::Growing => {}
            SharedStep::Served(mut r, radius) => {
                r.worker = true;
                if let (Some(first), Ok(p)) = (smoothing, &r.result) {
                    r.smoothed =
                        smooth_on_worker(grid, &p.cells, radius, first, co, &mut counted).await;
                }
                let _ = sender.send(WorkerReport::Served(id, r));
            }
            SharedStep::Alone(job) => alone.push(job),
            SharedStep::Idle => break,
        }
        co.pause_point().await;
    }
    let (key, goal) = ((shared.map, shared.class), shared.goal);
    let (tree, overlay) = shared.into_tree();
    SharedReport {
        key,
        goal,
        alone,
        unserved,
        tree,
        overlay,
        counted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ledger_expects_what_searches_of_a_kind_took_a_tile() {
        let mut ledger = Ledger::default();
        assert_eq!(ledger.expect(0, 100), 100 * PRIOR_PER_TILE[0]);
        // Own searches taking 5,000 a tile: the expectation moves there, shared ones' stays.
        for _ in 0..40 {
            let expected = ledger.expect(0, 100);
            ledger.outstanding += expected;
            ledger.settle(0, 100, expected, Some(500_000));
        }
        assert_eq!(ledger.outstanding, 0, "settled: nothing outstanding");
        let per_tile = ledger.expect(0, 1);
        assert!((4_900..=5_100).contains(&per_tile), "{per_tile}");
        assert_eq!(ledger.expect(1, 10), 10 * PRIOR_PER_TILE[1]);
        // A search stopped before its end settles what it was expected to take and teaches
        // nothing; a size of 0 counts as 1.
        ledger.outstanding += 7;
        ledger.settle(1, 0, 7, None);
        assert_eq!(ledger.outstanding, 0);
        assert_eq!(ledger.expect(1, 0), PRIOR_PER_TILE[1]);
    }
}
