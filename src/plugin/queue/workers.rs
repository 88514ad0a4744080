//! Worker searches: spawned on Bevy's `AsyncComputeTaskPool` against an immutable snapshot of
//! the grid, giving way to the frame's own threads now and then, their results sent back over a
//! `crossbeam-channel`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bevy::tasks::AsyncComputeTaskPool;
use crossbeam_channel::{Receiver, Sender};

use bevy::prelude::{Entity, Vec2};

use crate::core::{
    Cell, CellOverlay, GoalTree, NavGrid, RegionMap, SearchConfig, SearchStep, Smoother,
    with_scratch,
};

use crate::plugin::outcomes::SearchKind;

use super::job::{Job, Overlay, SearchResult, begin, begin_any};
use super::refine::{Refined, Refining, Rest, with_raw_rest};
use super::shared::{SharedSearch, SharedStep};

/// What a worker sends back.
pub(super) enum WorkerReport {
    /// A unit's own search.
    One(SearchResult),
    /// One member of a shared search served (sent as soon as it is, so a large group's paths
    /// arrive while the worker serves the rest; it does not end the search in flight).
    Served(SearchResult),
    /// A shared search done: the members it could not serve, and its tree.
    Shared(SharedReport),
    /// The rest of a delivered path, smoothed.
    Refined(Refined),
}

/// A shared search done on a worker.
pub(super) struct SharedReport {
    pub(super) map: Entity,
    pub(super) goal: Cell,
    pub(super) alone: Vec<Job>,
    pub(super) tree: Box<GoalTree>,
    pub(super) overlay: Vec<(Cell, CellOverlay)>,
}

/// The channel worker searches report on, and how many are out.
pub(super) struct WorkerChannel {
    sender: Sender<WorkerReport>,
    receiver: Receiver<WorkerReport>,
    /// Searches spawned whose result has not been received.
    pub(super) in_flight: usize,
}

impl Default for WorkerChannel {
    fn default() -> Self {
        let (sender, receiver) = crossbeam_channel::unbounded();
        WorkerChannel {
            sender,
            receiver,
            in_flight: 0,
        }
    }
}

/// What a worker search needs besides its job.
pub(super) struct WorkerSearch {
    pub(super) grid: Arc<NavGrid>,
    pub(super) start: Cell,
    pub(super) config: SearchConfig,
    pub(super) overlay: Overlay,
    /// Steps smoothed before delivery (`None`: no smoothing).
    pub(super) smoothing: Option<usize>,
    pub(super) radius: f32,
    /// The map's region map, for a long request (see [`begin_any`]).
    pub(super) regions: Option<Arc<RegionMap>>,
}

impl WorkerChannel {
    /// Runs `job` on the async compute pool; its result comes back through [`Self::try_recv`].
    pub(super) fn spawn(&mut self, job: Job, search: WorkerSearch) {
        let sender = self.sender.clone();
        self.in_flight += 1;
        AsyncComputeTaskPool::get()
            .spawn(async move {
                let result = run_job(job, &search);
                // The receiver lives as long as the plugin's queue; if it is gone the app is
                // shutting down and the result has nowhere to go.
                let _ = sender.send(WorkerReport::One(result));
            })
            .detach();
    }

    /// Runs a shared search on the async compute pool against `grid`.
    pub(super) fn spawn_shared(
        &mut self,
        shared: SharedSearch,
        grid: Arc<NavGrid>,
        config: SearchConfig,
        smoothing: Option<usize>,
    ) {
        let sender = self.sender.clone();
        self.in_flight += 1;
        AsyncComputeTaskPool::get()
            .spawn(async move {
                let report = run_shared(shared, &grid, &config, smoothing, &sender);
                let _ = sender.send(WorkerReport::Shared(report));
            })
            .detach();
    }

    /// Smooths the rest of a delivered path on the async compute pool against `grid`.
    /// It does not count as a search in flight.
    pub(super) fn spawn_refine(&mut self, mut refining: Refining, grid: Arc<NavGrid>) {
        let sender = self.sender.clone();
        AsyncComputeTaskPool::get()
            .spawn(async move {
                let mut co = Cooperative::new();
                let refined = loop {
                    if let Some(r) = refining.step(&grid, WORKER_SMOOTH_STEP) {
                        break r;
                    }
                    co.pause_point();
                };
                let _ = sender.send(WorkerReport::Refined(refined));
            })
            .detach();
    }

