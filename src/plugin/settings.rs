//! The plugin's settings resource.

use std::time::Duration;

use bevy::prelude::*;

use crate::core::SearchConfig;

/// Where searches run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkerMode {
    /// On the main thread, resumable: each frame advances searches within the expansion and time
    /// budgets and continues unfinished ones next frame.
    Inline,
    /// On Bevy's `AsyncComputeTaskPool`, against an immutable snapshot of the grid; results come
    /// back over a channel drained every frame. A worker search yields its thread every 200 us,
    /// so on machines with few cores the frame's own threads never wait long for a core.
    Async {
        /// At most this many searches in flight at once.
        max_in_flight: usize,
    },
}

/// Settings of [`TilepathPlugin`](crate::TilepathPlugin). Added with `init_resource`, so values
/// you insert before adding the plugin win.
#[derive(Resource, Clone, Debug)]
pub struct TilepathSettings {
    /// Searches started per frame at most (Lester: "never search for more than a few units at a
    /// time").
    pub searches_per_frame: usize,
    /// Inline mode: searches in progress at once (each holds scratch memory the size of the grid;
    /// the frame's budget goes round them in slices).
    pub max_inline_searches: usize,
    /// Node expansions per frame on the main thread (inline mode).
    pub expansion_budget: u32,
    /// Wall time per frame for the plugin's main-thread work (queue servicing and result
    /// handling); work left over continues next frame.
    pub time_budget: Duration,
    /// Inline or on worker threads.
    pub workers: WorkerMode,
    /// Heuristic, weight and expansion limit of every search; the goal policy comes from each
    /// [`PathRequest`](crate::PathRequest).
    pub search: SearchConfig,
    /// A waiting request gains one priority point per this many frames, so nothing starves.
    pub ageing_frames: u32,
    /// Smooth found paths (Pinter's post-process): on by default.
    pub smoothing: bool,
    /// Extra cost, in tiles, of stepping onto a cell claimed by another unit near the searcher
    /// (Lester's claimed nodes: groups spread out; claimed cells never become unwalkable).
    pub claim_penalty: f32,
    /// Only claims of units within this many tiles of the searcher count (Lester: "only units
    /// near the searcher").
    pub claim_radius: f32,
    /// Keep the cells expanded by recent inline searches in
    /// [`TilepathFrameStats::recent_expanded`](crate::TilepathFrameStats) (debug overlay; costs a
    /// scan of the grid per search).
    pub record_expanded: bool,
    /// Cells of stopped units within [`TilepathSettings::claim_radius`] are treated as blocked.
    pub avoid_stopped_units: bool,
}

impl Default for TilepathSettings {
    fn default() -> Self {
        TilepathSettings {
            searches_per_frame: 16,
            max_inline_searches: 2,
            expansion_budget: 50_000,
            time_budget: Duration::from_micros(2000),
            workers: WorkerMode::Inline,
            search: SearchConfig::default(),
            ageing_frames: 10,
            smoothing: true,
            claim_penalty: 3.0,
            claim_radius: 8.0,
            avoid_stopped_units: true,
            record_expanded: false,
        }
    }
}
