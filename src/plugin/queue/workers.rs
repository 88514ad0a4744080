//! Worker searches: spawned on Bevy's `AsyncComputeTaskPool` against an immutable snapshot of
//! the grid, taking turns with each other in slices and giving way to the frame's own threads
//! now and then, their results sent back over a `crossbeam-channel`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bevy::tasks::AsyncComputeTaskPool;
use bevy::tasks::futures_lite::future::yield_now;
use crossbeam_channel::{Receiver, Sender};

use bevy::prelude::Vec2;

use crate::core::{
    AStar, Cell, CellOverlay, GoalTree, NavGrid, Path, PathError, RegionMap, SearchConfig,
    SearchStep, Smoother,
};

use crate::plugin::map::GridSnapshot;
use crate::plugin::outcomes::SearchKind;

use super::job::{Job, Overlay, SearchResult, begin, begin_any};
use super::refine::{Refined, Refining, Rest, with_raw_rest};
use super::shared::{MapClass, SharedSearch, SharedStep};

/// What a worker sends back.
pub(super) enum WorkerReport {
    /// A unit's own search (the flight's id).
    One(u64, SearchResult),
    /// A unit's own search stopped for a more urgent one (see [`WorkerChannel::preempt_for`]):
    /// its job waits again.
    Stopped(u64, Job),
    /// One member of a shared search served (sent as soon as it is, so a large group's paths
    /// arrive while the worker serves the rest; it does not end the search in flight).
    Served(SearchResult),
    /// A shared search done (or stopped): the members it could not serve, and its tree.
    Shared(u64, SharedReport),
    /// The rest of a delivered path, smoothed.
    Refined(Refined),
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
}

/// The channel worker searches report on, and the searches out.
pub(super) struct WorkerChannel {
    sender: Sender<WorkerReport>,
    receiver: Receiver<WorkerReport>,
    /// Searches spawned whose result has not been received.
    flights: Vec<Flight>,
    next_id: u64,
    /// Scratch spaces of worker searches.
    scratch: ScratchPool,
}

impl Default for WorkerChannel {
    fn default() -> Self {
        let (sender, receiver) = crossbeam_channel::unbounded();
        WorkerChannel {
            sender,
            receiver,
            flights: Vec::new(),
            next_id: 0,
            scratch: ScratchPool::default(),
        }
    }
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

/// A search on a worker.
struct Flight {
    id: u64,
    /// Its priority (a shared search's: its most urgent member's).
    priority: i32,
    /// Set to stop it at its next pause point.
    stop: Arc<AtomicBool>,
}

impl WorkerChannel {
    /// Searches spawned whose result has not been received.
    pub(super) fn in_flight(&self) -> usize {
        self.flights.len()
    }

    /// A new flight of `priority`: its id and stop flag.
    fn fly(&mut self, priority: i32) -> (u64, Arc<AtomicBool>) {
        let (id, stop) = (self.next_id, Arc::new(AtomicBool::new(false)));
        self.next_id += 1;
        self.flights.push(Flight {
            id,
            priority,
            stop: stop.clone(),
        });
        (id, stop)
    }

    /// With every slot taken, a request of `priority` waits: the least urgent search in flight
    /// below that priority is stopped at its next pause point (within about 200 us of its work),
    /// its job (or a shared search's members not yet served, its tree kept in the cache) waiting
    /// again, so the slot goes to the urgent one without exceeding the cap. One at a time.
    pub(super) fn preempt_for(&mut self, priority: i32) {
        if self.flights.iter().any(|f| f.stop.load(Ordering::Relaxed)) {
            return;
        }
        if let Some(f) = self
            .flights
            .iter()
            .filter(|f| f.priority < priority)
            .min_by_key(|f| (f.priority, std::cmp::Reverse(f.id)))
        {
            f.stop.store(true, Ordering::Relaxed);
        }
    }

