//! Worker searches: spawned on Bevy's `AsyncComputeTaskPool` against an immutable snapshot of
//! the grid, giving way to the frame's own threads now and then, their results sent back over a
//! `crossbeam-channel`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bevy::tasks::AsyncComputeTaskPool;
use crossbeam_channel::{Receiver, Sender};

use crate::core::{Cell, NavGrid, SearchConfig, smooth_path_in_steps, with_scratch};

use super::job::{Job, Overlay, SearchResult, begin};

/// The channel worker searches report on, and how many are out.
pub(super) struct WorkerChannel {
    sender: Sender<SearchResult>,
    receiver: Receiver<SearchResult>,
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
    pub(super) smoothing: bool,
    pub(super) radius: f32,
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
                let _ = sender.send(result);
            })
            .detach();
    }

    /// A finished worker search, if one is waiting.
    pub(super) fn try_recv(&mut self) -> Option<SearchResult> {
        let r = self.receiver.try_recv().ok()?;
        self.in_flight -= 1;
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
    let result = with_scratch(|search| {
        begin(search, grid, s.start, &job, &s.config, &s.overlay.cells)?;
        match search.finish_in_slices(grid, WORKER_SLICE, || co.pause_point()) {
            Err(crate::core::PathError::NoPath) if let Some(soft) = s.overlay.soften() => {
                begin(search, grid, s.start, &job, &s.config, &soft.cells)?;
                search.finish_in_slices(grid, WORKER_SLICE, || co.pause_point())
            }
            other => other,
        }
    });
    let smoothed = match (&result, s.smoothing) {
        (Ok(p), true) => smooth_path_in_steps(grid, &p.cells, s.radius, WORKER_SMOOTH_STEP, || {
            co.pause_point()
        }),
        _ => Vec::new(),
    };
    SearchResult {
        job,
        version: grid.version(),
        result,
        smoothed,
        worker: true,
    }
}
