//! The time-sliced path queue: requests are validated (`validate`), wait in a list from which
//! a few start per frame (`policy`, `service`), advance inline within a per-frame budget and
//! resume next frame (`inline`) or run on `AsyncComputeTaskPool` and report back over a
//! `crossbeam-channel` (`workers`), and end in exactly one outcome (`delivery`). Paths that a
//! grid edit crosses are searched again (`repath`). Long requests search a region map first
//! (`regions`, kept current after edits).

mod delivery;
mod inline;
mod job;
mod policy;
mod refine;
mod regions;
mod repath;
mod service;
mod shared;
mod validate;
mod waiting;
mod workers;

use std::time::Duration;

use bevy::prelude::*;

use crate::core::AStar;

use super::agent::NavAgent;
use super::claims::{Claims, Intent};
use super::classes::{ClassId, NavClasses, PlayerId};
use super::diagnostics::{Cost, FrameTally, TilepathFrameStats, roll_frame};
use super::fog::{FogStats, Sight};
use super::outcomes::{NavPath, OutcomeKind, PathOutcome, SearchKind};
use super::request::{
    PathFailure, PathGoal, PathOrigin, PathRequest, PathStatus, PendingRequests, Ticket,
};
use super::schedule::{TilepathSchedule, TilepathSystems};
use super::settings::{CrowdSettings, FogSettings, TilepathSettings, WorkerMode};

use delivery::Ready;
use inline::{InlineJob, Smoothing};
use job::SearchResult;
use refine::{Refined, Rests};
use shared::{SharedSearch, TreeCache};
use workers::WorkerChannel;

/// The queue of validated requests and of searches in progress.
#[derive(Resource, Default)]
pub struct PathQueue {
    waiting: waiting::WaitingList,
    inline: Vec<InlineJob>,
    /// Shared searches in progress inline (see `shared`).
    shared: Vec<SharedSearch>,
    /// Finished shared searches kept for later requests to the same goal.
    trees: TreeCache,
    /// Searches kept for reuse (boxed so moving them in and out of jobs stays cheap).
    #[allow(clippy::vec_box)]
    pool: Vec<Box<AStar>>,
    workers: WorkerChannel,
    /// Finished searches to deliver.
    results: Vec<SearchResult>,
    /// Inline searches that found a path, being smoothed.
    to_smooth: Vec<Smoothing>,
    /// Outcomes ready to be delivered.
    ready: Vec<Ready>,
    /// Delivered paths whose rest is being smoothed inline (see `refine`).
    refining: Rests,
    /// Smoothed rests to patch into their paths.
    refined: Vec<Refined>,
    /// Frames the oldest request without an outcome had waited at the end of the last frame
    /// (late rests wait while the queue is behind: see `refine::BEHIND_FRAMES`).
    oldest_wait: u32,
    /// Units whose paths had a rest patched in this tick (a patch does not mark the path
    /// changed): the checksum hashes their paths again. Emptied every tick by the checksum.
    pub(crate) patched: bevy::ecs::entity::EntityHashSet,
    /// The maps' region maps, for long requests.
    regions: regions::Regions,
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
    /// ([`TilepathSettings::tree_cache`]).
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
    /// ([`TilepathSettings::hierarchical_beyond`]); after an edit it is brought up to date in
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
    fn fail(
        &mut self,
        book: &mut PendingRequests,
        entity: Entity,
        ticket: u64,
        failure: PathFailure,
    ) {
        if let Some(ticket) = book.take(entity, ticket) {
            self.ready.push(Ready {
                entity,
                ticket,
                kind: OutcomeKind::Failed(failure),
                path: None,
                rest: None,
            });
        }
    }
}

/// The queue: [`PathRequest`]s become searches (inline or on workers) and end in
/// [`PathOutcome`]s and [`NavPath`]s. The one plugin a game must have; part of
/// [`TilepathPlugins`](crate::TilepathPlugins).
#[derive(Default)]
pub struct PathQueuePlugin {
    /// The schedule of the plugin group.
    pub schedule: TilepathSchedule,
}

impl Plugin for PathQueuePlugin {
    fn build(&self, app: &mut App) {
        let schedule = self.schedule.configure(app);
        app.init_resource::<TilepathSettings>()
            .init_resource::<PathQueue>()
            .init_resource::<PendingRequests>()
            .init_resource::<Claims>()
            .init_resource::<crate::plugin::traffic::PassageTraffic>()
            .init_resource::<crate::plugin::pursuit::Anchors>()
            .init_resource::<NavClasses>()
            .init_resource::<FogStats>()
            .init_resource::<FrameTally>()
            .init_resource::<TilepathFrameStats>()
            .init_resource::<crate::plugin::lockstep::NavChecksum>()
            .add_message::<PathOutcome>()
            .register_type::<TilepathSettings>()
            .register_type::<CrowdSettings>()
            .register_type::<WorkerMode>()
            .register_type::<TilepathFrameStats>()
            .register_type::<PathRequest>()
            .register_type::<PathGoal>()
            .register_type::<PathOrigin>()
            .register_type::<PathStatus>()
            .register_type::<PathFailure>()
            .register_type::<NavPath>()
            .register_type::<NavAgent>()
            .register_type::<ClassId>()
            .register_type::<PlayerId>()
            .register_type::<Sight>()
            .register_type::<FogStats>()
            .register_type::<FogSettings>()
            .register_type::<PathOutcome>()
            .register_type::<OutcomeKind>()
            .register_type::<SearchKind>()
            .register_type::<Intent>()
            .register_type::<crate::plugin::settings::Lockstep>()
            .register_type::<crate::plugin::lockstep::LockstepKey>()
            .register_type::<crate::plugin::lockstep::NavChecksum>()
            .register_type::<crate::plugin::classes::UnitClass>()
            .register_type::<crate::plugin::map::NavMap>()
            .register_type::<crate::plugin::saves::SavedNav>()
            .register_type::<crate::plugin::orders::OrderQueue>()
            .register_type::<crate::plugin::orders::HoldPosition>()
            .register_type::<crate::plugin::pursuit::Pursuit>()
            .add_systems(
                schedule,
                (
                    (
                        crate::plugin::saves::restore_saved,
                        crate::plugin::classes::resolve_classes,
                        crate::plugin::map::keep_jump_tables,
                        crate::plugin::fog::reveal_fog,
                        service::prepare_scratch,
                        regions::keep_regions,
                        repath::repath_on_change,
                        validate::collect_requests,
                    )
                        .chain()
                        .in_set(TilepathSystems::Collect),
                    (
                        crate::plugin::orders::advance_orders,
                        crate::plugin::pursuit::pursue,
                    )
                        .chain()
                        .in_set(TilepathSystems::First),
                    service::service_queue.in_set(TilepathSystems::Service),
                    (delivery::receive_results, refine::apply_refined, roll_frame)
                        .chain()
                        .in_set(TilepathSystems::Receive),
                    (crate::plugin::lockstep::update_checksum, next_frame)
                        .chain()
                        .in_set(TilepathSystems::Last),
                ),
            );
    }
}

/// End of the plugin's frame: advance the frame counter (latency and ageing count in it).
fn next_frame(mut book: ResMut<PendingRequests>) {
    book.frame += 1;
}