    /// Runs `job` on the async compute pool; its result comes back through [`Self::try_recv`].
    pub(super) fn spawn(&mut self, job: Job, search: WorkerSearch) {
        let sender = self.sender.clone();
        let scratch = Scratch::take(&self.scratch);
        let (id, stop) = self.fly(job.priority);
        AsyncComputeTaskPool::get()
            .spawn(async move {
                let mut co = Cooperative::stoppable(stop);
                let report = match run_job(job, &search, scratch, &mut co).await {
                    Ok(result) => WorkerReport::One(id, result),
                    Err(job) => WorkerReport::Stopped(id, job),
                };
                // The receiver lives as long as the plugin's queue; if it is gone the app is
                // shutting down and the result has nowhere to go.
                let _ = sender.send(report);
            })
            .detach();
    }

    /// Runs a shared search on the async compute pool against `grid`.
    pub(super) fn spawn_shared(
        &mut self,
        shared: SharedSearch,
        grid: GridSnapshot,
        config: SearchConfig,
        smoothing: Option<usize>,
    ) {
        let sender = self.sender.clone();
        let scratch = Scratch::take(&self.scratch);
        let (id, stop) = self.fly(shared.priority());
        AsyncComputeTaskPool::get()
            .spawn(async move {
                let mut co = Cooperative::stoppable(stop);
                let report =
                    run_shared(shared, &grid, &config, smoothing, &sender, scratch, &mut co).await;
                let _ = sender.send(WorkerReport::Shared(id, report));
            })
            .detach();
    }

    /// Smooths the rest of a delivered path on the async compute pool against `grid`.
    /// It does not count as a search in flight.
    pub(super) fn spawn_refine(&mut self, mut refining: Refining, grid: GridSnapshot) {
        let sender = self.sender.clone();
        AsyncComputeTaskPool::get()
            .spawn(async move {
                let mut co = Cooperative::new();
                let refined = loop {
                    if let Some(r) = refining.step(&grid, WORKER_SMOOTH_STEP) {
                        break r;
                    }
                    co.pause_point().await;
                };
                let _ = sender.send(WorkerReport::Refined(refined));
            })
            .detach();
    }

    /// A finished worker search, if one is waiting.
    pub(super) fn try_recv(&mut self) -> Option<WorkerReport> {
        let r = self.receiver.try_recv().ok()?;
        if let WorkerReport::One(id, _)
        | WorkerReport::Stopped(id, _)
        | WorkerReport::Shared(id, _) = &r
        {
            self.flights.retain(|f| f.id != *id);
        }
        Some(r)
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

/// How long a worker search runs before it gives way (see [`Cooperative`]).
const WORKER_YIELD_EVERY: Duration = Duration::from_micros(200);

/// Heap pops per slice of a worker search between pause points.
const WORKER_SLICE: u32 = 256;

/// Line checks per step of a worker's smoothing between pause points.
const WORKER_SMOOTH_STEP: u32 = 4;

/// Makes a long computation on a worker give way now and then (every [`WORKER_YIELD_EVERY`]):
///
/// - to the other searches on the pool: it goes to the back of the executor's queue, so
///   searches take turns in slices instead of running one after the other. On 2 cores Bevy's
///   async compute pool has one thread: a player's order spawned behind three long searches
///   waited for all three to finish;
/// - to the frame's threads (`yield_now` of the thread), so they wait for a core at most that
///   long instead of the scheduler's full time slice. Measured on 2 cores (`perf sched`): without
///   it the main thread and Bevy's compute thread waited 2-4 ms for the core a worker search
///   held, in most frames where a search was spawned.
struct Cooperative {
    since: Instant,
    /// Set when the search is to stop (see [`WorkerChannel::preempt_for`]).
    stop: Option<Arc<AtomicBool>>,
}

impl Cooperative {
    fn new() -> Self {
        Cooperative {
            since: Instant::now(),
            stop: None,
        }
    }

    fn stoppable(stop: Arc<AtomicBool>) -> Self {
        Cooperative {
            stop: Some(stop),
            ..Self::new()
        }
    }

    /// Whether the search is asked to stop.
    fn stopped(&self) -> bool {
        self.stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::Relaxed))
    }

