//! Builds that run long without a pause (a map's region map, its jump tables) on a thread of
//! their own, so that they never hold the async compute pool's threads: on 2 cores Bevy gives
//! that pool one thread, and a worker search handed off behind a region map build of a
//! 512 x 512 map (0.1-0.5 s) waited for all of it (in lockstep mode, the tick it was due at
//! waited too).

use bevy::tasks::AsyncComputeTaskPool;

/// Runs `work` on a new thread named `name`; where threads cannot be made (a platform
/// without them), on the async compute pool, or at once where there is no pool.
pub(crate) fn build_apart(name: &str, work: impl FnOnce() + Send + 'static) {
    // `spawn` hands the closure back only by dropping it: keep it in an `Option` shared with
    // the thread so a failed spawn can still run it.
    let slot = std::sync::Arc::new(std::sync::Mutex::new(Some(work)));
    let theirs = slot.clone();
    let spawned = std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            if let Some(work) = theirs.lock().ok().and_then(|mut w| w.take()) {
                work();
            }
        });
    if spawned.is_ok() {
        return;
    }
    let Some(work) = slot.lock().ok().and_then(|mut w| w.take()) else {
        return;
    };
    match AsyncComputeTaskPool::try_get() {
        Some(pool) => pool.spawn(async move { work() }).detach(),
        None => work(),
    }
}
