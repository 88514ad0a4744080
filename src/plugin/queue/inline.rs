//! Inline searches: resumable on the main thread, advanced a slice at a time within the frame's
//! budget, then smoothed a line check at a time.

use bevy::prelude::*;

use crate::core::{
    AStar, Cell, HierarchicalSearch, NavGrid, Path, PathError, RegionMap, SearchConfig, SearchStep,
    Smoother,
};
use crate::plugin::outcomes::SearchKind;

use super::job::{Job, Overlay, SearchResult, begin, begin_any};
use super::refine::with_raw_rest;

/// Heap pops per slice of an inline search.
pub(super) const SLICE: u32 = 256;

/// An inline search in progress.
pub(super) struct InlineJob {
    pub(super) job: Job,
    pub(super) search: Box<AStar>,
    pub(super) radius: f32,
    /// The overlay, kept for the second attempt (see [`Overlay::soften`]).
    overlay: Overlay,
    start: Cell,
    /// The search through the region map, if the job took one (it steps in `search`).
    hierarchical: Option<HierarchicalSearch>,
    /// Expansions of a hierarchical search given up for a flat one.
    spent: u64,
}

/// What one slice of an inline search came to.
pub(super) enum Slice {
    /// Not done: resume it later.
    Pending,
    /// Started again with stopped units as a penalty (see [`Overlay::soften`]): step it again
    /// now.
    Restarted,
    /// Done, with a path or a failure.
    Done(Result<Path, PathError>),
}

impl InlineJob {
    /// Begins `job`'s search from `start` in `search` (through `regions` if given: see
    /// [`begin_any`]); the search comes back on failure.
    #[allow(clippy::result_large_err, clippy::too_many_arguments)]
    pub(super) fn begin(
        mut search: Box<AStar>,
        grid: &NavGrid,
        regions: Option<&RegionMap>,
        job: Job,
        start: Cell,
        radius: f32,
        overlay: Overlay,
        config: &SearchConfig,
    ) -> Result<Self, (Job, Box<AStar>, PathError)> {
        match begin_any(&mut search, grid, regions, start, &job, config, &overlay) {
            Ok(hierarchical) => Ok(InlineJob {
                job,
                search,
                radius,
                overlay,
                start,
                hierarchical,
                spent: 0,
            }),
            Err(e) => Err((job, search, e)),
        }
    }

    /// Expansions made so far.
    pub(super) fn expansions(&self) -> u64 {
        self.spent
            + self
                .hierarchical
                .as_ref()
                .map_or_else(|| self.search.expansions(), |h| h.expansions())
    }

    /// Of those, the ones standing for a jump point search's scanned cells
    /// ([`AStar::scan_expansions`](crate::core::AStar::scan_expansions); none while a region
    /// map's route and legs run).
    pub(super) fn scan_expansions(&self) -> u64 {
        match self.hierarchical {
            Some(_) => 0,
            None => self.search.scan_expansions(),
        }
    }

    /// Heap pops of its route through the region map, if it took one.
    pub(super) fn route_pops(&self) -> u64 {
        self.hierarchical.as_ref().map_or(0, |h| h.route_pops())
    }

    /// Which search it is.
    pub(super) fn kind(&self) -> SearchKind {
        match self.hierarchical {
            Some(_) => SearchKind::Hierarchical,
            None if self.search.used_jump_points() => SearchKind::JumpPoints,
            None => SearchKind::Own,
        }
    }

    /// Advances the search by at most `max_pops` heap pops. A hierarchical search that fails
    /// (a leg blocked by the overlay, or a grid edit) gives way to a flat one; a flat search
    /// that finds no path around stopped units starts again with them as a penalty (once).
    pub(super) fn slice(&mut self, grid: &NavGrid, max_pops: u32, config: &SearchConfig) -> Slice {
        if let Some(h) = &mut self.hierarchical {
            match h.step(grid, &mut self.search, max_pops) {
                SearchStep::Pending => return Slice::Pending,
                SearchStep::Found(p) => return Slice::Done(Ok(p)),
                SearchStep::Failed(_) => {
                    self.spent += h.expansions();
                    self.hierarchical = None;
                    let overlay = &self.overlay;
                    return match begin(
                        &mut self.search,
                        grid,
                        self.start,
                        &self.job,
                        config,
                        overlay,
                    ) {
                        Ok(()) => Slice::Restarted,
                        Err(e) => Slice::Done(Err(e)),
                    };
                }
            }
        }
        match self.search.step(grid, max_pops) {
            SearchStep::Pending => Slice::Pending,
            // No way round the blocks, or none short enough: again with them priced.
            SearchStep::Failed(PathError::NoPath | PathError::LimitExceeded { .. })
                if let Some(soft) = self.overlay.soften() =>
            {
                self.restart_with(grid, config, soft)
            }
            SearchStep::Found(p) => Slice::Done(Ok(p)),
            SearchStep::Failed(e) => Slice::Done(Err(e)),
        }
    }

    /// Starts the search again with `soft`, the overlay's fallback.
    fn restart_with(&mut self, grid: &NavGrid, config: &SearchConfig, soft: Overlay) -> Slice {
        let begun = begin(&mut self.search, grid, self.start, &self.job, config, &soft);
        self.overlay = soft;
        match begun {
            Ok(()) => Slice::Restarted,
            Err(e) => Slice::Done(Err(e)),
        }
    }
}

/// A found path being smoothed inline, a line check at a time.
pub(super) struct Smoothing {
    pub(super) result: SearchResult,
    smoother: Smoother,
    radius: f32,
}

impl Smoothing {
    /// Smoothing of the path of `result` (which must be found) up to a waypoint at or past its
    /// `first` step, for a body of `radius` (the rest is smoothed after delivery: see `refine`).
    pub(super) fn new(grid: &NavGrid, result: SearchResult, radius: f32, first: usize) -> Self {
        let cells = result
            .result
            .as_ref()
            .map_or(&[][..], |p| p.cells.as_slice());
        let smoother = Smoother::leading(grid, cells, radius, first);
        Smoothing {
            result,
            smoother,
            radius,
        }
    }

    /// One line check; the first leg's waypoints once it is smoothed.
    pub(super) fn step(&mut self, grid: &NavGrid) -> Option<Vec<Vec2>> {
        self.smoother.step(grid, 1)
    }

    /// Cells looked at so far ([`Smoother::work`]).
    pub(super) fn work(&self) -> u64 {
        self.smoother.work()
    }

    /// The result with the first leg's `points` and the rest's cell centers.
    pub(super) fn finish(self, grid: &NavGrid, points: Vec<Vec2>) -> SearchResult {
        let mut done = self.result;
        if let Ok(p) = &done.result {
            (done.smoothed, done.rest) = with_raw_rest(grid, &p.cells, points, self.radius);
        }
        done
    }
}