    /// Called between slices of work: gives way once `WORKER_YIELD_EVERY` has passed.
    async fn pause_point(&mut self) {
        if self.since.elapsed() >= WORKER_YIELD_EVERY {
            std::thread::yield_now();
            yield_now().await;
            self.since = Instant::now();
        }
    }
}

/// Steps `search` until it ends, giving way between slices; `None` if asked to stop.
async fn finish(
    search: &mut AStar,
    grid: &NavGrid,
    co: &mut Cooperative,
) -> Option<Result<Path, PathError>> {
    loop {
        match search.step(grid, WORKER_SLICE) {
            SearchStep::Pending if co.stopped() => return None,
            SearchStep::Pending => co.pause_point().await,
            SearchStep::Found(p) => return Some(Ok(p)),
            SearchStep::Failed(e) => return Some(Err(e)),
        }
    }
}

/// A whole search on a worker (through the region map if it has one, flat if that fails, and
/// again with stopped units as a penalty if nothing is found around them), and which it was;
/// `None` if asked to stop.
async fn search_job(
    job: &Job,
    s: &WorkerSearch,
    search: &mut AStar,
    co: &mut Cooperative,
) -> Option<(Result<Path, PathError>, SearchKind)> {
    let grid = &*s.grid;
    let overlay = &s.overlay.cells;
    let regions = s.regions.as_deref();
    match begin_any(search, grid, regions, s.start, job, &s.config, overlay) {
        Err(e) => return Some((Err(e), SearchKind::Own)),
        Ok(Some(mut h)) => loop {
            match h.step(grid, search, WORKER_SLICE) {
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
    let result = match finish(search, grid, co).await? {
        Err(PathError::NoPath) if let Some(soft) = s.overlay.soften() => {
            match begin(search, grid, s.start, job, &s.config, &soft.cells) {
                Ok(()) => finish(search, grid, co).await?,
                Err(e) => Err(e),
            }
        }
        other => other,
    };
    Some((result, SearchKind::Own))
}

/// A whole search and its smoothing on a worker; the job back if it was asked to stop.
async fn run_job(
    job: Job,
    s: &WorkerSearch,
    mut scratch: Scratch,
    co: &mut Cooperative,
) -> Result<SearchResult, Job> {
    let grid = &*s.grid;
    let Some((result, search)) = search_job(&job, s, scratch.get(), co).await else {
        return Err(job);
    };
    drop(scratch);
    let (smoothed, rest) = match (&result, s.smoothing) {
        (Ok(p), Some(first)) => smooth_first_leg(grid, &p.cells, s.radius, first, co).await,
        _ => (Vec::new(), None),
    };
    Ok(SearchResult {
        job,
        version: grid.version(),
        result,
        smoothed,
        worker: true,
        search,
        rest,
    })
}

/// The first leg of `cells` smoothed and the rest's cell centers (see `refine`).
async fn smooth_first_leg(
    grid: &NavGrid,
    cells: &[Cell],
    radius: f32,
    first: usize,
    co: &mut Cooperative,
) -> (Vec<Vec2>, Option<Rest>) {
    let mut smoother = Smoother::leading(grid, cells, radius, first);
    let points = loop {
        if let Some(points) = smoother.step(grid, WORKER_SMOOTH_STEP) {
            break points;
        }
        co.pause_point().await;
    };
    with_raw_rest(grid, cells, points, radius)
}

/// A whole shared search on a worker: the tree grown, every member served, smoothed and sent
/// at once; asked to stop, the members not yet served go back.
async fn run_shared(
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
    loop {
        if co.stopped() {
            unserved = shared.unserved();
            break;
        }
        match shared.step(grid, WORKER_SLICE, scratch.get(), config, |_| true) {
            SharedStep::Growing => {}
            SharedStep::Served(mut r, radius) => {
                r.worker = true;
                if let (Some(first), Ok(p)) = (smoothing, &r.result) {
                    (r.smoothed, r.rest) =
                        smooth_first_leg(grid, &p.cells, radius, first, co).await;
                }
                let _ = sender.send(WorkerReport::Served(r));
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
    }
}
