//! [`PathQueue`]: the queue of validated requests and of searches in progress, and what the
//! rest of the plugin reads of it.

use std::time::Duration;

use bevy::prelude::*;

use crate::core::AStar;

use super::super::classes::ClassId;
use super::super::diagnostics::Cost;
use super::super::outcomes::{NavPath, OutcomeKind};
use super::super::request::{PathFailure, PendingRequests, Ticket};
use super::inline::{InlineJob, Smoothing};
use super::job::SearchResult;
use super::refine::Rest;
use super::refine::{self, Refined, Rests};
use super::regions;
use super::shared::{SharedSearch, TreeCache};
use super::waiting;
use super::workers::WorkerChannel;

/// The queue of validated requests and of searches in progress.
#[derive(Resource, Default)]
pub struct PathQueue {
    pub(super) waiting: waiting::WaitingList,
    pub(super) inline: Vec<InlineJob>,
    /// Shared searches in progress inline (see `shared`).
    pub(super) shared: Vec<SharedSearch>,
    /// Finished shared searches kept for later requests to the same goal.
    pub(super) trees: TreeCache,
    /// Searches kept for reuse (boxed so moving them in and out of jobs stays cheap).
    #[allow(clippy::vec_box)]
    pub(super) pool: Vec<Box<AStar>>,
    pub(super) workers: WorkerChannel,
    /// Finished searches to deliver.
    pub(super) results: Vec<SearchResult>,
    /// Inline searches that found a path, being smoothed.
    pub(super) to_smooth: Vec<Smoothing>,
    /// Outcomes ready to be delivered.
    pub(super) ready: Vec<Ready>,
    /// Delivered paths whose rest is being smoothed inline (see `refine`).
    pub(super) refining: Rests,
    /// Smoothed rests to patch into their paths.
    pub(super) refined: Vec<Refined>,
    /// Frames the oldest request without an outcome had waited at the end of the last frame
    /// (late rests wait while the queue is behind: see `refine::BEHIND_FRAMES`).
    pub(super) oldest_wait: u32,
    /// Units whose paths had a rest patched in this tick (a patch does not mark the path
    /// changed): the checksum hashes their paths again. Emptied every tick by the checksum.
    pub(crate) patched: bevy::ecs::entity::EntityHashSet,
    /// The maps' region maps, for long requests.
    pub(super) regions: regions::Regions,
}

impl PathQueue {
    /// Validated requests waiting for a search to start.
    pub fn waiting_len(&self) -> usize {
        self.waiting.len()
    }

    /// Searches running: inline searches in progress (shared ones count once) and searches a
    /// worker runs (with their smoothing; not those handed off and waiting for a worker).
    pub fn searching(&self) -> usize {
        self.inline.len() + self.shared.len() + self.workers.running()
    }

    /// Finished shared searches kept for later requests to the same goal
    /// ([`TilepathSettings::tree_cache`](crate::TilepathSettings::tree_cache)).
    pub fn cached_trees(&self) -> usize {
        self.trees.len()
    }

    /// Found paths being smoothed inline before delivery (their first leg).
    pub fn smoothing(&self) -> usize {
        self.to_smooth.len()
    }

    /// Delivered paths whose rest is still being smoothed inline.
    pub fn refining(&self) -> usize {
        self.refining.len()
    }

    /// The region map of `map` used by long requests, once it is built
    /// ([`TilepathSettings::hierarchical_beyond`](crate::TilepathSettings::hierarchical_beyond)); after an edit it is brought up to date in
    /// the next frame's collect phase.
    pub fn region_map(&self, map: Entity) -> Option<&crate::core::RegionMap> {
        self.regions.ready(map, ClassId::DEFAULT)
    }

    /// The requests whose outcome is ready but not delivered yet (taken from
    /// [`PendingRequests`]), with whether they end as cancelled: a saved game keeps them.
    pub(crate) fn owed_ready(&self) -> impl Iterator<Item = (Entity, &Ticket, bool)> {
        let ready = self.ready.iter();
        ready.map(|r| (r.entity, &r.ticket, r.kind == OutcomeKind::Cancelled))
    }

