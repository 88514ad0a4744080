//! Long computations on Bevy's async compute pool that give way now and then: to each other
//! (they take turns in slices) and to the frame's own threads. Worker searches of the queue and
//! vehicles' drive searches run this way.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bevy::tasks::futures_lite::future::yield_now;

/// How long a worker search runs before it gives way (see [`Cooperative`]).
const WORKER_YIELD_EVERY: Duration = Duration::from_micros(200);

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
pub(crate) struct Cooperative {
    since: Instant,
    /// Set when the search is to stop (a worker search stopped for a more urgent one).
    pub(crate) stop: Option<Arc<AtomicBool>>,
}

impl Cooperative {
    pub(crate) fn new() -> Self {
        Cooperative {
            since: Instant::now(),
            stop: None,
        }
    }

    /// Whether the search is asked to stop.
    pub(crate) fn stopped(&self) -> bool {
        self.stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::Relaxed))
    }

    /// Called between slices of work: gives way once `WORKER_YIELD_EVERY` has passed.
    pub(crate) async fn pause_point(&mut self) {
        if self.since.elapsed() >= WORKER_YIELD_EVERY {
            std::thread::yield_now();
            yield_now().await;
            self.since = Instant::now();
        }
    }
}
