//! Service: start at most `searches_per_frame` searches a frame (the start policy picks which),
//! inline or on workers, and advance inline searches and their smoothing within the frame's
//! budget.

use std::time::Duration;

use bevy::prelude::*;

use crate::plugin::agent::NavAgent;
use crate::plugin::claims::Claims;
use crate::plugin::diagnostics::{FrameTally, Phase, PhaseTimer, TilepathFrameStats};
use crate::plugin::map::NavMap;
use crate::plugin::request::{PathFailure, PathStatus, PendingRequests};
use crate::plugin::settings::{TilepathSettings, WorkerMode};

use super::PathQueue;
use super::inline::{InlineJob, SLICE, Slice, Smoothing};
use super::job::{Job, Overlay, SearchResult};
use super::policy::{aged_priority, take_starts};
use super::validate::unit_cell;
use super::workers::WorkerSearch;

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

/// Starts waiting searches (the service system's borrowed parameters).
struct Starter<'a, 'w, 's, 'sw, 'ss> {
    settings: &'a TilepathSettings,
    claims: &'a Claims,
    maps: &'a Query<'w, 's, &'static NavMap>,
    units: &'a Query<'w, 's, (&'static Transform, Option<&'static NavAgent>)>,
    statuses: &'a mut Query<'sw, 'ss, &'static mut PathStatus>,
}

impl Starter<'_, '_, '_, '_, '_> {
    /// Starts up to `slots` searches (never more than `searches_per_frame` in a frame): highest
    /// aged priority first, FIFO among equals. Inline searches begin here; worker searches are
    /// spawned on the `AsyncComputeTaskPool`.
    fn start(
        &mut self,
        queue: &mut PathQueue,
        book: &mut PendingRequests,
        tally: &mut FrameTally,
        slots: usize,
    ) {
        let settings = self.settings;
        let (frame, ageing) = (book.frame, settings.ageing_frames);
        let capacity = slots.min(
            settings
                .searches_per_frame
                .saturating_sub(tally.started as usize),
        );
        let starting = take_starts(&mut queue.waiting, capacity, |j: &Job| {
            (
                aged_priority(j.priority, j.enqueued, frame, ageing),
                j.ticket,
            )
        });
        for job in starting {
            tally.started += 1;
            let Ok(map) = self.maps.get(job.map) else {
                queue.fail(book, job.entity, job.ticket, PathFailure::NoMap);
                continue;
            };
            let Ok((transform, agent)) = self.units.get(job.entity) else {
                // Despawned meanwhile (its request was forgotten) or without a place.
                queue.fail(book, job.entity, job.ticket, PathFailure::StartOutOfBounds);
                continue;
            };
            let Some(start) = unit_cell(map, transform) else {
                queue.fail(book, job.entity, job.ticket, PathFailure::StartOutOfBounds);
                continue;
            };
            let radius = agent.map_or(0.0, |a| a.radius);
            let overlay = Overlay::new(self.claims, settings, job.map, map, job.entity, start);
            if let Ok(mut s) = self.statuses.get_mut(job.entity) {
                *s = PathStatus::Searching;
            }
            match settings.workers {
                WorkerMode::Inline => {
                    let search = queue.pool.pop().unwrap_or_default();
                    let grid = map.grid();
                    match InlineJob::begin(
                        search,
                        grid,
                        job,
                        start,
                        radius,
                        overlay,
                        &settings.search,
                    ) {
                        Ok(inline) => queue.inline.push(inline),
                        Err((job, search, e)) => {
                            queue.fail(book, job.entity, job.ticket, e.into());
                            queue.pool.push(search);
                        }
                    }
                }
                WorkerMode::Async { .. } => queue.workers.spawn(
                    job,
                    WorkerSearch {
                        grid: map.snapshot(),
                        start,
                        config: settings.search,
                        overlay,
                        smoothing: settings.smoothing,
                        radius,
                    },
                ),
            }
        }
    }
}