    /// The rests of units' paths still to smooth: `(unit, (from_cell, from_waypoint,
    /// radius))`.
    pub(crate) fn rests(&self) -> impl Iterator<Item = (Entity, (usize, usize, f32))> + '_ {
        self.refining
            .live_rests()
            .map(|(e, r)| (e, (r.from_cell, r.from_waypoint, r.radius)))
    }

    /// The rest of `path` from cell `from_cell` (waypoint `from_waypoint`) on is still to smooth
    /// (a loaded game's path); ignored if it does not fit the path.
    pub(crate) fn restore_rest(
        &mut self,
        entity: Entity,
        path: &NavPath,
        (from_cell, from_waypoint, radius): (usize, usize, f32),
        frame: u64,
    ) {
        let fits = from_cell + 1 < path.cells.len()
            && from_waypoint < path.waypoints.len()
            && radius.is_finite()
            && radius >= 0.0;
        if !fits {
            return;
        }
        let rest = refine::Rest {
            from_cell,
            from_waypoint,
            radius,
        };
        let refining = refine::Refining::new(entity, path, rest, (frame, frame));
        self.refining.delivered(entity, path.ticket, Some(refining));
    }

    /// Outcomes waiting for delivery (delivery has a budget too).
    pub fn ready_len(&self) -> usize {
        self.ready.len() + self.results.len()
    }

    /// What delivering the outcomes waiting costs at nominal rates (judging the results, then
    /// delivering every outcome), up to `cap`: the sum stops there, so a frame with thousands
    /// of outcomes waiting looks at a few hundred (each costs a microsecond at least).
    pub(crate) fn delivery_cost(&self, cap: Duration) -> Duration {
        let cells = |p: Option<&NavPath>| p.map_or(0, |p| p.cells.len() as u64);
        let ready = self
            .ready
            .iter()
            .map(|r| Cost::Outcome(cells(r.path.as_ref())));
        let results = self.results.iter().flat_map(|r| {
            let n = r.result.as_ref().map_or(0, |p| p.cells.len() as u64);
            [Cost::Deliver(n), Cost::Outcome(n)]
        });
        let mut sum = Duration::ZERO;
        for cost in ready.chain(results) {
            sum += cost.nominal();
            if sum >= cap {
                return cap;
            }
        }
        sum
    }

    /// The queue's contents for [`NavChecksum`](crate::NavChecksum): each waiting or running
    /// job's unit with its ticket and priority (in the queue's order), each shared search's goal
    /// and class, then the counts of searches in flight, smoothing, outcomes waiting and rests;
    /// what is not a unit's goes under `Entity::PLACEHOLDER` (a map's entity number may differ
    /// between clients whose simulations agree).
    pub(crate) fn hash_into(&self, mut word: impl FnMut(Entity, [u64; 2])) {
        for j in self.waiting.iter() {
            word(j.entity, [j.ticket, j.priority as u64 ^ (j.enqueued << 32)]);
        }
        for i in &self.inline {
            word(i.job.entity, [i.job.ticket, i.expansions()]);
        }
        for s in &self.shared {
            let at = (s.goal.x as u32 as u64) << 32 | s.goal.y as u32 as u64;
            word(Entity::PLACEHOLDER, [at, u64::from(s.class.0)]);
        }
        let counts = [
            self.workers.in_flight(),
            self.to_smooth.len(),
            self.results.len() + self.ready.len(),
            self.refining.len(),
            self.refined.len(),
            self.trees.len(),
        ];
        for pair in counts.chunks(2) {
            word(Entity::PLACEHOLDER, [pair[0] as u64, pair[1] as u64]);
        }
    }

    /// Drops the outcomes waiting for delivery to `entity` (a unit despawned); how many.
    pub(crate) fn forget_ready(&mut self, entity: Entity) -> usize {
        let before = self.ready.len();
        self.ready.retain(|r| r.entity != entity);
        before - self.ready.len()
    }

    /// `entity`'s pending request failed with `failure`.
    pub(super) fn fail(
        &mut self,
        book: &mut PendingRequests,
        entity: Entity,
        ticket: u64,
        failure: PathFailure,
    ) {
        if let Some(ticket) = book.take(entity, ticket) {
            let kind = OutcomeKind::Failed(failure);
            self.ready
                .push(Ready::new((entity, ticket), kind, None, None));
        }
    }
}

/// An outcome ready to be delivered.
pub(super) struct Ready {
    pub(super) entity: Entity,
    pub(super) ticket: Ticket,
    pub(super) kind: OutcomeKind,
    pub(super) path: Option<NavPath>,
    /// The part of the path still to smooth.
    pub(super) rest: Option<Rest>,
    /// A vehicle's found path given to it already: its outcome waits for the plan of legal
    /// turns it drives the path by (see `delivery::drive_of`).
    pub(super) given: bool,
}

impl Ready {
    /// `entity`'s outcome `kind` for `ticket`, with its path and the part still to smooth.
    pub(super) fn new(
        (entity, ticket): (Entity, Ticket),
        kind: OutcomeKind,
        path: Option<NavPath>,
        rest: Option<Rest>,
    ) -> Ready {
        Ready {
            entity,
            ticket,
            kind,
            path,
            rest,
            given: false,
        }
    }
}
