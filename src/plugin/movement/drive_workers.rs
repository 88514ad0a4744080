//! Vehicles' drive searches on Bevy's `AsyncComputeTaskPool`, with workers
//! ([`WorkerMode::Async`](crate::WorkerMode)): each against a snapshot of its grid, taking turns
//! in slices with the queue's worker searches and giving way to the frame's threads, its result
//! back over a `crossbeam-channel`. The main thread only prepares a search and applies its plan.
//! In lockstep mode a result is applied [`Lockstep::worker_ticks`](crate::Lockstep::worker_ticks)
//! ticks after its hand-off, waiting for it then if it is late, so every client applies it in
//! the same tick.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bevy::prelude::Entity;
use bevy::tasks::AsyncComputeTaskPool;
use crossbeam_channel::{Receiver, Sender, TryRecvError};

use crate::core::{Cell, CellOverlay, DrivePlan, DriveQuery, DriveSearch, DriveStep, VehicleModel};
use crate::plugin::cooperative::Cooperative;
use crate::plugin::map::GridSnapshot;

/// States a drive search on a worker expands between pause points.
const DRIVE_SLICE: u32 = 512;

/// Drive searches handed off and not taken back yet, at most, per runner (as many runners as
/// the queue's workers). A runner serves them one after another with one scratch space (16
/// states a cell: about 17 MB on 256 x 256, virtual until touched), so a plan waits for no
/// frame's round trip but its own.
pub(super) const DRIVES_PER_RUNNER: usize = 16;

/// What a vehicle's search is given: its grid, lattice and ends, the band it keeps to first and
/// the cells of the vehicles standing round it.
pub(super) struct DriveJob {
    pub(super) model: VehicleModel,
    pub(super) query: DriveQuery,
    pub(super) band: Option<Vec<Cell>>,
    pub(super) overlay: Vec<(Cell, CellOverlay)>,
}

/// How a drive search ended.
pub(super) enum DriveEnd {
    Found(DrivePlan),
    /// It searched and found no plan (within its band, or at all).
    Failed,
    /// It could not begin (its ends blocked or apart, say).
    CannotBegin,
}

/// A search handed off, and whom it is for.
pub(super) struct Handed {
    pub(super) entity: Entity,
    /// The vehicle's path (ticket) when it was handed off: a plan for an older path is dropped.
    pub(super) ticket: Option<u64>,
    /// The version of the grid it searched.
    pub(super) version: u64,
    /// In lockstep mode, the tick its plan is applied in.
    due: Option<u64>,
    receiver: Receiver<DriveEnd>,
}

/// A search waiting for a runner, and where its end goes.
struct Task {
    grid: GridSnapshot,
    job: DriveJob,
    reply: Sender<DriveEnd>,
}

/// The searches waiting for a runner, and the runners serving them.
#[derive(Default)]
struct Tasks {
    waiting: VecDeque<Task>,
    runners: usize,
}

/// What the runners share: the searches waiting, and the scratch spaces not in use.
#[derive(Default)]
struct Shared {
    tasks: Mutex<Tasks>,
    scratch: Mutex<Vec<DriveSearch>>,
}

/// The drive searches handed to workers.
#[derive(Default)]
pub(super) struct DriveWorkers {
    shared: Arc<Shared>,
    handed: VecDeque<Handed>,
    /// Runs of the planner so far (in lockstep mode, a tick each).
    tick: u64,
}

impl DriveWorkers {
    /// Counts a run of the planner (a tick in lockstep mode).
    pub(super) fn next_tick(&mut self) {
        self.tick += 1;
    }

    /// Searches handed off and not taken back yet.
    pub(super) fn in_flight(&self) -> usize {
        self.handed.len()
    }

    /// The vehicles whose searches are handed off.
    pub(super) fn handed(&self) -> impl Iterator<Item = Entity> + '_ {
        self.handed.iter().map(|h| h.entity)
    }

    /// Hands `job` for `entity` (planning for path `ticket`) to a worker, on `grid`, served by at
    /// most `runners` at once; in lockstep mode its plan is applied `ticks` runs later.
    pub(super) fn hand_off(
        &mut self,
        (entity, ticket): (Entity, Option<u64>),
        (grid, job): (GridSnapshot, DriveJob),
        runners: usize,
        ticks: Option<u64>,
    ) {
        let (reply, receiver) = crossbeam_channel::bounded(1);
        let version = grid.version();
        let start = {
            let mut tasks = self.shared.tasks.lock().unwrap_or_else(|e| e.into_inner());
            tasks.waiting.push_back(Task { grid, job, reply });
            let start = tasks.runners < runners.max(1);
            tasks.runners += usize::from(start);
            start
        };
        if start {
            AsyncComputeTaskPool::get()
                .spawn(serve(self.shared.clone()))
                .detach();
        }
        self.handed.push_back(Handed {
            entity,
            ticket,
            version,
            due: ticks.map(|t| self.tick + t.max(1)),
            receiver,
        });
    }

    /// The searches that ended, in the order they were handed off. In lockstep mode, those due
    /// by this tick, waited for if they are late, and no others.
    pub(super) fn take_done(&mut self, lockstep: bool) -> Vec<(Handed, DriveEnd)> {
        let mut done = Vec::new();
        let mut waiting = VecDeque::with_capacity(self.handed.len());
        for handed in self.handed.drain(..) {
            let end = if lockstep {
                if handed.due.is_some_and(|d| d > self.tick) {
                    waiting.push_back(handed);
                    continue;
                }
                // A worker gone without an answer is a search that found nothing.
                handed.receiver.recv().unwrap_or(DriveEnd::Failed)
            } else {
                match handed.receiver.try_recv() {
                    Ok(end) => end,
                    Err(TryRecvError::Empty) => {
                        waiting.push_back(handed);
                        continue;
                    }
                    Err(TryRecvError::Disconnected) => DriveEnd::Failed,
                }
            };
            done.push((handed, end));
        }
        self.handed = waiting;
        done
    }
}

/// A runner: serves the searches waiting, one after another with one scratch space, until none
/// is left.
async fn serve(shared: Arc<Shared>) {
    let mut search = shared
        .scratch
        .lock()
        .ok()
        .and_then(|mut p| p.pop())
        .unwrap_or_default();
    loop {
        let task = {
            let mut tasks = shared.tasks.lock().unwrap_or_else(|e| e.into_inner());
            let task = tasks.waiting.pop_front();
            // Leaving while the lock is held: a search handed off after this starts a runner.
            tasks.runners -= usize::from(task.is_none());
            task
        };
        let Some(task) = task else { break };
        let end = run(&mut search, &task.grid, task.job).await;
        // The receiver is gone only if the planner was dropped.
        let _ = task.reply.send(end);
    }
    if let Ok(mut pool) = shared.scratch.lock() {
        pool.push(search);
    }
}

/// Runs a whole drive search on a worker, giving way between slices.
async fn run(search: &mut DriveSearch, grid: &GridSnapshot, job: DriveJob) -> DriveEnd {
    let begun = search.begin_among(
        grid,
        &job.model,
        job.query,
        job.band.as_deref(),
        &job.overlay,
    );
    if begun.is_err() {
        return DriveEnd::CannotBegin;
    }
    let mut co = Cooperative::new();
    loop {
        match search.step(grid, DRIVE_SLICE) {
            DriveStep::Pending => co.pause_point().await,
            DriveStep::Found(plan) => return DriveEnd::Found(plan),
            DriveStep::Failed(_) => return DriveEnd::Failed,
        }
    }
}