    /// A finished worker search, if one is waiting.
    pub(super) fn try_recv(&mut self) -> Option<WorkerReport> {
        let r = self.receiver.try_recv().ok()?;
        if !matches!(r, WorkerReport::Refined(_) | WorkerReport::Served(_)) {
            self.in_flight -= 1;
        }
        Some(r)
    }
}

/// How long a worker search runs before it yields its thread (see [`Cooperative`]).
const WORKER_YIELD_EVERY: Duration = Duration::from_micros(200);

/// Heap pops per slice of a worker search between pause points.
const WORKER_SLICE: u32 = 256;

/// Line checks per step of a worker's smoothing between pause points.
const WORKER_SMOOTH_STEP: u32 = 4;

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

/// A whole search (and its smoothing) on a worker thread, with that thread's reusable scratch.
fn run_job(job: Job, s: &WorkerSearch) -> SearchResult {
    let grid = &*s.grid;
    let mut co = Cooperative::new();
    let mut kind = SearchKind::Own;
    let result = with_scratch(|search| {
        let regions = s.regions.as_deref();
        let overlay = &s.overlay.cells;
        if let Some(mut h) = begin_any(search, grid, regions, s.start, &job, &s.config, overlay)? {
            // Through the region map; a failure (a leg blocked by the overlay) searches flat.
            loop {
                match h.step(grid, search, WORKER_SLICE) {
                    SearchStep::Pending => co.pause_point(),
                    SearchStep::Found(p) => {
                        kind = SearchKind::Hierarchical;
                        return Ok(p);
                    }
                    SearchStep::Failed(_) => {
                        begin(search, grid, s.start, &job, &s.config, overlay)?;
                        break;
                    }
                }
            }
        }
        match search.finish_in_slices(grid, WORKER_SLICE, || co.pause_point()) {
            Err(crate::core::PathError::NoPath) if let Some(soft) = s.overlay.soften() => {
                begin(search, grid, s.start, &job, &s.config, &soft.cells)?;
                search.finish_in_slices(grid, WORKER_SLICE, || co.pause_point())
            }
            other => other,
        }
    });
    let (smoothed, rest) = match (&result, s.smoothing) {
        (Ok(p), Some(first)) => smooth_first_leg(grid, &p.cells, s.radius, first, &mut co),
        _ => (Vec::new(), None),
    };
    SearchResult {
        job,
        version: grid.version(),
        result,
        smoothed,
        worker: true,
        search: kind,
        rest,
    }
}

/// The first leg of `cells` smoothed and the rest's cell centers (see `refine`).
fn smooth_first_leg(
    grid: &NavGrid,
    cells: &[Cell],
    radius: f32,
    first: usize,
    co: &mut Cooperative,
) -> (Vec<Vec2>, Option<Rest>) {
    let points =
        Smoother::leading(cells, radius, first)
            .finish_in_steps(grid, WORKER_SMOOTH_STEP, || co.pause_point());
    with_raw_rest(cells, points, radius)
}

/// A whole shared search on a worker thread: the tree grown, every member served, smoothed and
/// sent at once.
fn run_shared(
    mut shared: SharedSearch,
    grid: &NavGrid,
    config: &SearchConfig,
    smoothing: Option<usize>,
    sender: &Sender<WorkerReport>,
) -> SharedReport {
    let mut co = Cooperative::new();
    let mut alone = Vec::new();
    with_scratch(|search| {
        loop {
            match shared.step(grid, WORKER_SLICE, search, config, |_| true) {
                SharedStep::Growing => {}
                SharedStep::Served(mut r, radius) => {
                    r.worker = true;
                    if let (Some(first), Ok(p)) = (smoothing, &r.result) {
                        (r.smoothed, r.rest) =
                            smooth_first_leg(grid, &p.cells, radius, first, &mut co);
                    }
                    let _ = sender.send(WorkerReport::Served(r));
                }
                SharedStep::Alone(job) => alone.push(job),
                SharedStep::Idle => break,
            }
            co.pause_point();
        }
    });
    let (map, goal) = (shared.map, shared.goal);
    let (tree, overlay) = shared.into_tree();
    SharedReport {
        map,
        goal,
        alone,
        tree,
        overlay,
    }
}