/// Service: start at most `searches_per_frame` searches (highest aged priority first, FIFO among
/// equals) and advance inline searches within the frame's budgets.
#[allow(clippy::too_many_arguments)]
pub(crate) fn service_queue(
    mut queue: ResMut<PathQueue>,
    mut book: ResMut<PendingRequests>,
    tally: ResMut<FrameTally>,
    mut stats: ResMut<TilepathFrameStats>,
    settings: Res<TilepathSettings>,
    claims: Res<Claims>,
    maps: Query<&'static NavMap>,
    units: Query<(&'static Transform, Option<&'static NavAgent>)>,
    mut statuses: Query<&'static mut PathStatus>,
) {
    let mut tally = PhaseTimer::start(tally, Phase::Service);
    // Room is left for the receive phase (as long as it took last frame, at most a quarter of the
    // budget), so the frame as a whole stays within the budget.
    let reserve = stats.phases[Phase::Receive as usize].min(settings.time_budget / 4);
    let budget = settings
        .time_budget
        .saturating_sub(tally.main_thread)
        .saturating_sub(reserve);
    let queue = &mut *queue;
    let book = &mut *book;

    // Drop waiting jobs that were cancelled, replaced or despawned.
    if std::mem::take(&mut book.stale) {
        queue
            .waiting
            .retain(|j| book.is_current(j.entity, j.ticket));
    }

    // Start searches: as many as there are free slots (inline searches in progress, or worker
    // searches in flight), at most `searches_per_frame` per frame.
    let max_inline = settings.max_inline_searches.max(1);
    let slots = match settings.workers {
        WorkerMode::Inline => max_inline.saturating_sub(queue.inline.len()),
        WorkerMode::Async { max_in_flight } => {
            max_in_flight.saturating_sub(queue.workers.in_flight)
        }
    };
    let mut starter = Starter {
        settings: &settings,
        claims: &claims,
        maps: &maps,
        units: &units,
        statuses: &mut statuses,
    };
    starter.start(queue, book, &mut tally, slots);

    // Advance inline searches round-robin in slices, and smooth finished ones a line check at a
    // time, until a budget runs out.
    let mut expansions_left = settings.expansion_budget as u64;
    let mut k = 0;
    // A step begins only if one as long as the longest so far this frame still fits.
    let (mut longest, mut last) = (Duration::ZERO, tally.elapsed());
    loop {
        let elapsed = tally.elapsed();
        longest = longest.max(elapsed - last);
        last = elapsed;
        if elapsed + longest >= budget {
            break;
        }
        if !queue.to_smooth.is_empty() {
            smooth_step(queue, book, &maps);
            continue;
        }
        // A slot freed up: start the next waiting search, within this frame's start limit.
        if settings.workers == WorkerMode::Inline
            && queue.inline.len() < max_inline
            && !queue.waiting.is_empty()
            && (tally.started as usize) < settings.searches_per_frame
        {
            starter.start(queue, book, &mut tally, max_inline - queue.inline.len());
            continue;
        }
        if queue.inline.is_empty() || expansions_left == 0 {
            break;
        }
        if k >= queue.inline.len() {
            k = 0;
        }
        let mut ctx = Slicing {
            settings: &settings,
            maps: &maps,
            tally: &mut tally,
            stats: &mut stats,
            expansions_left: &mut expansions_left,
        };
        if ctx.slice(queue, book, k) {
            k += 1;
        }
    }
}

/// One line check of the inline smoothing last begun; a smoothed path becomes a result.
fn smooth_step(queue: &mut PathQueue, book: &mut PendingRequests, maps: &Query<&'static NavMap>) {
    let Some(next) = queue.to_smooth.last_mut() else {
        return;
    };
    let Ok(map) = maps.get(next.result.job.map) else {
        let job = queue.to_smooth.pop().expect("checked").result.job;
        queue.fail(book, job.entity, job.ticket, PathFailure::NoMap);
        return;
    };
    if let Some(points) = next.step(map.grid()) {
        let mut done = queue.to_smooth.pop().expect("checked").result;
        done.smoothed = points;
        queue.results.push(done);
    }
}

/// What slicing inline searches needs from the service system.
struct Slicing<'a, 'w, 's> {
    settings: &'a TilepathSettings,
    maps: &'a Query<'w, 's, &'static NavMap>,
    tally: &'a mut FrameTally,
    stats: &'a mut TilepathFrameStats,
    expansions_left: &'a mut u64,
}

impl Slicing<'_, '_, '_> {
    /// Advances inline search `k` by one slice; a finished search leaves for smoothing or the
    /// results. Returns whether the round-robin moves on to the next search (`false` when this
    /// one left the list, or restarted and goes on now).
    fn slice(&mut self, queue: &mut PathQueue, book: &mut PendingRequests, k: usize) -> bool {
        let job = &mut queue.inline[k];
        if !book.is_current(job.job.entity, job.job.ticket) {
            let done = queue.inline.swap_remove(k);
            queue.pool.push(done.search);
            return false;
        }
        let Ok(map) = self.maps.get(job.job.map) else {
            let done = queue.inline.swap_remove(k);
            queue.fail(book, done.job.entity, done.job.ticket, PathFailure::NoMap);
            queue.pool.push(done.search);
            return false;
        };
        let grid = map.grid();
        let before = job.search.expansions();
        let slice = SLICE.min((*self.expansions_left).min(u32::MAX as u64) as u32);
        let step = job.slice(grid, slice, &self.settings.search);
        let done_exp = job.search.expansions().saturating_sub(before);
        *self.expansions_left = self.expansions_left.saturating_sub(done_exp.max(1));
        self.tally.expansions += done_exp;
        let result = match step {
            Slice::Pending => return true,
            Slice::Restarted => return false,
            Slice::Done(result) => result,
        };
        let done = queue.inline.swap_remove(k);
        if self.settings.record_expanded {
            let recent = &mut self.stats.recent_expanded;
            if recent.len() >= 8 {
                recent.remove(0);
            }
            recent.push((done.job.map, done.search.closed_cells(grid)));
        }
        let found = result.is_ok();
        let result = SearchResult {
            job: done.job,
            version: grid.version(),
            result,
            smoothed: Vec::new(),
            worker: false,
        };
        if self.settings.smoothing && found {
            queue.to_smooth.push(Smoothing::new(result, done.radius));
        } else {
            queue.results.push(result);
        }
        queue.pool.push(done.search);
        false
    }
}
